/* A tiny test framework shared by the test files: CHECK counts, reports failures with their
   place, and never stops the run, so one summary line ends every suite. */
#ifndef PF_TEST_H
#define PF_TEST_H

#include <stdio.h>

extern int test_passed, test_failed;

/* The directory holding the fixtures (test/fixtures), set by test_main from argv or default. */
extern const char *test_fixtures;

#define CHECK_MSG(cond, ...)                                                                     \
    do {                                                                                          \
        if (cond) {                                                                               \
            test_passed++;                                                                        \
        } else {                                                                                  \
            test_failed++;                                                                        \
            fprintf(stderr, "FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond);                      \
            fprintf(stderr, __VA_ARGS__);                                                         \
            fputc('\n', stderr);                                                                  \
        }                                                                                         \
    } while (0)

#define CHECK(cond) CHECK_MSG(cond, "%s", "")

/* A model fixture's reference.txt, as written by make_fixtures.py. */
typedef struct test_reference {
    char prompt_text[256];
    int prompt_ids[64], num_prompt_ids;
    int greedy_ids[64], num_greedy_ids;
    int max_new_tokens, vocab_size;
} test_reference;

int test_read_reference(const char *model_dir, test_reference *ref);
/* A whole little-endian float32 file; NULL on failure. The caller frees it. */
float *test_read_floats(const char *path, size_t *count);
/* Comma-separated ints into out (at most cap); returns the count, or -1 if malformed. */
int test_parse_ids(const char *text, int *out, int cap);
float test_max_abs_diff(const float *a, const float *b, size_t n);
/* The path of the generate binary, for the CLI tests. */
extern const char *test_generate_binary;

/* Each test file provides one entry point, called from test_main.c. */
void test_tokenizer(void);
void test_models(void);
void test_bad_input(void);
void test_cli(void);
void test_generation(void);

#endif
