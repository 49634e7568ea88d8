/* Runs every test group and ends with one line: "N passed, N failed".
   Usage: test_parallelformers [FIXTURES_DIR [GENERATE_BINARY]]
   PF_TEST_GROUPS=models,policies runs only the groups named (while working on them; make test
   runs all). */
#include <stdlib.h>
#include <string.h>

#include "test.h"

/* Whether the comma-separated list names the group. */
static int test_list_has(const char *list, const char *name) {
    size_t n = strlen(name);
    for (const char *p = list; *p;) {
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        if (len == n && !strncmp(p, name, n)) return 1;
        p += len + (end != NULL);
    }
    return 0;
}

int main(int argc, char **argv) {
    if (argc > 1) test_fixtures = argv[1];
    if (argc > 2) test_generate_binary = argv[2];
    struct { const char *name; void (*run)(void); } groups[] = {
        {"tokenizer", test_tokenizer},
        {"chat", test_chat},
        {"preprocess", test_preprocessing},
        {"models", test_models},
        {"moe", test_moe},
        {"kernels", test_cpu_kernels},
        {"bad input", test_bad_input},
        {"config", test_config},
        {"encoders", test_encoders},
        {"reformer", test_reformer},
        {"seq2seq", test_seq2seq},
        {"whisper", test_whisper},
        {"generation", test_generation},
        {"json", test_json_output},
        {"cli", test_cli},
        {"fuzz", test_fuzz},
        {"policies", test_policies},
        {"gguf", test_gguf},
        {"quantized", test_quantized},
        {"input", test_input_checks},
    };
    const char *only = getenv("PF_TEST_GROUPS");
    for (size_t i = 0; i < sizeof groups / sizeof groups[0]; i++) {
        if (only && !test_list_has(only, groups[i].name)) continue;
        int before_pass = test_passed, before_fail = test_failed;
        groups[i].run();
        printf("%-10s %d passed, %d failed\n", groups[i].name, test_passed - before_pass, test_failed - before_fail);
    }
    printf("%d passed, %d failed\n", test_passed, test_failed);
    return test_failed ? 1 : 0;
}
