/* A tiny test framework shared by the test programs (test_parallelformers and test_cuda): CHECK
   counts, reports failures with their place, and never stops the run, so one summary line ends
   every suite. The helpers are in test_util.c, linked into both programs. */
#ifndef PF_TEST_H
#define PF_TEST_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "../parallelformers.h"

extern int test_passed, test_failed;

/* The directory holding the fixtures (test/fixtures), set by each program's main from argv. */
extern const char *test_fixtures;
/* The path of the generate binary, for the CLI tests. */
extern const char *test_generate_binary;

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

#define TEST_MAX_IDS 64       /* ids in a reference's prompt or greedy tokens, or in a case's row */
#define TEST_MAX_ROWS 8       /* prompts in a generation case; outputs up to 4 times as many */
#define TEST_MAX_GEN_CASES 32 /* cases in a generation_cases.txt */

/* A model fixture's reference.txt, as written by make_fixtures.py. */
typedef struct test_reference {
    char prompt_text[256];
    int prompt_ids[TEST_MAX_IDS], num_prompt_ids;
    int greedy_ids[TEST_MAX_IDS], num_greedy_ids;
    int max_new_tokens, vocab_size;
} test_reference;

int test_read_reference(const char *model_dir, test_reference *ref);
/* A whole file, with a NUL after its size bytes; NULL on failure. The caller frees it. */
char *test_read_file(const char *path, size_t *size);
/* The path of an example program beside build/generate (test_generate_binary), e.g. "transcribe". */
void test_example_path(const char *name, char *path, size_t size);
/* Runs a shell command, returning its exit status (-1 if it did not exit) and all it printed to
   stdout (add 2>&1 for stderr too), cut to size. */
int test_run_output(const char *command, char *out, size_t size);
int test_write_file(const char *path, const void *data, size_t size); /* 0 on success */
/* A whole little-endian float32 file; NULL on failure. The caller frees it. */
float *test_read_floats(const char *path, size_t *count);
/* Registers the policy.json of every fixture that has one (architectures not compiled in, such
   as my-llama), for programs that load every fixture; the count registered. */
int test_register_fixture_policies(void);
/* Comma-separated ints into out (at most cap); returns the count, or -1 if malformed. */
int test_parse_ids(const char *text, int *out, int cap);
float test_max_abs_diff(const float *a, const float *b, size_t n);
/* x rounded to the nearest value with `bits` bits after the leading one and no bit below 2^lowest
   (ties to even): fp16 is (10, -24), bf16 (7, -133). Exact: scaling by powers of two. */
float test_round_to_format(float x, int bits, int lowest);

/* One case of a fixture's generation_cases.txt (written by make_generation_fixtures.py):
   transformers' generate kwargs, the prompts, and the sequences (and beam scores) it returned. */
typedef struct test_gen_case {
    char name[64];
    pf_generate_options options; /* points into eos and bad */
    int32_t eos[4];
    int32_t suppress[16], begin_suppress[16];
    int32_t bad_ids[8][4];
    pf_token_sequence bad[8];
    int prompts[TEST_MAX_ROWS][TEST_MAX_IDS], prompt_lengths[TEST_MAX_ROWS], num_prompts;
    int32_t global[TEST_MAX_ROWS][TEST_MAX_IDS]; /* LED's global= lines, one a prompt after them */
    const int32_t *global_rows[TEST_MAX_ROWS];   /* options.global_attention points here */
    int num_global;
    int outputs[TEST_MAX_ROWS * 4][TEST_MAX_IDS], output_lengths[TEST_MAX_ROWS * 4], num_outputs;
    float scores[TEST_MAX_ROWS * 4];
    int num_scores;
} test_gen_case;

/* Every case of test_fixtures/FIXTURE/generation_cases.txt (at most cap); the count, or -1 if
   the file is missing or malformed. */
int test_read_gen_cases(const char *fixture, test_gen_case *cases, int cap);
/* One case on the model: the sequences token for token and the beam scores within 1e-4
   relative, reported as "WHAT: case NAME: ..."; returns 1 if all matched. */
int test_check_gen_case(pf_model *m, const char *what, const test_gen_case *c);
/* What generate() takes from generation_config.json when its kwargs leave it unset (the forced
   tokens, the decoder start token), as pf_model_generate_options(m) has it, into each case. */
