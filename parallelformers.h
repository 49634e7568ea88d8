/* parallelformers.h: load Hugging Face transformer checkpoints and run them for inference and
   text generation, tensor-parallel over several devices with one host thread per device.

   Build: compile parallelformers.c with your sources (cc -O2 -c parallelformers.c; link -lpthread
   -lm). Add -DPF_CUDA and kernels.cu (nvcc; link cudart, cublas, nccl, stdc++) for the CUDA
   backend. Installed by make install: pkg-config --cflags --libs parallelformers.

   Threads: pf_parallelize, pf_to_cpu, pf_forward and the pf_generate calls may be made on one
   model from several threads at once: they run one after another. pf_free waits for those (and
   cancels them, see pf_free); the getters (pf_get_info, pf_num_ranks, pf_model_device,
   pf_model_dtype, pf_memory_allocated) must not overlap pf_parallelize or pf_to_cpu. A loaded
   tokenizer is read-only: any thread, any time. Calls on different models are independent. The
   library starts one thread per rank in pf_parallelize and stops them in pf_to_cpu / pf_free. It
   never prints, exits or aborts: every failure is a pf_result plus a message from
   pf_error_message(). */
#ifndef PARALLELFORMERS_H
#define PARALLELFORMERS_H

#include <stddef.h>
#include <stdint.h>

/* The version of this header, the one place it is written (the Makefile and CMakeLists.txt read
   it from here). A program linked against a shared library asks pf_get_build_info() for the
   library's own, which may differ. */
#define PF_VERSION_MAJOR 0
#define PF_VERSION_MINOR 2
#define PF_VERSION_PATCH 0
#define PF__STRINGIFY(x) #x
#define PF__VERSION_TEXT(major, minor, patch) PF__STRINGIFY(major) "." PF__STRINGIFY(minor) "." PF__STRINGIFY(patch)
#define PF_VERSION_STRING PF__VERSION_TEXT(PF_VERSION_MAJOR, PF_VERSION_MINOR, PF_VERSION_PATCH) /* "0.1.0" */

