/* quantize: a GGUF file written with its matrices in another type, as llama.cpp's llama-quantize
   does (pf_quantize_gguf): q8_0 or q4_0 blocks made by the code parallelformers quantizes with at
   load, so that the copy keeps a quantization made at load; f16, bf16 or f32 to expand one. A model
   directory (config.json, safetensors, tokenizer.json) in place of IN.gguf is saved as GGUF.

   quantize IN.gguf|MODEL_DIR OUT.gguf q8_0|q4_0|f16|bf16|f32 */
#include <stdio.h>
#include <string.h>

#include "../parallelformers.h"

static void usage(FILE *to) {
    fprintf(to, "usage: quantize IN.gguf|MODEL_DIR OUT.gguf TYPE\n"
                "Writes IN.gguf to OUT.gguf with its matrices in TYPE: q8_0, q4_0, f16, bf16 or f32.\n"
                "Vectors, routers (ffn_gate_inp), matrices whose rows are not whole 32-value blocks and\n"
                "the metadata stay as they are. OUT.gguf may be IN.gguf.\n"
                "A model directory (config.json, safetensors, tokenizer.json) is saved as a GGUF file that\n"
                "llama.cpp reads, its matrices in TYPE; what GGUF cannot express is refused, naming it.\n");
}

int main(int argc, char **argv) {
    static const struct { const char *name; pf_dtype dtype; } types[] = {
        {"q8_0", PF_DTYPE_Q8_0}, {"q4_0", PF_DTYPE_Q4_0}, {"f16", PF_DTYPE_F16}, {"bf16", PF_DTYPE_BF16}, {"f32", PF_DTYPE_F32}};
    if (argc == 2 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))) {
        usage(stdout);
        return 0;
    }
    if (argc != 4) {
        usage(stderr);
        return 2;
    }
    pf_dtype dtype = PF_DTYPE_AUTO;
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++)
        if (!strcmp(argv[3], types[i].name)) dtype = types[i].dtype;
    if (dtype == PF_DTYPE_AUTO) {
        fprintf(stderr, "quantize: unknown type '%s' (q8_0, q4_0, f16, bf16 or f32)\n", argv[3]);
        return 2;
    }
    char error[1024] = "";
    if (pf_quantize_gguf(argv[1], argv[2], dtype, error, sizeof error)) {
        fprintf(stderr, "quantize: %s\n", error);
        return 1;
    }
    return 0;
}
