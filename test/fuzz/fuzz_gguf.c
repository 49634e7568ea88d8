/* A .gguf file (header, metadata, tensor infos, data; the config, tensors and tokenizer built from
   them) loaded with pf_load, its tokenizer run on a short text when it has one. */
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char path[256];
    pf_model *model = NULL;
    fuzz_write("model.gguf", data, size);
    fuzz_path(path, sizeof path, "model.gguf");
    if (pf_load(path, NULL, &model) == PF_OK && pf_model_tokenizer(model)) {
        int32_t ids[64];
        size_t n = 0;
        pf_tokenize_special(pf_model_tokenizer(model), "Hello 12 world!", 15, ids, 64, &n);
    }
    pf_free(model);
    return 0;
}
