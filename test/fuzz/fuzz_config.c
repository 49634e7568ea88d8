/* config.json over gpt2-tiny's weights. */
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    fuzz_link_fixture("gpt2-tiny", "model.safetensors");
    fuzz_write("config.json", data, size);
    fuzz_load(0);
    return 0;
}