void test_gen_cases_with_model_defaults(const pf_model *m, test_gen_case *cases, int count);

/* An encoder fixture's reference.txt (make_encoder_fixtures.py): rows of ids and token types (and
   a layout model's boxes, a Longformer's global tokens, VisualBERT's regions, LUKE's entities). */
#define TEST_ENCODER_ROWS 4
#define TEST_MAX_REGION_FLOATS 256 /* a row's region features */
#define TEST_MAX_ENTITIES 8         /* a row's entities */
#define TEST_MAX_MENTION 8          /* an entity's positions */
typedef struct test_encoder_reference {
    int rows;
    int32_t ids[TEST_ENCODER_ROWS][TEST_MAX_IDS], types[TEST_ENCODER_ROWS][TEST_MAX_IDS];
    int lengths[TEST_ENCODER_ROWS];
    int has_types;        /* 1: token types given (types<i>=); XLM's references without languages have none:
                             run with NULL token_type_ids */
    int has_boxes;        /* 1: a layout model's (boxes<i>=): run with pf_encode_layout */
    int32_t boxes[TEST_ENCODER_ROWS][4 * TEST_MAX_IDS]; /* x0, y0, x1, y1 of each token */
    int has_global;       /* 1: Longformer's given global tokens (global<i>=): run with pf_encode_global */
    int32_t global[TEST_ENCODER_ROWS][TEST_MAX_IDS]; /* 1 for a token with global attention */
    int output_lengths[TEST_ENCODER_ROWS]; /* output_lengths=: each row's tokens in hidden.bin (Funnel's
                                              pooled rows); without the line, lengths[] */
    int has_regions;      /* 1: VisualBERT's (regions<i>= and regions.bin): run with pf_encode_regions */
    int num_regions[TEST_ENCODER_ROWS], region_dim; /* each row's regions, after its tokens; their width */
    float regions[TEST_ENCODER_ROWS][TEST_MAX_REGION_FLOATS]; /* each row's features, region after region */
    int has_region_boxes; /* 1: LXMERT's (boxes.bin beside regions.bin): run with pf_encode_region_boxes */
    int region_box_dim;
    float region_boxes[TEST_ENCODER_ROWS][TEST_MAX_REGION_FLOATS]; /* each row's boxes, region after region */
    int has_entities;     /* 1: LUKE's (entities<i>=, mentions<i>=, mention_length=): run with pf_encode_entities */
    int num_entities[TEST_ENCODER_ROWS], mention_length; /* each row's entities, after its tokens */
    int32_t entity_ids[TEST_ENCODER_ROWS][TEST_MAX_ENTITIES];
    int32_t entity_positions[TEST_ENCODER_ROWS][TEST_MAX_ENTITIES * TEST_MAX_MENTION]; /* mention_length each, -1 padded */
    int has_table;        /* 1: TAPAS's (table<i>=): run with pf_encode_table */
    int32_t table[TEST_ENCODER_ROWS][7 * TEST_MAX_IDS]; /* each token's 7 table types */
} test_encoder_reference;
int test_read_encoder_reference(const char *dir, test_encoder_reference *ref); /* 0 on success */
/* The reference's rows through pf_encode, or the call that takes what the reference has beside the
   tokens (boxes, global: [rows] pointers to the reference's own rows). */
pf_result test_encode_reference(pf_model *m, const test_encoder_reference *ref, const int32_t *const *ids,
                                const int32_t *const *types, const int32_t *const *boxes,
                                const int32_t *const *global, pf_encoding **e);

/* Each test file of test_parallelformers provides one entry point, called from test_main.c. */
void test_tokenizer(void);
void test_models(void);
void test_moe(void);
void test_cpu_kernels(void);
void test_bad_input(void);
void test_config(void);
void test_encoders(void);
void test_reformer(void);
void test_seq2seq(void);
void test_whisper(void);
void test_cli(void);
void test_chat(void);
void test_generation(void);
void test_json_output(void);
void test_fuzz(void);
void test_policies(void);
void test_gguf(void);
void test_quantized(void);
void test_preprocessing(void);
void test_input_checks(void);

#endif
