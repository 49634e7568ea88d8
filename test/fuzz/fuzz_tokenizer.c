/* Arbitrary bytes through real tokenizers (GPT-2's byte-level BPE, LLaMA's
   SentencePiece-style BPE, BLOOM's): the bytes as text, tokenized and decoded back; the bytes as ids, decoded. */
#include "fuzz.h"

static pf_tokenizer *tokenizers[3];

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    static const char *dirs[] = {"tokenizer-gpt2", "llama", "bloom"};
    (void)argc, (void)argv;
    for (int i = 0; i < 3; i++) {
        char dir[512];
        snprintf(dir, sizeof dir, "%s/%s", FUZZ_FIXTURES, dirs[i]);
        if (pf_tokenizer_load(dir, &tokenizers[i], NULL, 0) != PF_OK) abort();
    }
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size == 0) return 0;
    pf_tokenizer *tokenizer = tokenizers[data[0] % 3];
    const char *text = (const char *)data + 1;
    size_t length = size - 1, n = 0, needed = 0, decoded_length = 0;
    pf_tokenize(tokenizer, text, length, NULL, 0, &needed);
    int32_t *ids = (int32_t *)malloc((needed + 2) * sizeof *ids);
    if (!ids) return 0;
    if (pf_tokenize_special(tokenizer, text, length, ids, needed + 2, &n) == PF_OK) {
        pf_detokenize(tokenizer, ids, n, NULL, 0, &decoded_length);
        char *decoded = (char *)malloc(decoded_length + 1);
        if (decoded) pf_detokenize(tokenizer, ids, n, decoded, decoded_length + 1, &decoded_length);
        free(decoded);
    }
    free(ids);
    /* the same bytes as ids, known or not */
    int32_t as_ids[64];
    size_t count = length / sizeof(int32_t) > 64 ? 64 : length / sizeof(int32_t);
    char small[64];
    memcpy(as_ids, text, count * sizeof(int32_t)); /* aligned */
    pf_detokenize(tokenizer, as_ids, count, small, sizeof small, &decoded_length);
    return 0;
}
