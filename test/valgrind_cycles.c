/* Load, parallelize, run and free a model over and over, for valgrind (make valgrind): every
   request kind (forward, greedy, sampling, beam search; an encoder's pf_encode and pf_embed; an
   encoder-decoder's pf_forward_seq2seq and encoder output; a speech encoder-decoder's
   pf_generate_audio, pf_forward_audio and pf_encode_audio_features) on 1 and 2 ranks, then pf_to_cpu and
   the other rank count again, so that an
   uninitialised read, an invalid access or a leak anywhere on those paths is an error.
   Usage: valgrind_cycles MODEL_DIR [MODEL_DIR...] [-n CYCLES] (20 by default). Cycles go round
   the directories. Exits non-zero when a call fails. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../parallelformers.h"

static int failed(pf_model *m, const char *what, pf_result r) {
    if (r == PF_OK) return 0;
    fprintf(stderr, "%s: %s (%s)\n", what, pf_result_string(r), pf_error_message(m));
    return 1;
}

/* An encoder's requests: rows of different lengths with segments, and sentence embeddings. */
static int encoder_requests(pf_model *m) {
    int32_t first[5] = {2, 7, 9, 11, 3}, second[3] = {2, 5, 3}, types[5] = {0, 0, 1, 1, 1};
    const int32_t *rows[2] = {first, second}, *type_rows[2] = {types, NULL};
    if (pf_get_info(m).model_type && strcmp(pf_get_info(m).model_type, "bert")) type_rows[0] = NULL; /* segments: BERT's */
    int lengths[2] = {5, 3};
    pf_encoding *e = NULL;
    float embeddings[2 * 1024];
    int bad = failed(m, "pf_encode", pf_encode(m, rows, type_rows, lengths, 2, &e));
    pf_encoding_free(e);
    if (pf_get_info(m).hidden_size <= 1024) bad = bad || failed(m, "pf_embed", pf_embed(m, rows, lengths, 2, NULL, embeddings));
    return bad;
}

static int requests(pf_model *m, int ranks);

/* pf_parallelize; a GGUF whose quantized blocks a split would cut (llama-quant's 256-wide K
   blocks on 2 ranks) is expanded to fp32 instead, as the refusal says to, so that both paths run. */
static pf_result parallelize(pf_model *m, int ranks, pf_parallel_options *po) {
    pf_result r = pf_parallelize(m, ranks, po);
    if (r == PF_ERROR_UNSUPPORTED && po->dtype == PF_DTYPE_AUTO && strstr(pf_error_message(m), "blocks")) {
        pf_parallel_options expanded = *po;
        expanded.dtype = PF_DTYPE_F32;
        r = pf_parallelize(m, ranks, &expanded);
    }
    return r;
}

/* A speech encoder-decoder's requests (Whisper, Speech2Text) on two rows of made-up features
   (rows of two lengths where the model takes any): beam search, greedy with the model's prompt
   (its language detection where it has one), sampling, the teacher-forced logits and the
   encoder's output. */
static int audio_requests(pf_model *m) {
    pf_model_info info = pf_get_info(m);
    int frames[2] = {info.audio_frames ? info.audio_frames : 23, info.audio_frames ? info.audio_frames : 15}, bad = 0;
    size_t count = (size_t)info.num_mel_bins * (size_t)frames[0];
    float *features = (float *)malloc(2 * count * sizeof(float)), *logits = NULL;
    if (!features) return 1;
    for (size_t i = 0; i < 2 * count; i++) features[i] = (float)((i * 7919) % 1000) / 500.0f - 1.0f;
    const float *rows[2] = {features, features + count};
    pf_generation g;
    pf_generate_options o = pf_model_generate_options(m);
    o.max_new_tokens = 5;
    o.num_beams = 2;
    if (!failed(m, "audio beam search", pf_generate_audio(m, rows, frames, 2, &o, &g))) pf_generation_free(&g);
    else bad = 1;
    o.num_beams = 1;
    o.ignore_eos = 1;
    if (!bad && !failed(m, "audio greedy", pf_generate_audio(m, rows, frames, 2, &o, &g))) pf_generation_free(&g);
    o.do_sample = 1;
    o.seed = 3;
    if (!bad && !failed(m, "audio sampling", pf_generate_audio(m, rows, frames, 2, &o, &g))) pf_generation_free(&g);
    int32_t start[2] = {info.decoder_start_token_id, 7};
    const int32_t *decoder[2] = {start, start};
    int decoder_lengths[2] = {2, 1};
    logits = (float *)malloc((size_t)3 * info.vocab_size * sizeof(float));
    bad = bad || !logits || failed(m, "pf_forward_audio", pf_forward_audio(m, rows, frames, decoder, decoder_lengths, 2, logits));
    pf_encoding *e = NULL;
    bad = bad || failed(m, "pf_encode_audio_features", pf_encode_audio_features(m, rows, frames, 2, &e));
    pf_encoding_free(e);
    free(logits);
    free(features);
    return bad;
}

/* A directory with a policy.json (an architecture not compiled in, as test/fixtures/my-llama) is
   loaded through that policy, registered for the cycle and unregistered after it. */
