/* A program built against the installed library by test/install/run.sh: it prints the library's
   version string, then the greedy continuation of a few ids of MODEL_DIR on two CPU ranks, as
   build/generate --ids prints it. Fails when the header and the library it links disagree. */
#include <stdio.h>

#include <parallelformers.h>

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: hello MODEL_DIR\n");
        return 2;
    }
    pf_build_info build = pf_get_build_info();
    if (build.version_major != PF_VERSION_MAJOR || build.version_minor != PF_VERSION_MINOR ||
        build.version_patch != PF_VERSION_PATCH) {
        fprintf(stderr, "hello: header %s, library %s\n", PF_VERSION_STRING, pf_version_string());
        return 1;
    }
    pf_model *model = NULL;
    pf_parallel_options po = pf_parallel_options_init();
    pf_generate_options go = pf_generate_options_init();
    const int32_t prompt[] = {391, 330, 11};
    int32_t out[4];
    int n = 0;
    po.device = PF_DEVICE_CPU;
    go.max_new_tokens = 4;
    if (pf_load(argv[1], NULL, &model) || pf_parallelize(model, 2, &po) || pf_generate(model, prompt, 3, &go, out, 4, &n)) {
        fprintf(stderr, "hello: %s\n", pf_error_message(model));
        pf_free(model);
        return 1;
    }
    printf("%s\n", pf_version_string());
    for (int i = 0; i < n; i++) printf("%s%d", i ? "," : "", (int)out[i]);
    printf("\n");
    pf_free(model);
    return 0;
}
