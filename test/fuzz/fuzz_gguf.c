/* A .gguf file (header, metadata, tensor infos, data; the config, tensors and tokenizer built from
   them) loaded with pf_load, its tokenizer run on a short text when it has one; then, when it is a
   decoder small enough to be cheap, split onto one CPU rank in fp32, fp16 or Q8_0 (picked by the
   file's size: the plain tensors' conversions and the requantizer of the dequantized blocks) and
   run forward on four ids. The KV cache is sized by the options here, not by the file's context
   length. Any file (loadable or not) small enough is also written by pf_quantize_gguf as Q8_0 or
   Q4_0, and the copy loaded. */
#include "fuzz.h"

/* Weights beyond this many bytes in the file are not split and run (a forward costs about their
   size; the seeds are far below it). */
#define FUZZ_MAX_RUN_BYTES (1u << 20)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char path[256];
    pf_model *model = NULL;
    fuzz_write("model.gguf", data, size);
    fuzz_path(path, sizeof path, "model.gguf");
    if (size <= FUZZ_MAX_RUN_BYTES) {
        char copy[256];
        fuzz_path(copy, sizeof copy, "copy.gguf");
        if (pf_quantize_gguf(path, copy, size % 2 ? PF_DTYPE_Q8_0 : PF_DTYPE_Q4_0, NULL, 0) == PF_OK) {
            pf_load(copy, NULL, &model);
            pf_free(model);
            model = NULL;
        }
    }
    if (pf_load(path, NULL, &model) != PF_OK) {
        pf_free(model);
        return 0;
    }
    if (pf_model_tokenizer(model)) {
        int32_t ids[64];
        size_t n = 0;
        pf_tokenize_special(pf_model_tokenizer(model), "Hello 12 world!", 15, ids, 64, &n);
    }
    pf_model_info info = pf_get_info(model);
    if (!info.is_encoder && !info.is_encoder_decoder && info.vocab_size > 0 && size <= FUZZ_MAX_RUN_BYTES &&
        (size_t)info.vocab_size * (size_t)info.hidden_size <= FUZZ_MAX_RUN_BYTES) {
        static const pf_dtype dtypes[3] = {PF_DTYPE_F32, PF_DTYPE_F16, PF_DTYPE_Q8_0};
        pf_parallel_options options = pf_parallel_options_init();
        options.device = PF_DEVICE_CPU;
        options.dtype = dtypes[size % 3];
        options.max_sequence_length = 8;
        options.max_batch = 1;
        if (pf_parallelize(model, 1, &options) == PF_OK) {
            int32_t ids[4];
            float *logits = (float *)malloc(4 * (size_t)info.vocab_size * sizeof *logits);
            for (int i = 0; i < 4; i++) ids[i] = (int32_t)((size_t)(i * 7 + 1) % (size_t)info.vocab_size);
            if (logits) pf_forward(model, ids, 1, 4, logits);
            free(logits);
        }
    }
    pf_free(model);
    return 0;
}
