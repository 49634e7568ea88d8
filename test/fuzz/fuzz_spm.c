/* A SentencePiece model (Marian's source.spm) beside tokenizer-marian's vocab.json and config:
   pf_tokenizer_load, then a fixed text through what it loaded and back. */
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static const char text[] = ">>fr<< Hello  world! caf\xc3\xa9 \xf0\x9f\x98\x80 \xff</s>\xe2\x91\xa0\xe2\x91\xa1 ab";
    pf_tokenizer *tokenizer = NULL;
    char error[256];
    fuzz_link_fixture("tokenizer-marian", "vocab.json");
    fuzz_link_fixture("tokenizer-marian", "tokenizer_config.json");
    fuzz_write("source.spm", data, size);
    if (pf_tokenizer_load(fuzz_dir(), &tokenizer, error, sizeof error) != PF_OK) return 0;
    int32_t ids[256];
    size_t n = 0, length = 0;
    char decoded[1024];
    if (pf_tokenize_special(tokenizer, text, sizeof text - 1, ids, 256, &n) == PF_OK)
        pf_detokenize(tokenizer, ids, n, decoded, sizeof decoded, &length);
    pf_tokenizer_free(tokenizer);
    return 0;
}
