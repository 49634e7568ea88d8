/* Crashes, hangs and over-reads found by fuzzing and by abusing the API (issue 17): each minimised
   input is a case here, and must end in a pf_result with a message (or in the right answer).
   Every case runs under alarm(), so a case that hangs fails the run with its name instead of
   blocking it. The model directories are written by the test itself; the configs that are
   parser inputs come from test/fuzz_seeds, the seed corpus of later fuzz targets. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "test.h"

/* Generous for the sanitizer and valgrind builds; a healthy case takes well under a second. */
#define CASE_SECONDS 120

static const char *current_case = "";

static void on_alarm(int sig) {
    (void)sig;
    static const char prefix[] = "FAIL test_fuzz.c: hung (alarm): ";
    ssize_t ignored = write(2, prefix, sizeof prefix - 1);
    ignored = write(2, current_case, strlen(current_case));
    ignored = write(2, "\n", 1);
    (void)ignored;
    _exit(1);
}

static void begin_case(const char *name) {
    current_case = name;
    alarm(CASE_SECONDS);
}

static void end_case(void) { alarm(0); }

/* Checks a result code and that the model's message holds `needle`. */
#define CHECK_FAILS(m, got, want, needle)                                                           \
    CHECK_MSG((got) == (want) && strstr(pf_error_message(m), (needle)) != NULL,                    \
              "%s: got %s (\"%s\"), want %s mentioning \"%s\"", current_case, pf_result_string(got), \
              pf_error_message(m), pf_result_string(want), (needle))

/* ---- writing model directories ---- */

static char tmp_dir[256];

static void dir_path(char *out, size_t cap, const char *name) { snprintf(out, cap, "%s/%s", tmp_dir, name); }

static void remove_in_dir(const char *name) {
    char path[512];
    dir_path(path, sizeof path, name);
    unlink(path);
}

static void clean_dir(void) {
    const char *names[] = {"config.json", "model.safetensors", "generation_config.json", "tokenizer.json"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) remove_in_dir(names[i]);
}

/* A fixture loaded from test/fixtures, or NULL (a failed check) when it does not load. */
static pf_model *load_fixture(const char *name) {
    char dir[1024];
    pf_model *m = NULL;
    snprintf(dir, sizeof dir, "%s/%s", test_fixtures, name);
    pf_result r = pf_load(dir, NULL, &m);
    CHECK_MSG(r == PF_OK, "%s: %s", dir, pf_error_message(m));
    if (r == PF_OK) return m;
    pf_free(m);
    return NULL;
}

/* ---- the cases ---- */

/* Issue 17.9: a NULL output gets a message naming it, not an empty one. */
static void case_memory_info_null(void) {
    begin_case("pf_get_memory_info(m, 0, NULL)");
    pf_model *m = load_fixture("gpt2-tiny");
    if (m) {
        CHECK(pf_parallelize(m, 1, NULL) == PF_OK);
        pf_result r = pf_get_memory_info(m, 0, NULL);
        CHECK_FAILS(m, r, PF_ERROR_INVALID_ARGUMENT, "info");
    }
    pf_free(m);
    end_case();
}

void test_fuzz(void) {
    snprintf(tmp_dir, sizeof tmp_dir, "/tmp/pf_fuzz_XXXXXX");
    if (!mkdtemp(tmp_dir)) {
        CHECK_MSG(0, "cannot create a temporary directory");
        return;
    }
    signal(SIGALRM, on_alarm);
    case_memory_info_null();
    signal(SIGALRM, SIG_DFL);
    clean_dir();
    rmdir(tmp_dir);
}
