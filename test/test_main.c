/* Runs every test group and ends with one line: "N passed, N failed".
   Usage: test_parallelformers [FIXTURES_DIR [GENERATE_BINARY]] */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "test.h"

int test_passed, test_failed;
const char *test_fixtures = "test/fixtures";
const char *test_generate_binary = "build/generate";

int test_parse_ids(const char *text, int *out, int cap) {
    int n = 0;
    const char *p = text;
    while (*p && *p != '\n') {
        char *end;
        long v = strtol(p, &end, 10);
        if (end == p || n >= cap) return -1;
        out[n++] = (int)v;
        p = end;
        if (*p == ',') p++;
        else if (*p && *p != '\n' && *p != '\r') return -1;
    }
    return n;
}

int test_read_reference(const char *model_dir, test_reference *ref) {
    char path[1024], line[4096];
    memset(ref, 0, sizeof *ref);
    snprintf(path, sizeof path, "%s/reference.txt", model_dir);
    FILE *f = fopen(path, "r");
    if (!f) return -1;
    int fields = 0;
    while (fgets(line, sizeof line, f)) {
        line[strcspn(line, "\r\n")] = 0;
        char *value = strchr(line, '=');
        if (!value) continue;
        *value++ = 0;
        if (!strcmp(line, "prompt_text")) snprintf(ref->prompt_text, sizeof ref->prompt_text, "%s", value), fields++;
        else if (!strcmp(line, "prompt_ids")) ref->num_prompt_ids = test_parse_ids(value, ref->prompt_ids, 64), fields++;
        else if (!strcmp(line, "greedy_ids")) ref->num_greedy_ids = test_parse_ids(value, ref->greedy_ids, 64), fields++;
        else if (!strcmp(line, "max_new_tokens")) ref->max_new_tokens = atoi(value), fields++;
        else if (!strcmp(line, "vocab_size")) ref->vocab_size = atoi(value), fields++;
    }
    fclose(f);
    return fields == 5 && ref->num_prompt_ids > 0 && ref->num_greedy_ids > 0 ? 0 : -1;
}

float *test_read_floats(const char *path, size_t *count) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    fseek(f, 0, SEEK_SET);
    float *data = size > 0 ? (float *)malloc((size_t)size) : NULL;
    if (!data || fread(data, 1, (size_t)size, f) != (size_t)size) {
        free(data);
        fclose(f);
        return NULL;
    }
    fclose(f);
    *count = (size_t)size / sizeof(float);
    return data;
}

float test_max_abs_diff(const float *a, const float *b, size_t n) {
    float worst = 0;
    for (size_t i = 0; i < n; i++) {
        float d = fabsf(a[i] - b[i]);
        if (!(d <= worst)) worst = d; /* NaN counts as the worst */
    }
    return worst;
}

int main(int argc, char **argv) {
    if (argc > 1) test_fixtures = argv[1];
    if (argc > 2) test_generate_binary = argv[2];
    struct { const char *name; void (*run)(void); } groups[] = {
        {"tokenizer", test_tokenizer},
        {"models", test_models},
        {"bad input", test_bad_input},
        {"generation", test_generation},
        {"cli", test_cli},
    };
    for (size_t i = 0; i < sizeof groups / sizeof groups[0]; i++) {
        int before_pass = test_passed, before_fail = test_failed;
        groups[i].run();
        printf("%-10s %d passed, %d failed\n", groups[i].name, test_passed - before_pass, test_failed - before_fail);
    }
    printf("%d passed, %d failed\n", test_passed, test_failed);
    return test_failed ? 1 : 0;
}
