/* generation_config.json next to gpt2-tiny's config and weights. */
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    fuzz_link_fixture("gpt2-tiny", "config.json");
    fuzz_link_fixture("gpt2-tiny", "model.safetensors");
    fuzz_write("generation_config.json", data, size);
    fuzz_load(1);
    return 0;
}
