/* model.safetensors.index.json over gpt2-sharded's config and three shards. */
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static const char *shards[] = {"config.json", "model-00001-of-00003.safetensors", "model-00002-of-00003.safetensors",
                                   "model-00003-of-00003.safetensors"};
    for (size_t i = 0; i < sizeof shards / sizeof shards[0]; i++) fuzz_link_fixture("gpt2-sharded", shards[i]);
    fuzz_write("model.safetensors.index.json", data, size);
    fuzz_load(0);
    return 0;
}