#ifdef __cplusplus
extern "C" {
#endif

typedef enum pf_result {
    PF_OK = 0,
    PF_ERROR_INVALID_ARGUMENT, /* a NULL pointer, an absurd option, a call in the wrong state */
    PF_ERROR_IO,               /* a file could not be opened, read or mapped */
    PF_ERROR_FORMAT,           /* a file is malformed: JSON, safetensors header, tensor shape */
    PF_ERROR_UNSUPPORTED,      /* a model type, dtype or option this build does not support */
    PF_ERROR_OUT_OF_MEMORY,    /* host or device allocation failed */
    PF_ERROR_DEVICE,           /* a backend (CUDA, cuBLAS, NCCL) call failed on some rank */
    PF_ERROR_BUFFER_TOO_SMALL, /* an output buffer is too small; the needed size is reported */
    PF_ERROR_BUSY,             /* too many generation requests are waiting on the model: try again;
                                  a registered policy is in use (pf_unregister_policy) */
    PF_ERROR_CANCELLED         /* pf_free began while the request waited or ran (a generation stops
                                  at its next token) */
} pf_result;

/* A constant English name for a result code. Any thread. */
const char *pf_result_string(pf_result result);

/* What the library was compiled with. */
typedef struct pf_build_info {
    int version_major, version_minor, version_patch; /* the library's PF_VERSION_* */
    int cuda;   /* the CUDA backend is compiled in (-DPF_CUDA); a GPU is looked for at pf_parallelize */
    int avx2;   /* the AVX2/FMA CPU kernels are compiled in; they run where the processor has them */
    int avx512; /* AVX-512 CPU kernels are compiled in */
    int amx;    /* AMX int8 tiles for Q8/Q4 prompts are compiled in (Linux, gcc 11 or clang 12 on); they run
                   where the processor has them and the kernel grants them */
} pf_build_info;

/* The library's version and features. Any thread. */
pf_build_info pf_get_build_info(void);

/* The width in bits of the vectors the CPU backend's matrix products use on this processor: 512
   (AVX-512 where a core runs 512-bit FMAs at full rate), 256 (AVX2 and FMA; AVX-512VL's 32
   registers where it has them), 128 (ARM64's NEON) or 0 (portable C). Any thread. */
int pf_cpu_vector_bits(void);

/* The same as one constant string: the version, then each feature with + (compiled in) or -
   (not), e.g. "0.1.0 +cuda +avx2 -avx512". Any thread. */
const char *pf_version_string(void);

typedef struct pf_model pf_model;
typedef struct pf_tokenizer pf_tokenizer;

/* How much a log line matters. */
typedef enum pf_log_level {
    PF_LOG_ERROR = 0, /* a request failed (the pf_result says so too) */
    PF_LOG_WARNING,   /* it works, but likely not as meant */
    PF_LOG_INFO,      /* what a user should know: "ranks outnumber key/value heads: replicated" */
    PF_LOG_DEBUG      /* details: the per-rank memory table */
} pf_log_level;

/* Receives each log line of a level up to the load options' log_level (the library never prints).
   Called from the thread of the call that logs (pf_load, pf_parallelize, ...). */
typedef void (*pf_log_callback)(void *user, pf_log_level level, const char *line);

/* Receives progress while weights are copied to the ranks: bytes done of an estimated total
   (done never exceeds it; the last call has done == total). Called on the caller's thread of
   pf_parallelize (or of the request that parallelizes implicitly), a few times a second. */
typedef void (*pf_progress_callback)(void *user, uint64_t done, uint64_t total);

/* ---- loading ---------------------------------------------------------------------------------- */

typedef struct pf_load_options {
    pf_log_callback log; /* NULL: no log lines */
    void *log_user;
    pf_log_level log_level; /* the least important level delivered; pf_load_options_init: INFO */
    pf_progress_callback progress; /* weight copying when the model is parallelized (unless the
                                      parallel options give their own); NULL: none */
    void *progress_user;
    int skip_tokenizer;  /* 1: do not load the tokenizer (ids only; pf_model_tokenizer is NULL) */
    int skip_generation_config; /* 1: do not read generation_config.json (token ids from config.json,
                                   generate defaults from pf_generate_options_init) */
} pf_load_options;

pf_load_options pf_load_options_init(void); /* the defaults described above; any thread */

/* Reads MODEL_DIR/config.json, picks the architecture for its model_type, memory-maps
   model.safetensors (or the shards named by model.safetensors.index.json) and checks every tensor
   the architecture needs. Also loads the tokenizer (tokenizer.json, or vocab.json + merges.txt)
   when present. Weights are not copied yet: the files stay mapped (and open) until pf_free, and
   pf_parallelize reads them. A file truncated or rewritten in place after pf_load makes the next
   split fail with PF_ERROR_IO (its size or modification time changed; a rewrite within the file
   system's timestamp granularity of the load, or during a split, is not seen); a file replaced
   by renaming another over it keeps its old contents for the model.
   Like sqlite3_open, *model is set even when loading fails (unless memory runs out), so that
   pf_error_message(*model) explains the failure; pf_free it in both cases. options may be NULL.
   Results: PF_ERROR_INVALID_ARGUMENT (NULL model or model_dir), PF_ERROR_IO (a file cannot be
   read), PF_ERROR_FORMAT (malformed JSON, safetensors, a missing or misshapen tensor),
   PF_ERROR_UNSUPPORTED (a model_type, config value, dtype or tensor we do not run: the message
   names it), PF_ERROR_OUT_OF_MEMORY. Any thread; the new model is the caller's. */
pf_result pf_load(const char *model_dir, const pf_load_options *options, pf_model **model);

/* Frees everything the model holds, stopping its rank threads. NULL is fine. Requests on other
   threads that take the model's request lock (pf_parallelize, pf_to_cpu, the forward, encode and
   generate calls) end first: the ones waiting or starting are refused and a running generation
   stops at its next token, all with PF_ERROR_CANCELLED; pf_free returns once they have. No call
   may start on the model after pf_free returns (its memory is gone), nor may pf_free be called
   from a stream callback of the same model. */
void pf_free(pf_model *model);

/* The detailed message of the calling thread's last failure on this model ("" if none): threads
   sharing a model each see their own. Valid until the thread's next call on the model. */
const char *pf_error_message(const pf_model *model);

/* Hyperparameters read from config.json, and the special token ids of config.json and
   generation_config.json (the latter's bos/pad/decoder start ids win; eos ids are joined). Any
   thread, after pf_load succeeded. */
/* What a model's output head computes (from config.json's "architectures": BertForMaskedLM, ...). */
typedef enum pf_head {
    PF_HEAD_NONE = 0,                /* the bare encoder (BertModel): hidden states (and the pooler's);
                                        the bare decoder (MistralModel: pf_encode, pf_embed) */
    PF_HEAD_CAUSAL_LM,               /* a decoder's next-token logits: pf_forward, pf_generate */
    PF_HEAD_MASKED_LM,               /* vocabulary logits for every token */
    PF_HEAD_SEQUENCE_CLASSIFICATION, /* num_labels logits per sequence, from the pooled output (a
                                        decoder's, LlamaForSequenceClassification: from the last
                                        token that is not pad_token_id, as transformers scores it) */
    PF_HEAD_TOKEN_CLASSIFICATION,    /* num_labels logits per token */
    PF_HEAD_QUESTION_ANSWERING,      /* 2 logits per token: answer start, answer end */
    PF_HEAD_IMAGE_CLASSIFICATION,    /* num_labels logits per image, from its class token (DeiT with
                                        teacher: the mean of the class and distillation tokens' heads) */
    PF_HEAD_CTC,                     /* a speech encoder's vocab_size logits per frame (Wav2Vec2ForCTC,
                                        HubertForCTC): pf_ctc_decode turns them into text */
    PF_HEAD_REPLACED_TOKEN_DETECTION, /* ELECTRA's discriminator (ElectraForPreTraining): 1 logit per
                                        token, above 0 where it judges the token replaced */
    PF_HEAD_MULTIPLE_CHOICE,         /* ...ForMultipleChoice: 1 logit per sequence, from the pooled
                                        output; give a question's choices as rows (each the context
                                        paired with one choice) and take the softmax over them */
    PF_HEAD_NEXT_SENTENCE,           /* BertForNextSentencePrediction: 2 logits per sequence (a pair),
                                        from the pooled output: the second text follows the first,
                                        then it does not */
    PF_HEAD_TABLE_QUESTION_ANSWERING /* TapasForQuestionAnswering (pf_encode_table): 1 logit per token,
                                        its cell's selection logit (the mean over the cell's tokens of
                                        (state . output_weights + output_bias) / temperature), 10000
                                        less outside the one column chosen (the column whose cells'
                                        mean column_output_weights logits are highest; never column 0,
                                        the question's), as transformers gives them without labels: a
                                        cell is selected where its logit is above 0; and, where the
                                        model has operators, each row's aggregation logits
                                        (pf_encoding.aggregation_logits) */
} pf_head;

typedef struct pf_model_info {
    const char *model_type;
    int is_encoder;                /* 1: bidirectional attention, run with pf_encode */
    int is_encoder_decoder;        /* 1: an encoder tower and a decoder attending to its output (T5,
                                      BART...): pf_generate's prompt is the source text, pf_encode
                                      gives the encoder's output, pf_forward_seq2seq the logits */
    int num_encoder_layers;        /* encoder-decoders: the encoder's blocks (num_layers counts both) */
    int image_size, patch_size, num_channels; /* image encoders (pf_encode_images); 0 otherwise */
    int region_dim;                /* vision-and-language encoders (pf_encode_regions): the features of
                                      an object region (VisualBERT's visual_embedding_dim, LXMERT's
                                      visual_feat_dim); 0 otherwise */
    int region_box_dim;            /* those that take each region's box too (pf_encode_region_boxes):
                                      its values (LXMERT's visual_pos_dim); 0 otherwise */
    int entity_vocab_size;         /* entity-aware encoders (pf_encode_entities): entity ids are 0 .. this - 1
                                      (LUKE's entity_vocab_size); 0 otherwise */
    int audio_stride;              /* speech encoders (pf_encode_audio): input samples per output frame
                                      (the convolutions' strides multiplied); 0 otherwise */
    int audio_min_samples;         /* speech encoders: the fewest samples that make one frame */
    int num_mel_bins;              /* speech encoder-decoders (pf_generate_audio): mel bins per feature
                                      frame; 0 otherwise */
    int mel_major;                 /* speech encoder-decoders: 1 when a row of features is
                                      [num_mel_bins][frames] (Whisper's log-mel), 0 when it is
                                      [frames][num_mel_bins] (Speech2Text's filter banks): the layout
                                      pf_audio_features gives for the model's feature extractor */
    int audio_frames;              /* speech encoder-decoders that take a fixed number of feature
                                      frames (Whisper: 2 * max_source_positions, 3000 for 30 s); 0: any */
    pf_head head;
    int num_labels;                /* classification heads' outputs (config.json's id2label) */
    int vocab_size, hidden_size, num_layers, num_heads, max_positions;
    int eos_token_id;              /* the first eos id; -1 when none is named */
    const int32_t *eos_token_ids;  /* every eos id: generation stops on any; owned by the model */
    int num_eos_token_ids;
    int bos_token_id, pad_token_id, decoder_start_token_id; /* -1 when not named */
} pf_model_info;

/* The model's facts; its pointers (model_type, eos_token_ids) belong to the model and live until
   pf_free. A model that failed to load (or NULL) gives zeros and -1 ids. Any thread. */
pf_model_info pf_get_info(const pf_model *model);

/* The name config.json's id2label gives label `label` of a classification head ("entailment",
   "POSITIVE"); NULL for a label out of range or a model without names. The string belongs to the
   model (until pf_free). Any thread. */
const char *pf_label_name(const pf_model *model, int label);

/* ---- custom policies -------------------------------------------------------------------------- */

/* An architecture that is not compiled in, registered at run time in the vocabulary of a
   policies.inc row (see the comment at its top for what each column means). Every trait is a
   name: an enumerator of policies.inc without its prefix, in lower case ("rms" for
   PF__NORM_RMS, "q_weight" for PF__SLOT_Q_WEIGHT, "head_columns" for PF__SPLIT_HEAD_COLUMNS),
   so a policy from C and one from JSON say the same thing in the same words. A name we do not
   have is refused with a message naming it and the names we do. */

/* A config row's fallback that means "config.json must have the key" (PF__NEEDED). */
#define PF_POLICY_NEEDED (-1e300)

/* PF_ARCH_CONFIG: a hyperparameter and the config.json key it is read from. Several rows for one
   field are aliases, tried in order. */
typedef struct pf_policy_config {
    const char *field;  /* a hyperparameter as policies.inc's PF_ARCH_CONFIG rows name it:
                           "hidden_size", "num_heads", "num_kv_heads", "num_layers", "vocab_size",
                           "max_positions", "intermediate_size", "norm_eps", "rope_theta", ... */
    const char *key;    /* config.json's key; NULL: the field is fixed to fallback */
    double fallback;    /* when the key is absent or null; PF_POLICY_NEEDED: the key must exist */
} pf_policy_config;

/* PF_ARCH_TENSOR (PF_ARCH_ENCODER_TENSOR with encoder = 1): where a tensor of the forward pass is
   in the checkpoint, and how ranks share it. */
typedef struct pf_policy_tensor {
    const char *slot;    /* "token_embed", "attn_norm_weight", "q_weight", "mlp_down_weight", ... */
    const char *pattern; /* its name after the prefix; a per-layer slot's has one "%d" (the layer;
                            without it the layers share one tensor, as ALBERT's), others none */
    const char *layout;  /* "out_in" (nn.Linear), "in_out" (Conv1D), "vector", "row", ...;
                            NULL: "out_in" */
    const char *split;   /* "none", "vocab", "qkv_columns", "head_columns", "kv_columns",
                            "mlp_columns", "head_rows", "mlp_rows"; NULL: "none". A slot takes
                            the layouts and splits some compiled-in row gives it. */
    const char *need;    /* "required", "optional", "if_attention_bias", "if_mlp_bias", ...;
                            NULL: "required" */
    int encoder;         /* 1: a block of an encoder-decoder's encoder tower */
} pf_policy_tensor;

/* PF_ARCH_REQUIRE (a config key implemented for this value only: any other is refused at load;
   "a.b" is key b of the object under key a) and PF_ARCH_NULL (a key whose explicit null means
   value, PF_POLICY_NEEDED: null is refused). */
typedef struct pf_policy_key_value {
    const char *key;
    double value;
} pf_policy_key_value;

/* PF_ARCH_LAYER_TYPES: a config key with each layer's attention kind ("full_attention",
   "sliding_attention", "global", "local"); rows are tried in order. */
typedef struct pf_policy_layer_types {
    const char *key;
    int needed; /* 1: a config with none of the keys is refused */
} pf_policy_layer_types;

/* PF_ARCH_ACTIVATION: the family's own table of activation names; with rows, no other name is
   accepted. */
typedef struct pf_policy_activation {
    const char *name;       /* as config.json writes it */
    const char *activation; /* what we compute: "gelu_tanh", "gelu_erf", "relu", "silu", "tanh" */
} pf_policy_activation;

/* A whole policy: the PF_ARCH row's traits, then its other rows. Zero fields take the defaults
   named; strings and arrays are read during the registration call only (the library keeps
   copies). */
typedef struct pf_policy {
    const char *model_type;         /* config.json's "model_type"; not one compiled in or registered */
    const char *kind;               /* "decoder" (NULL), "encoder", "seq2seq" */
    const char *norm;               /* "layer" (NULL: LayerNorm), "rms", "rms_plus_one" (gain 1 + w) */
    const char *positions;          /* "learned" (NULL), "rotary_halves", "rotary_pairs", "alibi",
                                       "sinusoidal", "relative" */
    const char *qkv_layout;         /* a fused QKV tensor's rows: "blocks" (NULL), "per_head", "codegen" */
    const char *mlp;                /* "plain" (NULL), "gated", "gated_if_named" */
    int mlp_ratio;                  /* MLP width / hidden when the config gives none; 0: 4 */
    const char *activation_key;     /* config.json's key naming the activation; NULL: none */
    const char *activation_default; /* an HF activation name ("silu", "gelu_new", ...); required */
    int tied_lm_head;               /* 1: the LM head is the token embedding unless config.json's
                                       tie_word_embeddings says otherwise */
    const char *const *prefixes;    /* tensor-name prefixes tried in order; none: "" */
    int num_prefixes;
    const pf_policy_config *config; /* hyperparameters */
    int num_config;
    const pf_policy_tensor *tensors; /* one row needs the slot "token_embed" (or "patch_weight") */
    int num_tensors;
    const char *const *buffers;     /* PF_ARCH_BUFFER: tensors the checkpoint may hold unread (a
                                       causal mask, rotary frequencies), "%d" the layer */
    int num_buffers;
    const pf_policy_key_value *required_values; /* PF_ARCH_REQUIRE rows */
    int num_required_values;
    const pf_policy_key_value *nulls;    /* PF_ARCH_NULL rows */
    int num_nulls;
    const pf_policy_layer_types *layer_types; /* PF_ARCH_LAYER_TYPES rows */
    int num_layer_types;
    const pf_policy_activation *activations; /* PF_ARCH_ACTIVATION rows */
    int num_activations;
} pf_policy;

/* Registers an architecture: pf_load then loads checkpoints whose config.json names its
   model_type, as it loads a compiled-in one. Each row is checked here: a name we do not have, a
   pattern with a '%' other than one "%d", a slot with a split no compiled-in row gives it, absurd numbers, ...
   are refused, the message naming the row and the value. Results: PF_ERROR_INVALID_ARGUMENT (a
   NULL policy, a model_type compiled in or registered already, a row it refuses),
   PF_ERROR_UNSUPPORTED (more than 128 registered at once), PF_ERROR_OUT_OF_MEMORY. On failure,
   when error/error_size are given, the message is written there. Any thread, at any time; models
   loaded already are not affected. */
pf_result pf_register_policy(const pf_policy *policy, char *error, size_t error_size);

/* The same from JSON text (len bytes; it need not end in NUL): an object whose keys are
   pf_policy's fields (without num_ ones; "prefixes", "buffers" lists of strings, the other
   tables lists of objects with their structs' keys; a config row without "fallback", a null row
   without "value", is PF_POLICY_NEEDED; "key": null fixes a config field), e.g.
     {"model_type": "my-llama", "norm": "rms", "positions": "rotary_halves", "mlp": "gated",
      "activation_key": "hidden_act", "activation_default": "silu",
      "config": [{"field": "hidden_size", "key": "hidden_size"}, ...],
      "tensors": [{"slot": "token_embed", "pattern": "embed.weight", "split": "vocab"}, ...]}
   Results: as pf_register_policy's, and PF_ERROR_FORMAT for malformed JSON, a key it does not
   know or a value of the wrong type (the message names it). Any thread. */
pf_result pf_register_policy_json(const char *json, size_t len, char *error, size_t error_size);

/* The same from a JSON file; PF_ERROR_IO when it cannot be read. Any thread. */
pf_result pf_register_policy_file(const char *path, char *error, size_t error_size);

/* A compiled-in (or alias, or registered) architecture's policy as the JSON that
   pf_register_policy_json reads: a starting point for one's own (change model_type and the
   names). Writes it NUL-terminated into json (capacity bytes); *length (may be NULL) is its
   length without the NUL. Results: PF_ERROR_INVALID_ARGUMENT (NULL model_type, or one not known),
   PF_ERROR_UNSUPPORTED (a two-tower model such as CLIP: its towers' model_types export; a speech
   model, whose front end is compiled in and registers in no policy),
   PF_ERROR_BUFFER_TOO_SMALL (*length says how much is needed; json(NULL, 0) asks),
   PF_ERROR_OUT_OF_MEMORY. Any thread. */
pf_result pf_policy_to_json(const char *model_type, char *json, size_t capacity, size_t *length);

/* Undoes a registration. Results: PF_ERROR_INVALID_ARGUMENT (NULL, or no registered policy has
   this model_type: compiled-in ones cannot be removed), PF_ERROR_BUSY while models loaded through
   it are alive (pf_free them first; the message counts them). Any thread. */
pf_result pf_unregister_policy(const char *model_type, char *error, size_t error_size);

/* ---- parallelism ------------------------------------------------------------------------------ */

typedef enum pf_device {
    PF_DEVICE_AUTO = 0, /* CUDA when this build has it and a GPU is present, else CPU */
    PF_DEVICE_CPU,
    PF_DEVICE_CUDA
} pf_device;

/* How weights are stored on the devices; compute accumulates in fp32 either way. On the CPU, fp16
   and bf16 halve the memory (norms and biases stay fp32, rounded to the dtype) and speed decode
   up; compute stays fp32 there. PF_DTYPE_Q8_0 (CPU ranks only) quantizes the matrices at
   pf_parallelize into blocks of 32 inputs with one fp16 scale each (llama.cpp's Q8_0 layout, 8.5
   bits a weight) and multiplies them with int8 dot products against the activations quantized
   the same way per block; norms and biases stay fp32, and a matrix whose rank slice does not
   start and end at a multiple of 32 columns is kept in fp16. PF_DTYPE_Q4_0 (CPU ranks only) is
   llama.cpp's Q4_0 the same way: 32 weights in 16 bytes and an fp16 scale (4.5 bits a weight).
   A GGUF file's quantized matrices (Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q4_K, Q5_K, Q6_K): with
   PF_DTYPE_AUTO on CPU ranks they stay in the file's blocks, multiplied against fp32 activations
   (the dequantized weights' products, in fp32), and a rank count that would cut a block (a
   row-split slice not on the 32- or 256-column grid) is refused, saying to use fewer ranks or
   PF_DTYPE_F32; with PF_DTYPE_Q8_0 they stay in their blocks too where a slice keeps them whole,
   multiplied against int8 activations as llama.cpp does (faster, less exact); any other dtype
   expands them (CUDA: to fp16 or bf16 at upload). A quantized safetensors checkpoint's matrices
   (quantization_config: FP8, GPTQ, AWQ) are decoded as the ranks slice them and stored in the
   dtype (PF_DTYPE_AUTO: fp32 on CPU ranks); see the README. */
typedef enum pf_dtype {
    PF_DTYPE_AUTO = 0, /* CPU: fp32, and a GGUF's quantized blocks as they are; CUDA: fp16 */
    PF_DTYPE_F32,
    PF_DTYPE_F16,
    PF_DTYPE_BF16,
    PF_DTYPE_Q8_0,
    PF_DTYPE_Q4_0
} pf_dtype;

/* Writes a copy of the GGUF file IN_PATH to OUT_PATH with its matrices in DTYPE (PF_DTYPE_F32,
   _F16, _BF16, _Q8_0 or _Q4_0), as llama.cpp's llama-quantize does: every tensor of two or more
   dimensions (a mixture's stacked experts too) whose rows are whole blocks of DTYPE, except the
   routers (ffn_gate_inp); vectors, the other tensors and every metadata key as they are, and
   general.file_type set to match. Values are read in the file's type (blocks dequantized) and
   Q8_0 / Q4_0 made by the code pf_parallelize quantizes with, so that pf_load of the copy holds,
   bit for bit, the blocks PF_DTYPE_Q8_0 or PF_DTYPE_Q4_0 would make of those rows at load (one
   rank gives the same logits with either file; a rank slice that cuts blocks is kept in fp16 of
   the values its file holds). The
   copy is written beside OUT_PATH and renamed over it at the end (OUT_PATH may be IN_PATH). A file
   split by gguf-split is refused (merge it first).
   IN_PATH may instead be a model directory (config.json, safetensors, tokenizer.json): its model
   is written as a GGUF file that pf_load and llama.cpp read as the same model (llama.cpp's
   converter's names, layouts and metadata, the tokenizer as tokenizer.ggml.* keys), its matrices
   in DTYPE; what the file cannot express (a config key, tensor, tokenizer kind or family without a
   GGUF form here) is refused with PF_ERROR_UNSUPPORTED, naming it (the README lists them). error
   (error_size bytes, may be NULL) gets the message. Results: PF_ERROR_INVALID_ARGUMENT, PF_ERROR_IO, PF_ERROR_FORMAT (not a GGUF file we
   read), PF_ERROR_UNSUPPORTED, PF_ERROR_OUT_OF_MEMORY. Any thread; build/quantize is its CLI. */
pf_result pf_quantize_gguf(const char *in_path, const char *out_path, pf_dtype dtype, char *error, size_t error_size);

/* Where a mixture of experts' experts go (pf_parallel_options.expert_split). */
typedef enum pf_expert_split {
    PF_EXPERT_SPLIT_AUTO = 0, /* whole experts, unless the model has fewer experts than ranks: columns */
    PF_EXPERT_SPLIT_WHOLE,    /* expert parallelism: each rank holds whole experts (as even a count as
                                 the numbers allow) and runs them on the tokens routed to them */
    PF_EXPERT_SPLIT_COLUMNS   /* every expert on every rank, split by its columns as a dense MLP is */
} pf_expert_split;

typedef struct pf_parallel_options {
    pf_device device;
    pf_dtype dtype;          /* weight storage on the ranks (see pf_dtype) */
    const int *device_ids;   /* CUDA: the GPU of each rank (repeats share a GPU); NULL: rank i on
                                GPU i modulo the GPUs visible. Never changes CUDA_VISIBLE_DEVICES. */
    int num_device_ids;      /* entries in device_ids; must equal num_ranks when given */
    int max_sequence_length; /* KV cache length per sequence; 0: the model's max positions */
    int max_batch;           /* sequences per forward call; 0: 1 */
    int verbose;             /* log a per-rank memory table through the load options' callback
                                (at PF_LOG_INFO; without verbose, at PF_LOG_DEBUG) */
    int prefill_chunk;       /* decoders: tokens one forward step holds (batch x positions; longer
                                prompts run in chunks of positions, which bounds the activation
                                memory); 0: 512 */
    pf_progress_callback progress; /* weight copying; NULL: the load options' */
    void *progress_user;
    int max_queued_requests; /* generation requests that may wait for room in the batch (continuous
                                batching) before further ones get PF_ERROR_BUSY; 0: 1024 */
    int disable_cuda_graphs; /* CUDA: nonzero launches every decode step's kernels one by one; 0 (the
                                default) captures a step's launches (and NCCL all-reduces) in a
                                CUDA graph once per shape (batch, pads, a bucket of cache lengths)
                                and replays it on later steps. Same results either way. Graphs are
                                not used with ranks sharing a GPU (their reduction waits mid-step). */
    pf_dtype kv_cache_dtype; /* how the self-attention caches store keys and values. PF_DTYPE_AUTO
                                (0): fp32 on CPU ranks, the weights' dtype on CUDA ranks. CPU ranks
                                also take _F32, _F16 and _BF16: 16 bits halve the cache's memory and
                                the bytes each decode step reads of it (each key and value is rounded
                                once, when cached; attention still computes in fp32). CUDA ranks take
                                their weights' dtype only. Cross-attention caches stay fp32. */
    int bf16_products;       /* with dtype PF_DTYPE_BF16: nonzero rounds each matrix product's input
                                to bf16 (to nearest even) and sums the exact products with the
                                weights in fp32, as CUDA ranks always do and as torch's bf16 layers
                                do; on processors with AMX-BF16 (Intel Xeon since Sapphire Rapids) CPU
                                ranks then multiply on the tile unit, several times faster for
                                prompts. 0 (the default): CPU ranks multiply the fp32 input by the
                                weights' exact values. Attention, norms and activations stay fp32
                                either way, as do speech front ends' convolutions. */
    int skip_memory_check;   /* nonzero: split even when the KV caches and scratch of the ranks
                                sharing a memory (the host's for CPU ranks, a GPU's) exceed what it
                                has available after the weights. 0 (the default): refused with
                                PF_ERROR_OUT_OF_MEMORY naming max_sequence_length and max_batch,
                                before anything is allocated, instead of an allocation that the
                                system grants lazily and a first long request that is killed. */
    int across_processes;    /* nonzero: one group over every process of MPI_COMM_WORLD (builds with
                                PF_MPI: make MPI=1; others refuse it with PF_ERROR_UNSUPPORTED). Each
                                process holds num_ranks ranks (CPU ranks, or CUDA ranks each on a
                                GPU of its own, joined by NCCL communicators over every process),
                                world ranks process x num_ranks on, and loads only their slices. SPMD: every process makes the same
                                calls with the same arguments (pf_parallelize, each request,
                                pf_free) and gets the same results (or, with process_0_drives,
                                process 0 alone makes the requests); the program calls
                                MPI_Init_thread with MPI_THREAD_SERIALIZED (or more) first, and
                                calls no MPI itself while a request of this model runs. A rank
                                failing in one process fails the request on all of them; so do
                                processes that make different calls. Requests go one at a time,
                                in the same order everywhere (not from several threads at once;
                                with process_0_drives, process 0's threads call as in one process).
                                pf_num_ranks and pf_get_memory_info count this process's ranks.
                                pf_to_cpu is refused. See the README, "Across processes and hosts
                                (MPI)" and "Across hosts". 0 (the default): this process's ranks
                                alone. */
    pf_expert_split expert_split; /* mixtures of experts: whole experts per rank or every expert's
                                columns (see pf_expert_split); the routing, attention and dense
                                layers are the same either way. 0: PF_EXPERT_SPLIT_AUTO */
    int process_0_drives;    /* with across_processes, nonzero on every process: process 0 alone
                                makes the calls (the CLI, a server, a program taking requests) and
                                the others call pf_follow after pf_parallelize, running each of
                                process 0's requests with it until process 0 frees the model (or
                                parallelizes it again); their other calls that run the ranks are
                                refused. 0 (the default): SPMD, every process makes the calls. */
    int pipeline_stages;     /* with across_processes: the processes split into this many stages
                                (consecutive processes, as many in each), each holding a contiguous
                                run of the decoder's layers (and their KV caches) tensor-parallel
                                over its processes' ranks; a step's hidden state goes from each
                                stage's processes to the next's point to point, and the last stage's
                                logits to every process. Decoders on CPU ranks only; results the
                                bits of one process with a stage's rank count. 0 or 1 (the default): one stage. */
    int process_timeout_ms;  /* with across_processes: the longest a process waits for another inside
                                a request (an all-reduce's partials, a stage's hidden state, a step
                                sent to a follower; at a step's end and for its outputs, where the
                                one waited for may itself wait on a lost one, two and three times
                                that). Past it the process is given up and the others are told: the
                                request fails with PF_ERROR_DEVICE and a message naming it (it died,
                                stopped or lost its host) on every process that still answers, and
                                so does every later call on the model: the program then ends the
                                job (MPI_Abort; pf_free makes no MPI call). Not bounded: pf_parallelize's loading (disks differ) and
                                pf_follow's wait between requests (process 0 may be idle for hours).
                                It must exceed the longest computation one process waits for: a
                                stage's layers on a prompt chunk. 0: 30000 (30 s); negative: no
                                limit. Under Open MPI a process that dies ends the job in about 2 s
                                anyway (mpirun kills the others); this bounds the waits where the
                                launcher does not (a stopped process, a host that drops off, a
                                launcher told to keep the job: orte_enable_recovery). CUDA ranks:
                                it also bounds pf_parallelize's wait for every process's ranks to
                                join the NCCL communicators, and a rank's wait on an NCCL
                                collective. */
} pf_parallel_options;

pf_parallel_options pf_parallel_options_init(void); /* the defaults described above; any thread */

/* Splits the model over num_ranks rank threads, Megatron-style: each rank gets its heads of the
   attention (and the key/value heads they read, replicated where ranks outnumber them), its
   columns of the MLP and its rows of the vocabulary (token embedding and LM head); norms and
   position tables are copied to every rank. Heads need not divide by num_ranks: ranks then hold
   different head counts (a rank may hold none). Weights are sliced straight from the memory map
   into each rank's memory. num_ranks 0 means every device: a rank per online core on the CPU
   (a CPU rank is one thread), one per visible GPU on CUDA, or one per options->device_ids entry.
   Calling it on a model that is already parallel re-splits it; calls from other threads wait for
   it. options may be NULL. Results: PF_ERROR_INVALID_ARGUMENT (a rank count outside 0..64, absurd
   options, a device id that is not a device, called from a
   stream callback), PF_ERROR_UNSUPPORTED (CUDA asked for where there is none, a dtype the
   backend lacks), PF_ERROR_OUT_OF_MEMORY, PF_ERROR_DEVICE (a backend call failed on a rank: the
   message names the rank); after a failure the model runs again once parallelized anew. */
pf_result pf_parallelize(pf_model *model, int num_ranks, const pf_parallel_options *options);

/* A follower's side of a model split across processes with process_0_drives (MPI builds): runs
   every request process 0 makes on the model (its ranks' share of each, the inputs sent by process
   0 before each step) until process 0 frees the model or parallelizes it again, then returns
   PF_OK; the caller then does the same (pf_free, or pf_parallelize with the same arguments). A
   request that fails fails on process 0 with the reason, and following goes on. Returns an error
   when MPI fails (the job is then lost), when called on process 0, or when the model was not split
   that way (PF_ERROR_UNSUPPORTED in builds without MPI). Threads: as pf_parallelize. */
pf_result pf_follow(pf_model *model);

/* Gathers the slices back into one full model on one CPU rank, stored in the dtype the ranks
   used, and frees the others. Results: as pf_parallelize's. Threads: as pf_parallelize. */
pf_result pf_to_cpu(pf_model *model);

/* Number of ranks the model runs on now (1 after pf_load or pf_to_cpu). The getters below must
   not overlap pf_parallelize or pf_to_cpu on the model (see Threads above). */
int pf_num_ranks(const pf_model *model);

/* The kind of device the ranks run on now, PF_DEVICE_CPU or PF_DEVICE_CUDA (what PF_DEVICE_AUTO
   chose), and how they store the weights, PF_DTYPE_F32, _F16, _BF16, _Q8_0 or _Q4_0 (what
   PF_DTYPE_AUTO chose).
   Before the model first runs: the CPU and fp32 that pf_forward would use. */
pf_device pf_model_device(const pf_model *model);
pf_dtype pf_model_dtype(const pf_model *model);

/* Bytes the model holds on the memory of rank `rank` (weights, KV cache, scratch), exactly as
   allocated by the library; 0 for a rank that does not exist. Before pf_parallelize, or for a
   model that has not run yet, nothing is allocated and this is 0. */
size_t pf_memory_allocated(const pf_model *model, int rank);

/* The memory of one rank, in bytes: what the model holds on its device by use (exact, as
   pf_memory_allocated) and the whole device as the system reports it (a GPU: in use by every
   process, CUDA contexts and libraries' own buffers included, and its capacity; a CPU rank: the
   host's memory less its free pages, and its total). */
typedef struct pf_memory_info {
    size_t weights, kv_cache, scratch;
    size_t allocated;                 /* weights + kv_cache + scratch */
    size_t device_used, device_total; /* 0 where the system does not say */
} pf_memory_info;

/* Fills *info for rank `rank` of a parallelized model; PF_ERROR_INVALID_ARGUMENT (info zeroed)
   for a rank that does not exist or before the model ran anywhere. */
pf_result pf_get_memory_info(const pf_model *model, int rank, pf_memory_info *info);

/* ---- inference -------------------------------------------------------------------------------- */

/* Logits for a batch of sequences of equal length, from scratch (the KV cache is reset).
   ids: [batch][seq_len]; logits: [batch][seq_len][vocab_size] floats. batch and seq_len must fit
   what pf_parallelize sized. Runs on one CPU rank if the model was never parallelized.
   Results: PF_ERROR_INVALID_ARGUMENT (NULLs, sizes beyond what pf_parallelize sized, an id outside
   the vocabulary, called from a stream callback), PF_ERROR_UNSUPPORTED (an encoder without a
   masked-LM head, an encoder-decoder: pf_forward_seq2seq), PF_ERROR_OUT_OF_MEMORY,
   PF_ERROR_DEVICE. Threads: any; requests on one model run one after another. */
pf_result pf_forward(pf_model *model, const int32_t *ids, int batch, int seq_len, float *logits);

/* An encoder-decoder's logits for given decoder inputs (teacher forcing): row b's source
   source_ids[b] (source_lengths[b] tokens) through the encoder, then its decoder input
   decoder_ids[b] (decoder_lengths[b] tokens, starting with the decoder start token) through the
   decoder. logits: [sum of decoder_lengths][vocab_size], row b's positions after row b-1's; the
   caller's. Rows of any lengths up to max_sequence_length, batch up to max_batch. LED's encoder
   runs without global tokens here (pf_forward_seq2seq_global takes them).
   PF_ERROR_UNSUPPORTED for a model that is not an encoder-decoder. Threads: as pf_forward. */
pf_result pf_forward_seq2seq(pf_model *model, const int32_t *const *source_ids, const int *source_lengths,
                             const int32_t *const *decoder_ids, const int *decoder_lengths, int batch, float *logits);

/* pf_forward_seq2seq for an encoder-decoder whose encoder has Longformer's attention (LED), with
   the source tokens that have global attention: global_attention[b] holds source_lengths[b]
   values, 1 for a token with global attention, 0 for one with local attention only, as
   pf_encode_global takes them (transformers' model called with global_attention_mask);
   global_attention NULL, or a row's NULL: none. Results: as pf_forward_seq2seq's;
   PF_ERROR_INVALID_ARGUMENT also for a value other than 0 or 1 (the row and token named),
   PF_ERROR_UNSUPPORTED for a model without global attention. Threads: as pf_forward. */
pf_result pf_forward_seq2seq_global(pf_model *model, const int32_t *const *source_ids,
                                    const int32_t *const *global_attention, const int *source_lengths,
                                    const int32_t *const *decoder_ids, const int *decoder_lengths, int batch,
                                    float *logits);

/* ---- encoders (BERT and its kin) ------------------------------------------------------------- */

/* What pf_encode returns for a batch; every array belongs to it (pf_encoding_free). Per-token
   arrays hold the batch's rows one after another, without padding: row b's tokens are
   offsets[b] .. offsets[b + 1] - 1. */
typedef struct pf_encoding {
    int batch, hidden_size;
    int *offsets;             /* [batch + 1] */
    float *last_hidden_state; /* [offsets[batch]][hidden_size] */
    float *pooled;            /* [batch][hidden_size]: the first token through BERT's pooler (dense +
                                 tanh), or through the dense and activation of a classification head
                                 that pools the same way (RoBERTa's tanh, DistilBERT's ReLU); CLIP's
                                 pooler_output (the text tower's end-of-text token, the vision
                                 tower's class token through its post_layernorm); NULL when the
                                 model has none of them */
    pf_head head;             /* as pf_get_info's */
    int num_logits;           /* logits per token (masked LM: vocab_size, token classification:
                                 num_labels, question answering: 2, start then end, replaced-token
                                 detection: 1) or per sequence (sequence classification:
                                 num_labels, multiple choice: 1, next sentence: 2); 0 without a
                                 head */
    int logits_per_token;     /* 1: logits is [offsets[batch]][num_logits]; 0: [batch][num_logits] */
    float *logits;            /* NULL without a head */
    int projection_dim;       /* embeds' width; 0 without a projection */
    float *embeds;            /* [batch][projection_dim]: pooled through the model's projection
                                 (CLIP's get_text_features / get_image_features: text_embeds,
                                 image_embeds before normalisation; RetriBERT's embed_questions);
                                 NULL without one */
    float *doc_embeds;        /* [batch][projection_dim]: RetriBERT's embed_answers (pooled through
                                 its document projection); NULL for other models */
    int num_aggregation_logits; /* PF_HEAD_TABLE_QUESTION_ANSWERING: the aggregation operators
                                   (config.json's num_aggregation_labels); 0 otherwise */
    float *aggregation_logits;  /* [batch][num_aggregation_logits]: TAPAS's logits_aggregation (its
                                   aggregation_classifier on the pooled output); NULL without */
} pf_encoding;

/* Runs an encoder model on `batch` rows of token ids of any lengths (each at least 1 and within
   what pf_parallelize sized; the padding is the library's and never attends or is attended to):
   ids[b] holds lengths[b] ids; token_type_ids[b] likewise (segment ids; NULL for all zero). On
   success *out holds the results (free with pf_encoding_free). An encoder-decoder gives its
   encoder's last hidden state, and with a task head (BART's and T5's ...ForSequenceClassification,
   ...ForQuestionAnswering) the head's logits from its decoder run over the source shifted right
   (a sequence classifier reads each row's last eos: a row without one is refused). A decoder
   gives its last hidden state (causal attention, after its
   final norm, as transformers' LlamaModel gives it; rows longer than pf_parallelize's
   prefill_chunk run in chunks), and with a sequence-classification head (reward models) each
   row's scores, with a token-classification or span head each position's; it takes no token
   types. XLM and FlauBERT take language ids (config.json's lang2id) as token_type_ids when the
   model has language embeddings (n_langs > 1, use_lang_emb): given, each token's language row is
   added (transformers' langs); NULL (or every row NULL), none is, as transformers without langs;
   every row gives them or none does. Without language embeddings they take no token_type_ids
   (PF_ERROR_UNSUPPORTED): transformers' XLM adds the word table's rows for them, a quirk not
   reproduced. Results: PF_ERROR_INVALID_ARGUMENT (NULLs, a row empty
   or longer than max_sequence_length, a batch above max_batch, an id or segment id out of range),
   PF_ERROR_UNSUPPORTED (an image encoder: pf_encode_images; token types on a decoder),
   PF_ERROR_OUT_OF_MEMORY, PF_ERROR_DEVICE. Any thread; requests on one model run one after
   another. */
pf_result pf_encode(pf_model *model, const int32_t *const *ids, const int32_t *const *token_type_ids,
                    const int *lengths, int batch, pf_encoding **out);
void pf_encoding_free(pf_encoding *encoding); /* NULL is fine; any thread */

/* A layout model (LayoutLM, model_type "layoutlm"): pf_encode with each token's bounding box.
   boxes[b] holds 4 x lengths[b] values, token after token: x0, y0, x1, y1 on the scale the model
   was trained on (LayoutLM's processors normalise page coordinates to 0..1000; [CLS] takes
   0,0,0,0 and [SEP] 1000,1000,1000,1000 in transformers' examples); boxes NULL, or boxes[b] NULL,
   for all zero, as transformers without bbox (and as pf_encode runs such a model). Results: as
   pf_encode's; PF_ERROR_INVALID_ARGUMENT also for a box with x1 < x0, y1 < y0 or a value outside
   0..max_2d_position_embeddings - 1 (the row and token named), PF_ERROR_UNSUPPORTED for a model
   without 2-D position embeddings. Threads: as pf_encode. */
pf_result pf_encode_layout(pf_model *model, const int32_t *const *ids, const int32_t *const *token_type_ids,
                           const int32_t *const *boxes, const int *lengths, int batch, pf_encoding **out);

/* A table model (TAPAS, model_type "tapas"): pf_encode with each token's 7 table token types, as
   TapasTokenizer gives them (transformers' token_type_ids [batch, tokens, 7]). table_types[b]
   holds 7 x lengths[b] values, token after token: segment (0 the question, 1 the table), column
   (1.. the table's columns, 0 outside them), row (1.. the table's rows, 0 the header and outside),
   previous label, column rank, inverse column rank, numeric relation; each within its table
   (config.json's type_vocab_sizes). Where config.json's reset_position_index_per_cell is true (its
   default) a token's position counts from the first token of its cell (the tokens of its column and
   row ids; the question's and the header's are cells too), as transformers computes them; else from
   the row's start. table_types NULL, or a row's NULL, for all zero (as transformers without
   token_type_ids; pf_encode runs such a model so, its token_type_ids the segment alone). Heads:
   TapasForMaskedLM, ...ForSequenceClassification (on the pooled output) and ...ForQuestionAnswering
   (PF_HEAD_TABLE_QUESTION_ANSWERING, computed on each row's own tokens as transformers computes a
   row alone). Results: as pf_encode's; PF_ERROR_INVALID_ARGUMENT also for a type outside its table
   (the row, token and type named), PF_ERROR_UNSUPPORTED for a model without table types. Threads:
   as pf_encode. */
pf_result pf_encode_table(pf_model *model, const int32_t *const *ids, const int32_t *const *table_types,
                          const int *lengths, int batch, pf_encoding **out);

/* A model with Longformer's attention (model_type "longformer"; "led", whose encoder has it, gives
   its encoder's output as pf_encode does): pf_encode with the tokens that have global attention.
   global_attention[b] holds lengths[b] values, 1 for a token with global attention (it attends to
   every token through its own projections, and every token attends to it), 0 for one with local
   attention only (the tokens within attention_window / 2 of it); global_attention NULL, or
   global_attention[b] NULL, for the head's default as transformers' Longformer heads compute it
   without a mask (and as pf_encode runs such a model): the first token for sequence classification,
   the tokens before the first sep_token_id for question answering, the tokens after the first two
   for multiple choice (both need exactly 3 separators a row), none otherwise (and none for LED,
   whose generation takes them through pf_generate_options.global_attention). Results: as
   pf_encode's; PF_ERROR_INVALID_ARGUMENT also for a value other than 0 or 1 (the row and token
   named) or a row without the 3 separators a default needs, PF_ERROR_UNSUPPORTED for a model
   without global attention. Threads: as pf_encode. */
pf_result pf_encode_global(pf_model *model, const int32_t *const *ids, const int32_t *const *token_type_ids,
                           const int32_t *const *global_attention, const int *lengths, int batch, pf_encoding **out);

/* A vision-and-language encoder over object regions (VisualBERT, model_type "visual_bert"):
   pf_encode with each row's image as the features of its object regions, as an object detector
   gives them (transformers' visual_embeds). regions[b] holds num_regions[b] x region_dim floats,
   region after region; region_dim must be the model's (pf_model_info.region_dim, config.json's
   visual_embedding_dim). Row b runs as its lengths[b] tokens followed by its regions, each region
   embedded as its features through visual_projection plus row 0 of the visual position table and
   row 1 of the visual token type table (transformers' defaults: no image_text_alignment, which is
   not taken; visual_token_type_ids all 1), every region attended (visual_attention_mask all 1:
   to leave regions out, give fewer). num_regions NULL, or num_regions[b] 0, for a row of text
   alone (as transformers without visual_embeds, and as pf_encode runs the model). The encoding's
   row b has lengths[b] + num_regions[b] positions, the tokens' then the regions' (offsets count
   both; a masked LM's logits likewise). VisualBertForQuestionAnswering gives
   PF_HEAD_SEQUENCE_CLASSIFICATION logits (VQA's num_labels answer scores a row, read from the
   text's token before its last, which needs 2 tokens a row); ...ForVisualReasoning likewise from
   the pooled output; ...ForMultipleChoice a score a row (each row a choice, with its regions);
   ...ForPreTraining its masked LM. Results: as pf_encode's; PF_ERROR_INVALID_ARGUMENT also for
   a region_dim other than the model's, a count below 0, regions (or regions[b]) NULL with a
   count above 0, tokens and regions together beyond max_sequence_length, a feature not finite
   (the row named); PF_ERROR_UNSUPPORTED for a model that takes no regions. Threads: as pf_encode. */
pf_result pf_encode_regions(pf_model *model, const int32_t *const *ids, const int32_t *const *token_type_ids,
                            const float *const *regions, const int *num_regions, int region_dim, const int *lengths,
                            int batch, pf_encoding **out);

/* A vision-and-language encoder over object regions with their boxes (LXMERT, model_type
   "lxmert"): as pf_encode_regions, each region also with its box, boxes[b] holding
   num_regions[b] x box_dim floats (transformers' visual_feats and visual_pos: regions[b] the
   features, region_dim of them a region, pf_model_info.region_dim; boxes[b] box_dim values a
   region, pf_model_info.region_box_dim, as the checkpoint was trained on them: LXMERT's boxes
   normalised to 0..1). Every row needs 1 region or more, all attended (visual_attention_mask all 1).
   The text runs through the language layers and the regions through the relation layers, then
   both through the cross-modality layers; the encoding's row b has lengths[b] + num_regions[b]
   positions, the tokens' (transformers' language_output) then the regions' (vision_output);
   pooled is pooled_output (the first token's). LxmertForQuestionAnswering gives
   PF_HEAD_SEQUENCE_CLASSIFICATION logits: question_answering_score, num_qa_labels a row.
   Results: as pf_encode_regions'; PF_ERROR_INVALID_ARGUMENT also for a box_dim other than the
   model's, a row with no region, boxes (or boxes[b]) NULL, a box value not finite (the row
   named); pf_encode and pf_encode_regions refuse such a model. PF_ERROR_UNSUPPORTED for a model
   that takes no regions, or regions without boxes (pf_encode_regions runs it). Threads: as
   pf_encode. */
pf_result pf_encode_region_boxes(pf_model *model, const int32_t *const *ids, const int32_t *const *token_type_ids,
                                 const float *const *regions, const float *const *boxes, const int *num_regions,
                                 int region_dim, int box_dim, const int *lengths, int batch, pf_encoding **out);

/* An entity-aware encoder (LUKE, model_type "luke"): pf_encode with each row's entities after its
   words, as transformers' entity_ids and entity_position_ids give them. Row b has num_entities[b]
   entities: entity_ids[b] holds their ids in the model's entity vocabulary (pf_model_info.
   entity_vocab_size; the ids LUKE's tokenizer gives from its entity_vocab.json, which the library
   does not read: the caller looks them up), entity_positions[b] num_entities[b] x mention_length
   values, entity after entity: the positions among the row's lengths[b] tokens (from 0) of the
   entity's mention, -1 for none (transformers' entity_position_ids, padded with -1 to
   max_mention_length; each entity's position embedding is the mean of its positions' rows). Every
   entity is attended (entity_attention_mask all 1: to leave one out, give fewer) and of token type
   0 (entity_token_type_ids 0, what LUKE's tokenizer gives). num_entities NULL, or num_entities[b]
   0, for a row of words alone (as pf_encode runs the model). The encoding's row b has lengths[b] +
   num_entities[b] positions, the words' then the entities' (transformers' last_hidden_state, then
   entity_last_hidden_state; offsets count both; a per-token head's logits likewise).
   LukeForEntityClassification and ...ForEntityPairClassification give PF_HEAD_SEQUENCE_CLASSIFICATION
   logits from each row's first entity, or its first two side by side (a row with fewer is refused,
   pf_encode's rows too). Results: as
   pf_encode's; PF_ERROR_INVALID_ARGUMENT also for a count below 0, ids or positions (or a row's)
   NULL with a count above 0, an id outside the entity vocabulary, a position neither -1 nor one of
   the row's tokens, mention_length outside 1 .. max_position_embeddings, words and entities together
   beyond max_sequence_length (the row and entity named); PF_ERROR_UNSUPPORTED for a model that
   takes no entities, and for a group of ranks in several processes (MPI). Threads: as pf_encode. */
pf_result pf_encode_entities(pf_model *model, const int32_t *const *ids, const int32_t *const *token_type_ids,
                             const int32_t *const *entity_ids, const int32_t *const *entity_positions,
                             const int *num_entities, int mention_length, const int *lengths, int batch,
                             pf_encoding **out);

/* An image encoder (ViT, DeiT): images already preprocessed as the model's image processor does
   (resized, rescaled, normalised), pixels [batch][num_channels][image_size][image_size] floats
   (pf_model_info's image fields give the sizes), num_pixel_values of them: exactly batch x
   num_channels x image_size x image_size, else PF_ERROR_INVALID_ARGUMENT before any is read (an
   image processor whose size, crop_size or do_resize gives another size than config.json's
   image_size: compare pf_image_output_size with the model's). The encoding has, per image, the
   class token (DeiT: then the distillation token), then the patches row by row: last_hidden_state
   [batch][tokens][hidden]; pooled [batch][hidden] where the model has a pooler; logits
   [batch][num_labels] for PF_HEAD_IMAGE_CLASSIFICATION. *encoding is the caller's
   (pf_encoding_free). PF_ERROR_UNSUPPORTED for a model that takes token ids. Threads: as pf_encode. */
pf_result pf_encode_images(pf_model *model, const float *pixels, size_t num_pixel_values, int batch,
                           pf_encoding **encoding);

/* A dual encoder (model_type "clip", architectures CLIPModel): pf_encode runs its text tower
   (causal attention; pooled at each row's end-of-text token; embeds: text_embeds as
   get_text_features gives them) and pf_encode_images its vision tower (pooled: the class token
   through post_layernorm; embeds: image_embeds), each row as transformers computes it alone. The
   towers (widths, heads, layers of their own) are each split over pf_parallelize's ranks by
   their own heads. pf_get_info gives the text tower's sizes and the vision tower's image fields;
   pf_memory_allocated and pf_get_memory_info the two towers' bytes on the rank together. The
   calls of decoders and sentence embeddings (pf_forward, pf_generate..., pf_embed) are refused
   (PF_ERROR_UNSUPPORTED). A tower saved alone (CLIPTextModel, CLIPVisionModel and their
   ...WithProjection) loads as a model of its own. */

/* The similarity of every image to every text, as CLIPModel's logits_per_image:
   logit_scale.exp() * (image_embeds / |image_embeds|) . (text_embeds / |text_embeds|).
   Texts as pf_encode takes them (ids[t] holds lengths[t] ids, each text with its end-of-text
   token; any count: they run max_batch at a time); pixels [num_images][num_channels][image_size]
   [image_size], num_pixel_values floats, as pf_encode_images takes them (checked before any work).
   logits_per_image [num_images][num_texts] is the caller's (logits_per_text is its transpose).
   Results: PF_ERROR_INVALID_ARGUMENT (NULLs, counts below 1, and what pf_encode and
   pf_encode_images refuse), PF_ERROR_UNSUPPORTED (a model that is not a dual encoder),
   PF_ERROR_OUT_OF_MEMORY, PF_ERROR_DEVICE. Threads: as pf_encode. */
pf_result pf_image_text_logits(pf_model *model, const int32_t *const *ids, const int *lengths, int num_texts,
                               const float *pixels, size_t num_pixel_values, int num_images, float *logits_per_image);
/* A speech encoder (Wav2Vec2, XLSR, HuBERT) on `batch` waveforms of any lengths: samples[b] holds
   num_samples[b] floats as the model's feature extractor gives them (16 kHz mono, normalised where
   preprocessor_config.json says do_normalize: pf_audio_processor does it). The convolutional front
   end runs on the calling thread, each waveform alone; the transformer blocks are split over the
   ranks, the shorter rows' frames padded where nothing attends to them (as pf_encode's rows).
   Row b has pf_encode_audio_frames(model, num_samples[b]) frames: last_hidden_state [frames of
   all rows][hidden] (offsets: where each row starts); for PF_HEAD_CTC, logits [frames of all
   rows][vocab_size] (logits_per_token 1). Each row equals transformers' output for that waveform
   alone, and for a padded batch with the attention mask the feature extractor returns where it
   returns one (return_attention_mask: XLSR, the large models); the base models' extractor
   returns none, and transformers then computes a padded batch with the padding (its GroupNorm
   sees it): pass waveforms unpadded. *encoding is the caller's (pf_encoding_free). Results:
   PF_ERROR_INVALID_ARGUMENT (NULLs, batch < 1 or above max_batch, a row with fewer samples than
   audio_min_samples or more frames than max_sequence_length, samples not finite),
   PF_ERROR_UNSUPPORTED (a model that is not a speech encoder), PF_ERROR_OUT_OF_MEMORY,
   PF_ERROR_DEVICE. Threads: as pf_encode.
   A speech encoder-decoder (Whisper, Speech2Text) gives its encoder's last hidden state: each
   waveform through the feature extractor of the model directory's preprocessor_config.json
   (Whisper's padded or cut to its chunk, pf_encode_audio_frames frames: max_source_positions;
   Speech2Text's filter banks of any length, the batch padded as its extractor pads it), then as
   pf_encode_audio_features. */
pf_result pf_encode_audio(pf_model *model, const float *const *samples, const int *num_samples, int batch,
                          pf_encoding **encoding);
/* Frames a speech encoder makes of num_samples samples (0: too few, or not a speech encoder; 0
   for Speech2Text, whose frames follow its extractor's: pf_audio_features_size's rows, halved
   per convolution as pf_encode_audio_features counts them). Any thread, after pf_load succeeded. */
int pf_encode_audio_frames(const pf_model *model, int num_samples);

/* Greedy CTC decoding of row `row` of a PF_HEAD_CTC encoding, as transformers' Wav2Vec2CTCTokenizer
   batch_decode does with its defaults: the argmax of each frame (the first on ties), runs of one id
   collapsed, the pad token (CTC's blank) dropped, the word delimiter token ("|") turned into a
   space, the tokens' strings joined and stripped of surrounding spaces; lower-cased (ASCII) where
   tokenizer_config.json says do_lower_case, and its clean_up_tokenization_spaces applied where it
   says so. Special tokens other than the pad are kept, as batch_decode keeps them. The tokens come
   from the model directory's vocab.json (an id it lacks: the unk token), the pad, delimiter and unk
   from tokenizer_config.json, else special_tokens_map.json (defaults "<pad>", "|", "<unk>"); read
   on the first call. On success *text is a NUL-terminated UTF-8
   string to free with pf_string_free. Results: PF_ERROR_INVALID_ARGUMENT (NULLs, an encoding
   without CTC logits, a row out of range, logits of another vocabulary's size), PF_ERROR_IO /
   PF_ERROR_FORMAT (vocab.json or tokenizer_config.json missing or malformed),
   PF_ERROR_OUT_OF_MEMORY. Any thread; calls on one model run one after another. */
pf_result pf_ctc_decode(pf_model *model, const pf_encoding *encoding, int row, char **text);

/* Sentence embeddings, as sentence-transformers computes them: the encoder's last hidden state
   pooled over each row's tokens, then optionally L2-normalised. */
typedef enum pf_pooling {
    PF_POOLING_MODEL = 0,      /* the model's sentence-transformers pooling (modules.json and its
                                  Pooling module's config.json), else mean */
    PF_POOLING_MEAN,           /* mean over the tokens */
    PF_POOLING_CLS,            /* the first token */
    PF_POOLING_MAX,            /* the maximum of each feature over the tokens */
    PF_POOLING_MEAN_SQRT_LEN,  /* the sum over the tokens / sqrt(tokens) */
    PF_POOLING_WEIGHTED_MEAN,  /* token i (from 1) weighted by i */
    PF_POOLING_LAST_TOKEN      /* the last token */
} pf_pooling;

typedef struct pf_embed_options {
    pf_pooling pooling;
    int normalize; /* -1: as the model says (a sentence-transformers Normalize module; none when
                      the model has no modules.json); 0: no; 1: to unit L2 length */
    int max_length; /* pf_embed_texts' tokens a text at most (special ones included); 0: the model's
                       sentence-transformers max_seq_length, else its positions (a GGUF file holds
                       no max_seq_length: give the model card's to cut as sentence-transformers does) */
} pf_embed_options;

pf_embed_options pf_embed_options_init(void); /* the model's pooling and normalisation */

/* One embedding of hidden_size floats per row of ids (as pf_encode takes them; any batch: the
   rows run max_batch at a time) into embeddings [batch][hidden_size]. A model whose
   sentence-transformers modules include one we do not run (a Dense projection, say) is refused
   with a message naming it. embeddings is the caller's; options may be NULL (the model's).
   Results: as pf_encode's. Any thread; requests on one model run one after another. */
pf_result pf_embed(pf_model *model, const int32_t *const *ids, const int *lengths, int batch,
                   const pf_embed_options *options, float *embeddings);

/* As pf_embed, for texts: each is tokenized with the model's tokenizer and its special tokens
   ([CLS] ... [SEP]), its words cut to fit options' max_length, else the model's
   sentence-transformers max_seq_length (else its positions) as sentence-transformers truncates
   them; a max_length above the positions pf_parallelize sized is cut to them. Results: as pf_embed's, and
   PF_ERROR_INVALID_ARGUMENT for a model without a tokenizer (the message says why). */
pf_result pf_embed_texts(pf_model *model, const char *const *texts, int count, const pf_embed_options *options,
                         float *embeddings);

/* Receives each new token as it is chosen (greedy and sampling, not beam search): the row of the
   batch, the id, and the text it completes (whole UTF-8 characters; may be empty; NULL without
   a tokenizer). A special token's text is passed too ("</s>", "<|im_end|>"): check the id with
   pf_tokenizer_is_special to leave it out, as transformers' skip_special_tokens does. Return
   nonzero to stop the whole generation. Called on the caller's thread, inside the request:
   pf_forward, the pf_generate calls, pf_parallelize and pf_to_cpu on the same model return
   PF_ERROR_INVALID_ARGUMENT from there (other models are fine). Greedy and sampled streams of
   decoders share the continuous batch's steps with the model's other requests; each step waits
   until every stream in it has taken its tokens, so a callback should return promptly. */
typedef int (*pf_stream_callback)(void *user, int row, int32_t token, const char *text, size_t text_len);

/* Receives each chosen token's log-probability when pf_generate_options.logprobs is set: the row
   (as the results number them), the token, its log-probability, and the top_logprobs most likely
   tokens with theirs (most likely first, ties by lower id). The log-probabilities are of the
   model's own distribution, log_softmax of its logits before any logits processor (temperature,
   penalties, logit_bias, top_k, ...), as OpenAI's logprobs, vLLM's default (raw_logprobs) and
   transformers' output_logits give them: a processor changes which token is chosen, not the
   numbers reported. Called once per new token of a live row, in order: for a streamed request on
   the caller's thread just before that token's stream callback; otherwise on the thread that
   runs the step (the caller's, or the continuous batch's), before the call returns. The arrays are
   valid during the call only. */
#define PF_MAX_TOP_LOGPROBS 256
typedef void (*pf_logprobs_callback)(void *user, int row, int32_t token, float logprob, const int32_t *top_tokens,
                                     const float *top_logprobs, int num_top);

typedef enum pf_early_stopping {
    PF_EARLY_STOPPING_HEURISTIC = 0, /* transformers' early_stopping=False */
    PF_EARLY_STOPPING_ON,            /* early_stopping=True: stop when num_beams are finished */
    PF_EARLY_STOPPING_NEVER          /* early_stopping="never" */
} pf_early_stopping;

/* A token sequence, for bad words and stop sequences. */
typedef struct pf_token_sequence {
    const int32_t *ids;
    int length;
} pf_token_sequence;

/* A token's score change (pf_generate_options.logit_bias). */
typedef struct pf_token_bias {
    int32_t token;
    float bias; /* added to the token's score; -INFINITY bans it */
} pf_token_bias;

/* Constrained JSON output (pf_generate_options.json_constraint; OpenAI's response_format): at each
   step every token whose text cannot continue a valid prefix is banned, and eos is allowed only
   once the value is complete (then nothing else is). schema: a JSON Schema text, or NULL for any
   JSON object. The subset: type (object, array, string, number, integer, boolean, null, or a list
   of them), properties, required, additionalProperties (false, true or a schema; an object that
   declares properties is written with those only, which additionalProperties true allows too),
   items, minItems, maxItems, enum, const, anyOf, $ref to #/$defs/... or #/definitions/...
   (recursion allowed), and the annotations title, description, default, examples, $schema, $id,
   $comment. Any other keyword (pattern, format, minimum, oneOf, ...) is refused,
   PF_ERROR_INVALID_ARGUMENT with pf_error_message naming it: never ignored. Whitespace between
   tokens is allowed in runs of at most 16 bytes and a number has at most 24 bytes, so that a model
   cannot pad forever. Needs the model's tokenizer; greedy search or sampling. One constraint may
   serve many requests at once (it is read only); free it after them. It reads the vocabulary's
   texts that the model keeps (decoded by the first constraint made on it, once): use it with
   that model while the model is loaded (freeing it, before or after pf_free, is always fine). */
typedef struct pf_json_constraint pf_json_constraint;
pf_result pf_json_constraint_new(pf_model *model, const char *schema, pf_json_constraint **out);
void pf_json_constraint_free(pf_json_constraint *constraint); /* NULL is fine */

/* Defaults equal transformers' GenerationConfig defaults. Each count is checked against its
   limit before its array is read (a larger one is PF_ERROR_INVALID_ARGUMENT): each list
   (eos_token_ids, suppress_tokens, begin_suppress_tokens, bad_words, stop_sequences) at most
   1,000,000 entries, each bad word or stop sequence at most max_sequence_length ids,
   decoder_prompt_length below the decoder's positions and max_sequence_length. Within its limit,
   a count must not exceed its array. */
typedef struct pf_generate_options {
    int max_new_tokens;        /* 0: unset, max_length rules; wins over max_length when set */
    int max_length;            /* prompt (padded) + new tokens; 20 */
    int min_length;            /* eos is suppressed until the sequence is this long; 0 */
    int min_new_tokens;        /* ... or until this many new tokens; 0 */
    int num_beams;             /* 1: greedy or sampling */
    float length_penalty;      /* beam scores divided by (new tokens)^length_penalty; 1.0 */
    pf_early_stopping early_stopping;
    int num_return_sequences;  /* per prompt; at most num_beams in beam search; 1 */
    int no_repeat_ngram_size;  /* 0: off */
    int do_sample;             /* 0: greedy / beam search */
    float temperature;         /* 1.0 */
    int top_k;                 /* 50 (sampling only); 0: off */
    float top_p;               /* 1.0 (sampling only) */
    float repetition_penalty;  /* 1.0: off */
    uint64_t seed;             /* sampling: the same seed gives the same tokens, on any rank count */
    const int32_t *eos_token_ids; /* NULL: the model's (pf_model_info's eos_token_ids) */
    int num_eos_token_ids;
    int ignore_eos;            /* 1: never stop at an eos token */
    int pad_token_id;          /* fills finished rows; -1: the first eos id */
    const pf_token_sequence *bad_words; /* these sequences are never completed */
    int num_bad_words;
    const pf_token_sequence *stop_sequences; /* a row ends once its new tokens end with one */
    int num_stop_sequences;
    pf_stream_callback stream; /* NULL: none */
    void *stream_user;
    int forced_bos_token_id;   /* the first new token of a one-token prompt (an encoder-decoder's
                                  start token: mBART's, M2M100's target language); -1: none */
    int forced_eos_token_id;   /* the last new token max_length allows; -1: none */
    int decoder_start_token_id;/* encoder-decoders: the decoder's first token; -1: the model's */
    int encoder_no_repeat_ngram_size; /* encoder-decoders: never repeat an n-gram of the source
                                  (Blenderbot's default 3); 0: off */
    const int32_t *suppress_tokens; /* never generated (transformers' suppress_tokens); NULL: none */
    int num_suppress_tokens;
    const int32_t *begin_suppress_tokens; /* not generated as the first new token */
    int num_begin_suppress_tokens;
    const int32_t *decoder_prompt; /* encoder-decoders: the decoder's first tokens, which the new
                                  tokens follow (transformers' decoder_input_ids); NULL: the decoder
                                  start token alone. Whisper's model options (pf_model_generate_options)
                                  hold its prompt from generation_config.json: <|startoftranscript|>
                                  <|language|> <|task|> <|notimestamps|> */
    int decoder_prompt_length;
    int return_timestamps;     /* Whisper (pf_generate_audio): 1 generates with timestamps as
                                  transformers' generate(return_timestamps=True) does for one window:
                                  the model's prompt without <|notimestamps|> (a decoder_prompt of the
                                  caller's must leave it out), WhisperTimeStampLogitsProcessor's rules at
                                  every step, and the results hold the timestamp tokens (ids above
                                  no_timestamps_token_id: <|0.00|>, <|0.02|>, ...) without the eos.
                                  Greedy search only. 0 by default; the model's options: its
                                  generation_config.json's return_timestamps */
    float min_p;               /* sampling: tokens less likely than min_p times the likeliest are
                                  dropped, after top_k and top_p (transformers' min_p); 0: off */
    float presence_penalty;    /* subtracted once from the score of each token among the row's new
                                  tokens (OpenAI's presence_penalty); 0: off */
    float frequency_penalty;   /* subtracted from a token's score once for each time it is among the
                                  row's new tokens (OpenAI's frequency_penalty); 0: off. Both come
                                  after repetition_penalty */
    const pf_token_bias *logit_bias; /* added to these tokens' scores before every other processor
                                  (transformers' sequence_bias of single tokens; OpenAI's logit_bias) */
    int num_logit_bias;
    const char *const *stop_strings; /* a row ends with the token that completes one of these texts
                                  (UTF-8, not empty) in the decoded text of its new tokens, as
                                  transformers' stop_strings; needs the model's tokenizer */
    int num_stop_strings;
    int logprobs;              /* 1: each chosen token's log-probability (and top_logprobs
                                  alternatives) to logprobs_callback; greedy search or sampling */
    int top_logprobs;          /* 0..PF_MAX_TOP_LOGPROBS: the most likely tokens given with each */
    pf_logprobs_callback logprobs_callback;
    void *logprobs_user;
    const pf_json_constraint *json_constraint; /* NULL: none; see pf_json_constraint_new (the
                                  same model's); the text of each row's new tokens is then JSON of it */
    const int32_t *const *global_attention; /* an encoder-decoder whose encoder has Longformer's
                                  attention (LED): global_attention[b] holds prompt_lengths[b] values, 1
                                  for a source token with global attention, 0 for one with local
                                  attention only, as pf_encode_global takes them (transformers'
                                  generate(global_attention_mask=...)); NULL, or a row's NULL: none, as
                                  generate() without a mask. A value other than 0 or 1 is
                                  PF_ERROR_INVALID_ARGUMENT; a model without global attention, and
                                  pf_generate_text (whose caller does not see the prompt's tokens),
                                  PF_ERROR_UNSUPPORTED. pf_generate's one prompt: global_attention[0] */
} pf_generate_options;

pf_generate_options pf_generate_options_init(void);

/* The options this model generates with when the pf_generate calls get NULL options:
   pf_generate_options_init() with the defaults its generation_config.json sets, as transformers'
   generate() takes them (max_length / max_new_tokens, min lengths, do_sample, temperature, top_k,
   top_p, repetition_penalty, num_beams, num_return_sequences, no_repeat_ngram_size,
   length_penalty, early_stopping, pad_token_id, forced_bos_token_id, forced_eos_token_id,
   decoder_start_token_id, encoder_no_repeat_ngram_size, suppress_tokens, begin_suppress_tokens,
   Whisper's decoder_prompt and return_timestamps (see pf_generate_audio): the lists owned by the model). Start from these and change what you want. pf_load refuses a
   generation_config.json that sets a generation feature we lack (typical_p, sequence_bias, ...)
   unless skip_generation_config is set. Any thread. */
pf_generate_options pf_model_generate_options(const pf_model *model);

/* The result of pf_generate_batch: batch * num_return_sequences sequences, prompt-major. */
typedef struct pf_generation {
    int num_sequences;
    int32_t **tokens;  /* [num_sequences][lengths[i]]: new tokens only, with the eos that ended it */
    int *lengths;
    float *scores;     /* beam search: transformers' sequences_scores; otherwise 0 */
} pf_generation;

/* Generation from a batch of prompts of any lengths (left-padded internally, each row giving
   what it gives alone). The batch times num_beams (or num_return_sequences when sampling) must
   fit the max_batch given to pf_parallelize. Several threads may call it (and pf_generate,
   pf_forward) on one model at once: calls are queued and run one after another. options may be
   NULL (pf_model_generate_options). On success *result holds arrays the caller frees with
   pf_generation_free; on failure it is empty. Results: PF_ERROR_INVALID_ARGUMENT (NULLs, an empty
   prompt, an id outside the vocabulary, options transformers refuses too (the message names
   which), more rows than max_batch, a prompt that fills the KV cache, called from a stream
   callback), PF_ERROR_UNSUPPORTED (an encoder), PF_ERROR_OUT_OF_MEMORY, PF_ERROR_DEVICE. */
pf_result pf_generate_batch(pf_model *model, const int32_t *const *prompts, const int *prompt_lengths, int batch,
                            const pf_generate_options *options, pf_generation *result);
void pf_generation_free(pf_generation *result); /* empties it; an empty one is fine; any thread */

/* One prompt, the first returned sequence's new tokens into out (at most out_capacity, which
   also bounds the generation), their count into *num_out. Results and threads: as
   pf_generate_batch's. */
pf_result pf_generate(pf_model *model, const int32_t *prompt, int prompt_len, const pf_generate_options *options,
                      int32_t *out, int out_capacity, int *num_out);

/* Text in, text out with the model's tokenizer (special tokens added as transformers does): the
   new text of the first returned sequence (a decoder's continuation, an encoder-decoder's output
   for the prompt as its source), special tokens left out as transformers'
   decode(skip_special_tokens=True) does, NUL-terminated, into *text (free it with
   pf_string_free; NULL on failure). Results: as pf_generate_batch's, and
   PF_ERROR_INVALID_ARGUMENT for a model without a tokenizer (the message says why). */
pf_result pf_generate_text(pf_model *model, const char *prompt, const pf_generate_options *options, char **text);
void pf_string_free(char *text); /* NULL is fine; any thread */

/* Generation from audio by a speech encoder-decoder (Whisper; Speech2Text): row b's features,
   features[b], exactly as pf_audio_features computes them with the model's preprocessor_config.json
   (pf_audio_processor_load on the model directory), num_frames[b] frames of pf_model_info's
   num_mel_bins each, laid out as pf_audio_features lays them out: mel-major [num_mel_bins]
   [num_frames[b]] where pf_model_info's mel_major is 1 (Whisper's log-mel spectrogram: num_frames
   must be its audio_frames, 3000 for 30 s, as pf_audio_features pads or cuts every input),
   frame-major [num_frames[b]][num_mel_bins] where it is 0 (Speech2Text's filter banks, rows of any
   length). The convolutional front end runs on the calling thread, each row alone (Speech2Text's:
   each row zero-padded to the batch's longest, as transformers runs a padded batch with the
   extractor's attention mask, so that a shorter row's last frames see the padding as they do
   there); the encoder and the decoder are split over the ranks as pf_generate_batch's
   encoder-decoders are. The decoder
   starts from options->decoder_prompt (Whisper's model options: its generation_config.json's
   <|startoftranscript|> <|language|> <|task|> <|notimestamps|>; NULL options: the model's; where
   generation_config.json names no language (forced_decoder_ids' [1, null], or none) and has
   lang_to_id, the model's prompt has none, and with that prompt each row's language is detected
   as transformers does: the likeliest language token after the start token alone, put after the
   start token), and
   generates as pf_generate_batch does (greedy, sampling or beam search, suppress_tokens and
   begin_suppress_tokens applied at the first token after the prompt). *result holds, per row, the
   tokens after the decoder prompt, with the eos that ended them (pf_generation_free); with
   options->return_timestamps, the text and timestamp tokens without the eos, as transformers
   returns them where the window's decoding ends a segment (where it stops after a pair of
   timestamps and more text, transformers decodes the audio again from the last timestamp, its
   long-form loop, which is not run here: the tokens are the window's). Results:
   PF_ERROR_INVALID_ARGUMENT (NULLs, batch < 1 or above max_batch, a row of the wrong number of
   frames, features not finite, options as pf_generate_batch refuses them), PF_ERROR_UNSUPPORTED (a
   model that is not a speech encoder-decoder), PF_ERROR_OUT_OF_MEMORY, PF_ERROR_DEVICE. Threads: as
   pf_generate_batch. */
pf_result pf_generate_audio(pf_model *model, const float *const *features, const int *num_frames, int batch,
                            const pf_generate_options *options, pf_generation *result);

/* A speech encoder-decoder's logits for given decoder inputs (teacher forcing), as
   pf_forward_seq2seq's with features as pf_generate_audio takes them in place of source ids: row
   b's decoder input decoder_ids[b] (decoder_lengths[b] tokens, up to the decoder's max_positions)
   after its features through the encoder. logits: [sum of decoder_lengths][vocab_size], the
   caller's. Results: as pf_generate_audio's. Threads: as pf_forward. */
pf_result pf_forward_audio(pf_model *model, const float *const *features, const int *num_frames,
                           const int32_t *const *decoder_ids, const int *decoder_lengths, int batch, float *logits);

/* The encoder's last hidden state of a speech encoder-decoder for features as pf_generate_audio
   takes them: last_hidden_state [frames of all rows][hidden] (offsets: where each row starts; a
   Whisper row has max_source_positions frames, a Speech2Text row of n feature frames n halved,
   rounding up, once per convolution: (n - 1) / 2 + 1 each). *encoding is the caller's
   (pf_encoding_free).
   Results: as pf_generate_audio's. Threads: as pf_encode. */
pf_result pf_encode_audio_features(pf_model *model, const float *const *features, const int *num_frames, int batch,
                                   pf_encoding **encoding);

/* ---- tokenizer -------------------------------------------------------------------------------- */

/* The model's tokenizer, or NULL when the model directory had none (or one we do not read: the
   text calls' messages say why). Owned by the model, valid until pf_free. Any thread. */
pf_tokenizer *pf_model_tokenizer(pf_model *model);

/* Loads a tokenizer alone from a directory: tokenizer.json; else vocab.json + merges.txt (a
   byte-level BPE, as GPT-2's); else, where tokenizer_config.json's tokenizer_class is
   "ByT5Tokenizer", ByT5's bytes. Tokenizers transformers has in Python only (Marian, M2M100,
   Blenderbot-small, FSMT, ...) are PF_ERROR_UNSUPPORTED with a message naming the class. On
   failure *tokenizer is NULL and, when error/error_size are given, the message is written there. */
pf_result pf_tokenizer_load(const char *dir, pf_tokenizer **tokenizer, char *error,
                            size_t error_size);
void pf_tokenizer_free(pf_tokenizer *tokenizer); /* one from pf_tokenizer_load; NULL is fine */

/* Text (UTF-8; invalid bytes are encoded as their byte tokens) to ids. Special tokens written in
   the text ("<|im_start|>", "</s>", ...) are recognised and become their ids, as transformers'
   tokenizers do with added tokens (so a rendered chat template tokenizes as it should; text from
   an untrusted user can spell them too: filter it first where that matters). Writes at most capacity
   ids; *num_ids is the full count (PF_ERROR_BUFFER_TOO_SMALL if it exceeds capacity). Thread-safe
   on a loaded tokenizer. PF_ERROR_INVALID_ARGUMENT (and no ids) where HF tokenizers fails too: a
   WordPiece word that needs an unk token the vocab lacks, a character a Unigram model without
   unk_id has no piece for. */
pf_result pf_tokenize(const pf_tokenizer *tokenizer, const char *text, size_t text_len,
                      int32_t *ids, size_t capacity, size_t *num_ids);

/* As pf_tokenize, plus the special tokens the tokenizer's post-processor adds by default (e.g.
   LLaMA's <s>, OPT's </s>): what transformers' tokenizer(text) gives (add_special_tokens=True).
   Use it for prompts. */
pf_result pf_tokenize_special(const pf_tokenizer *tokenizer, const char *text, size_t text_len,
                              int32_t *ids, size_t capacity, size_t *num_ids);

/* How pf_tokenize_pair cuts texts that do not fit max_length (HF's truncation strategies; the
   ids are cut from the end). */
typedef enum pf_truncation {
    PF_TRUNCATION_LONGEST_FIRST = 0, /* the shorter text keeps its ids if the longer can take the
                                        rest; else each gets half (the longer the odd one) */
    PF_TRUNCATION_ONLY_FIRST,        /* only the first text is cut */
    PF_TRUNCATION_ONLY_SECOND        /* only the second */
} pf_truncation;

typedef struct pf_tokenize_options {
    int no_special_tokens;    /* 1: the texts' ids alone, as add_special_tokens=False */
    size_t max_length;        /* 0: no truncation; else at most this many ids in all, special
                                 tokens included (at least as many as the template adds) */
    pf_truncation truncation; /* which text loses ids when they do not fit */
} pf_tokenize_options;

pf_tokenize_options pf_tokenize_options_init(void);

/* A text, or a pair of texts (pair non-NULL; "" is an empty second text), as transformers'
   tokenizer(text, pair, truncation=..., max_length=...): both encoded, cut to max_length, then
   laid out by the tokenizer's post-processor ([CLS] A [SEP] B [SEP] for BERT, <s> A </s></s> B
   </s> for RoBERTa, ...). type_ids (may be NULL) gets each id's token type id (BERT: 0 for the
   first text and its special tokens, 1 for the second). ids and type_ids hold capacity entries;
   *num_ids is the full count (PF_ERROR_BUFFER_TOO_SMALL if it exceeds capacity). options may be
   NULL (special tokens, no truncation). PF_ERROR_INVALID_ARGUMENT where HF fails: the text to cut
   is too short, ONLY_SECOND without a pair, a max_length below the special tokens' count.
   Thread-safe on a loaded tokenizer. */
pf_result pf_tokenize_pair(const pf_tokenizer *tokenizer, const char *text, size_t text_len, const char *pair,
                           size_t pair_len, const pf_tokenize_options *options, int32_t *ids, int32_t *type_ids,
                           size_t capacity, size_t *num_ids);

/* Ids to text bytes (not NUL-terminated unless room remains; *text_len is the full length).
   Unknown ids are an error. Thread-safe on a loaded tokenizer. */
pf_result pf_detokenize(const pf_tokenizer *tokenizer, const int32_t *ids, size_t num_ids,
                        char *text, size_t capacity, size_t *text_len);

/* Number of ids, added tokens included; 0 for NULL. Thread-safe on a loaded tokenizer. */
int pf_tokenizer_vocab_size(const pf_tokenizer *tokenizer);

/* The beginning- and end-of-sequence ids that tokenizer_config.json names (bos_token, eos_token),
   as transformers' tokenizer.bos_token_id / eos_token_id; -1 where it names none. Generation
   stops at the model's eos ids (config.json, generation_config.json), which may differ. */
int32_t pf_tokenizer_bos_id(const pf_tokenizer *tokenizer);
int32_t pf_tokenizer_eos_id(const pf_tokenizer *tokenizer);

/* The id of a token given by its text, NUL-terminated: an added token's (language codes such as
   mBART's "en_XX" or M2M100's "__en__", T5's "<extra_id_0>", "</s>", ...), else the model vocab's
   (as stored: "\u2581Hello" for a SentencePiece piece, "\u0120Hello" for a byte-level one); -1 when
   the tokenizer has no such token, or on NULL. As transformers' convert_tokens_to_ids, e.g. for
   forced_bos_token_id. Thread-safe on a loaded tokenizer. */
int32_t pf_tokenizer_token_id(const pf_tokenizer *tokenizer, const char *token);

/* 1 when id is a special token: an added token marked "special" (<|endoftext|>, <s>, ...) or the
   bos / eos token of tokenizer_config.json; 0 for any other id. Special tokens are what
   transformers' decode(ids, skip_special_tokens=True) leaves out: drop them from the ids before
   pf_detokenize to print text as it does. Thread-safe on a loaded tokenizer. */
int pf_tokenizer_is_special(const pf_tokenizer *tokenizer, int32_t id);

/* ---- chat templates ---------------------------------------------------------------------------- */

/* One turn of a conversation. role: "system", "user", "assistant" or what the template knows;
   content: UTF-8 text, or NULL for a message without content (left out, as transformers drops
   None values). Both are read during the call only. */
typedef struct pf_chat_message {
    const char *role;
    const char *content;
} pf_chat_message;

typedef struct pf_chat_options {
    int add_generation_prompt; /* 1 (the default): end with what opens the assistant's reply */
    const char *date;          /* the date strftime_now() formats, "YYYY-MM-DD" or "YYYY-MM-DD HH:MM[:SS]"
                                  (reproducible output; a day that exists); NULL: the local time now, as
                                  transformers */
    const char *chat_template; /* a Jinja template to use instead of the tokenizer's; NULL: the tokenizer's */
    const char *bos_token, *eos_token; /* the template's bos_token / eos_token; NULL: the tokenizer's
                                          (tokenizer_config.json's), undefined without one */
    int enable_thinking;       /* the template variable enable_thinking that reasoning models' templates
                                  read (Qwen3's: false opens the reply with an empty <think></think>
                                  block, so the model answers without reasoning): -1 (the default):
                                  left undefined, as transformers does when apply_chat_template is
                                  not given it; 0 or 1: defined, false or true (enable_thinking=False
                                  / True); other values are refused. Templates that do not read it
                                  ignore it. Start from pf_chat_options_init: a zeroed struct passes
                                  false */
    const char *tools;         /* the template variable tools, as JSON text: an array of tool definitions
                                  as transformers' apply_chat_template(tools=...) takes them as dicts
                                  (OpenAI's {"type": "function", "function": {"name", "description",
                                  "parameters"}}, or what the template reads); key order kept, as
                                  Python's json.loads keeps it. NULL (the default): None */
} pf_chat_options;

pf_chat_options pf_chat_options_init(void);

/* The tokenizer's chat template: chat_template.jinja beside tokenizer_config.json, else the
   config's chat_template (a string, or the entry named "default" of a list of named templates),
   as transformers picks it. NULL when it has none. Owned by the tokenizer. Any thread. */
const char *pf_tokenizer_chat_template(const pf_tokenizer *tokenizer);

/* Renders messages[0 .. count) through the chat template (options->chat_template, else the
   tokenizer's) into *text, as transformers' tokenizer.apply_chat_template(messages,
   tokenize=False, add_generation_prompt=...) does, byte for byte: a Jinja subset interpreter with
   jinja2's trim_blocks and lstrip_blocks, the variables messages, add_generation_prompt,
   bos_token, eos_token, tools (options->tools, else None), documents (None), enable_thinking (options->enable_thinking:
   undefined at -1, else False or True), and the globals raise_exception,
   strftime_now, namespace, dict and range. The text holds the special tokens as text: tokenize it
   with pf_tokenize (not pf_tokenize_special, which would add a second bos).
   tokenizer may be NULL when options->chat_template is given. options may be NULL (the defaults).
   On success *text is a NUL-terminated string to free with pf_string_free. On failure *text is
   NULL and error (when error_size > 0) holds the message; results:
   PF_ERROR_INVALID_ARGUMENT: NULL arguments, no template, a message without a role,
     options->enable_thinking other than -1, 0 or 1, the template raised an exception
     (raise_exception("...")'s message is the error), or a runtime error (an undefined value
     used, a type mismatch, past the limits on steps, memory or output size);
   PF_ERROR_FORMAT: the template is not valid Jinja;
   PF_ERROR_UNSUPPORTED: the template uses Jinja we do not implement (macros, a filter, test or
     method outside the subset, ...): the message names it;
   PF_ERROR_OUT_OF_MEMORY.
   Any thread, at any time (the tokenizer is only read). */
pf_result pf_apply_chat_template(const pf_tokenizer *tokenizer, const pf_chat_message *messages, int count,
                                 const pf_chat_options *options, char **text, char *error, size_t error_size);

/* pf_apply_chat_template with the conversation as JSON text: an array of message objects, each
   with a string "role", every field given to the template as transformers gives a list of dicts
   (json.loads' values: content as a string or a list of parts, an assistant's "tool_calls", a
   tool's "tool_call_id" and "name", ...), with transformers' reasoning aliases (a message with
   "reasoning_content", "thinking" or "reasoning" gets the first not null of them as both
   "thinking" and "reasoning_content"). Tool calls' arguments are passed as given: templates
   such as Qwen2.5's print `arguments | tojson`, so give them as objects, not JSON strings (as
   vLLM converts OpenAI's strings). Errors as pf_apply_chat_template's, and
   PF_ERROR_INVALID_ARGUMENT for text that is not a JSON array of objects with roles. */
pf_result pf_apply_chat_template_json(const pf_tokenizer *tokenizer, const char *messages_json,
                                      const pf_chat_options *options, char **text, char *error, size_t error_size);

/* ---- preprocessing: images and audio -------------------------------------------------------- */

/* A model's image preprocessing, read from its preprocessor_config.json: what transformers'
   ViTImageProcessor, DeiTImageProcessor and CLIPImageProcessor (and their *Fast / *Pil variants'
   saved configs) do to an image: resize (size as height and width, or shortest_edge; resample 2
   bilinear or 3 bicubic, antialiased as PIL does), centre crop (crop_size, zero padding where the
   image is smaller), rescale (rescale_factor) and normalise (image_mean, image_std). Keys and
   values it does not implement (another resample filter, do_pad, an unknown key) are refused at
   load with a message naming them. Read-only once loaded: any thread, any time. */
typedef struct pf_image_processor pf_image_processor;

/* The two ways transformers 5 computes the same config; their resized pixels differ by one unit
   of 255 here and there (fixed-point precision), and their centre crops of an image smaller than
   the crop by a row or column of padding. */
typedef enum pf_image_backend {
    PF_IMAGE_BACKEND_TORCHVISION = 0, /* what AutoImageProcessor picks where torchvision is installed
                                         (ViTImageProcessor etc.: torch's uint8 antialiased resize) */
    PF_IMAGE_BACKEND_PIL              /* backend="pil" (ViTImageProcessorPil etc., and the default
                                         without torchvision): Pillow 13's resize */
} pf_image_backend;

/* Loads DIR/preprocessor_config.json; the class comes from its image_processor_type (else
   feature_extractor_type, else config.json's model_type), whose defaults fill the keys it leaves
   out. On failure *processor is NULL and error (when error_size > 0) holds the message:
   PF_ERROR_IO (no file), PF_ERROR_FORMAT (malformed JSON, a value of the wrong type or range),
   PF_ERROR_UNSUPPORTED (a class, key or value not implemented), PF_ERROR_INVALID_ARGUMENT (NULL).
   Free with pf_image_processor_free (NULL is fine). */
pf_result pf_image_processor_load(const char *dir, pf_image_backend backend, pf_image_processor **processor,
                                  char *error, size_t error_size);
void pf_image_processor_free(pf_image_processor *processor);

/* The model input's width and height for an image of width x height pixels (each side 1 .. 32768):
   the crop size, else the resized size (CLIP's shortest_edge resize keeps the aspect ratio). */
pf_result pf_image_output_size(const pf_image_processor *processor, int width, int height, int *out_width,
                               int *out_height, char *error, size_t error_size);

/* Preprocesses one 8-bit RGB image: rgb holds height rows of width pixels, each 3 bytes (R, G, B),
   rows one after another without padding. Writes the model input, float [3][out_height][out_width]
   (pf_image_output_size), channel-major as transformers' pixel_values of one image, into out,
   which has room for out_capacity floats (PF_ERROR_BUFFER_TOO_SMALL, nothing written, if too
   small). Bad sizes and NULLs are PF_ERROR_INVALID_ARGUMENT. Any thread; rgb is only read. */
pf_result pf_image_preprocess(const pf_image_processor *processor, const uint8_t *rgb, int width, int height,
                              float *out, size_t out_capacity, char *error, size_t error_size);

/* A model's audio feature extractor, read from its preprocessor_config.json. Read-only once
   loaded: any thread, any time. */
typedef struct pf_audio_processor pf_audio_processor;

typedef enum pf_audio_kind {
    PF_AUDIO_WAVEFORM = 0, /* Wav2Vec2FeatureExtractor (Wav2Vec2, Hubert, XLSR): the samples,
                              zero-mean unit-variance per utterance when do_normalize */
    PF_AUDIO_LOG_MEL,      /* WhisperFeatureExtractor: log-mel spectrogram of the utterance padded
                              with silence (or cut) to chunk_length seconds */
    PF_AUDIO_FBANK         /* Speech2TextFeatureExtractor: Kaldi-style log-mel filter banks (25 ms
                              frames, 10 ms hops), utterance CMVN when do_ceptral_normalize */
} pf_audio_kind;

typedef struct pf_audio_processor_info {
    pf_audio_kind kind;
    int sampling_rate;     /* the samples' rate the model expects, in Hz: resample before */
    int num_mel_bins;      /* mel bins per frame; 0 for PF_AUDIO_WAVEFORM */
    size_t padded_samples; /* PF_AUDIO_LOG_MEL: the samples every input is padded or cut to */
} pf_audio_processor_info;

/* Loads DIR/preprocessor_config.json (its feature_extractor_type names the class). Errors as
   pf_image_processor_load's; dither other than 0 is refused (random noise), and so (before any
   table is built) are n_fft and mel bins whose filter table would exceed 2^22 entries. */
pf_result pf_audio_processor_load(const char *dir, pf_audio_processor **processor, char *error, size_t error_size);
void pf_audio_processor_free(pf_audio_processor *processor);
pf_audio_processor_info pf_audio_processor_get_info(const pf_audio_processor *processor);

/* The features of num_samples samples as a rows x columns matrix of floats, laid out as
   transformers' features of one utterance: WAVEFORM 1 x num_samples; LOG_MEL num_mel_bins x
   frames (chunk_length * sampling_rate / hop_length frames, e.g. 80 x 3000); FBANK frames x
   num_mel_bins (1 + (num_samples - 400) / 160 frames). PF_ERROR_INVALID_ARGUMENT for no samples,
   more than 2^31, or (FBANK) fewer than one frame's 400. The size follows preprocessor_config.json
   (LOG_MEL: chunk_length, hop_length), which may not be trusted: compare it with the model's
   (pf_model_info's num_mel_bins and audio_frames) before allocating and computing the features. */
pf_result pf_audio_features_size(const pf_audio_processor *processor, size_t num_samples, size_t *rows,
                                 size_t *columns, char *error, size_t error_size);

/* Computes the features of mono float samples (in [-1, 1], at the info's sampling_rate) into
   out, room for out_capacity floats (PF_ERROR_BUFFER_TOO_SMALL, nothing written, if fewer than
   rows x columns). A sample that is not finite is PF_ERROR_INVALID_ARGUMENT. FBANK with the
   utterance's variance normalisation gives NaN for a bin that is the same in every frame (silent,
   constant or exactly periodic audio), as transformers does; the models refuse such features
   saying so. Any thread. */
pf_result pf_audio_features(const pf_audio_processor *processor, const float *samples, size_t num_samples,
                            float *out, size_t out_capacity, char *error, size_t error_size);

#ifdef __cplusplus
}
#endif
#endif /* PARALLELFORMERS_H */