static int one_cycle(const char *dir, int ranks) {
    char policy[1024], model_type[128] = "", error[512];
    snprintf(policy, sizeof policy, "%s/policy.json", dir);
    FILE *f = fopen(policy, "r");
    if (f) fclose(f);
    if (f && pf_register_policy_file(policy, error, sizeof error) != PF_OK) {
        fprintf(stderr, "pf_register_policy_file: %s\n", error);
        return 1;
    }
    pf_model *m = NULL;
    pf_result r = pf_load(dir, NULL, &m);
    if (!r && f) snprintf(model_type, sizeof model_type, "%s", pf_get_info(m).model_type);
    int bad = failed(m, "pf_load", r) || requests(m, ranks);
    pf_free(m);
    if (model_type[0] && pf_unregister_policy(model_type, error, sizeof error) != PF_OK) {
        fprintf(stderr, "pf_unregister_policy: %s\n", error);
        bad = 1;
    }
    return bad;
}

/* Every request kind of the model's kind, on `ranks` ranks and after pf_to_cpu; the caller frees m. */
static int requests(pf_model *m, int ranks) {
    if (pf_get_info(m).num_mel_bins) {
        pf_parallel_options po = pf_parallel_options_init();
        po.max_batch = 4;
        int bad = failed(m, "pf_parallelize", parallelize(m, ranks, &po)) || audio_requests(m);
        bad = bad || failed(m, "pf_to_cpu", pf_to_cpu(m)) || audio_requests(m);
        return bad;
    }
    if (pf_get_info(m).is_encoder) {
        pf_parallel_options po = pf_parallel_options_init();
        po.max_batch = 2;
        int bad = failed(m, "pf_parallelize", parallelize(m, ranks, &po)) || encoder_requests(m);
        bad = bad || failed(m, "pf_to_cpu", pf_to_cpu(m)) || encoder_requests(m);
        return bad;
    }
    int vocab = pf_get_info(m).vocab_size;
    pf_parallel_options po = pf_parallel_options_init();
    po.max_batch = 4;
    po.max_sequence_length = 32;
    int32_t prompt[4] = {1, 2, 3, 4}, shorter[2] = {5, 6};
    const int32_t *prompts[2] = {prompt, shorter};
    int lengths[2] = {4, 2};
    float *logits = (float *)malloc((size_t)2 * 4 * vocab * sizeof(float));
    pf_generation g;
    int bad = !logits;
    bad = bad || failed(m, "pf_parallelize", parallelize(m, ranks, &po));
    /* beam search first, on buffers no earlier request wrote */
    pf_generate_options o = pf_generate_options_init();
    o.max_new_tokens = 6;
    o.num_beams = 2;
    o.num_return_sequences = 2;
    o.no_repeat_ngram_size = 2;
    if (!bad && !failed(m, "beam search", pf_generate_batch(m, prompts, lengths, 2, &o, &g))) pf_generation_free(&g);
    o.num_beams = 4;
    o.num_return_sequences = 1;
    if (!bad && !failed(m, "beam search, 4 beams", pf_generate_batch(m, prompts, lengths, 1, &o, &g))) pf_generation_free(&g);
    o = pf_generate_options_init();
    o.max_new_tokens = 6;
    o.ignore_eos = 1; /* every step runs, whatever the weights */
    if (!bad && !failed(m, "greedy", pf_generate_batch(m, prompts, lengths, 2, &o, &g))) pf_generation_free(&g);
    o.do_sample = 1;
    o.num_return_sequences = 2;
    o.seed = 7;
    if (!bad && !failed(m, "sampling", pf_generate_batch(m, prompts, lengths, 2, &o, &g))) pf_generation_free(&g);
    if (pf_get_info(m).is_encoder_decoder) { /* teacher-forced logits and the encoder's output */
        int32_t start[2] = {pf_get_info(m).decoder_start_token_id, 7};
        const int32_t *decoder[2] = {start, start};
        int decoder_lengths[2] = {2, 1};
        bad = bad || failed(m, "pf_forward_seq2seq", pf_forward_seq2seq(m, prompts, lengths, decoder, decoder_lengths, 2, logits));
        pf_encoding *e = NULL;
        bad = bad || failed(m, "pf_encode", pf_encode(m, prompts, NULL, lengths, 2, &e));
        pf_encoding_free(e);
    } else {
        bad = bad || failed(m, "pf_forward", pf_forward(m, prompt, 1, 4, logits));
    }

    bad = bad || failed(m, "pf_to_cpu", pf_to_cpu(m));
    bad = bad || failed(m, "pf_parallelize again", parallelize(m, 3 - ranks, &po));
    o = pf_generate_options_init();
    o.max_new_tokens = 4;
    o.ignore_eos = 1;
    if (!bad && !failed(m, "greedy on the other rank count", pf_generate_batch(m, prompts, lengths, 2, &o, &g)))
        pf_generation_free(&g);
    free(logits);
    return bad;
}

int main(int argc, char **argv) {
    const char *dirs[16];
    int num_dirs = 0, cycles = 20;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-n") && i + 1 < argc) cycles = atoi(argv[++i]);
        else if (num_dirs < 16) dirs[num_dirs++] = argv[i];
    }
    if (!num_dirs || cycles < 1) {
        fprintf(stderr, "usage: valgrind_cycles MODEL_DIR [MODEL_DIR...] [-n CYCLES]\n");
        return 2;
    }
    for (int c = 0; c < cycles; c++)
        if (one_cycle(dirs[c % num_dirs], 1 + c % 2)) {
            fprintf(stderr, "cycle %d (%s) failed\n", c, dirs[c % num_dirs]);
            return 1;
        }
    printf("%d cycles passed\n", cycles);
    return 0;
}
