/* config.json (its quantization_config) over llama-gptq8's packed weights, or llama-ct-int4's where
   it names compressed-tensors, or gpt_oss-mxfp4's MXFP4 experts where it names mxfp4, or
   llama-awq's (4-bit groups kept in Q4_G blocks) where it names awq, or llama-fp8-tensor's (kept
   in E4M3 blocks) where it names "fp8"; what loads is run on a few ids on one rank in the default
   dtype (the blocks assembled: Q8_G, Q4_G, E4M3, MXFP4) and split over 2 in fp32, whose slicing
   decodes the packed values (2 ranks would cut the 64-wide fixtures' blocks: refused by default). */
#include "fuzz.h"

/* Whether the input holds `needle` anywhere. */
static int fuzz_holds(const uint8_t *data, size_t size, const char *needle) {
    size_t n = strlen(needle);
    for (size_t at = 0; n <= size && at <= size - n; at++)
        if (!memcmp(data + at, needle, n)) return 1;
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const char *fixture = fuzz_holds(data, size, "compressed-tensors") ? "llama-ct-int4"
                          : fuzz_holds(data, size, "mxfp4")            ? "gpt_oss-mxfp4"
                          : fuzz_holds(data, size, "awq")              ? "llama-awq"
                          : fuzz_holds(data, size, "\"fp8\"")          ? "llama-fp8-tensor"
                                                                       : "llama-gptq8";
    fuzz_link_fixture(fixture, "model.safetensors");
    fuzz_write("config.json", data, size);
    pf_load_options options = pf_load_options_init();
    pf_model *model = NULL;
    options.skip_tokenizer = 1;
    options.skip_generation_config = 1;
    if (pf_load(fuzz_dir(), &options, &model) == PF_OK) {
        pf_parallel_options parallel = pf_parallel_options_init();
        parallel.device = PF_DEVICE_CPU;
        parallel.max_sequence_length = 8;
        static float logits[3 * 4096];
        int32_t ids[3] = {1, 2, 3};
        for (int ranks = 1; ranks <= 2; ranks++) {
            parallel.dtype = ranks == 1 ? PF_DTYPE_AUTO : PF_DTYPE_F32;
            if (pf_parallelize(model, ranks, &parallel) == PF_OK && pf_get_info(model).vocab_size <= 4096)
                (void)pf_forward(model, ids, 1, 3, logits);
        }
    }
    pf_free(model);
    return 0;
}
