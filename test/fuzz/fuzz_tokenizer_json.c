/* tokenizer.json: pf_tokenizer_load, then a round trip of a fixed text through what it loaded. */
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static const char text[] = "Hello world! caf\xc3\xa9 \xf0\x9f\x98\x80 \xff<|endoftext|>  12 ab";
    pf_tokenizer *tokenizer = NULL;
    char error[256];
    fuzz_write("tokenizer.json", data, size);
    if (pf_tokenizer_load(fuzz_dir(), &tokenizer, error, sizeof error) != PF_OK) return 0;
    int32_t ids[256];
    size_t n = 0, length = 0;
    char decoded[1024];
    if (pf_tokenize_special(tokenizer, text, sizeof text - 1, ids, 256, &n) == PF_OK)
        pf_detokenize(tokenizer, ids, n, decoded, sizeof decoded, &length);
    for (int32_t id = -1; id < 8; id++) pf_tokenizer_is_special(tokenizer, id);
    pf_tokenizer_vocab_size(tokenizer);
    pf_tokenizer_free(tokenizer);
    return 0;
}
