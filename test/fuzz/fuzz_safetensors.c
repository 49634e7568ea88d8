/* model.safetensors (its 8-byte length, JSON header and data) under gpt2-tiny's config. */
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    fuzz_link_fixture("gpt2-tiny", "config.json");
    fuzz_write("model.safetensors", data, size);
    fuzz_load(0);
    return 0;
}
