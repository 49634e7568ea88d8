/* fuzz.h: what the libFuzzer targets in test/fuzz share. Each target writes the fuzzed bytes as
   one file of a model directory (the rest from a fixture) and runs the public API on it: a crash,
   a hang, a leak or a sanitizer report is a finding; any pf_result is fine. */
#ifndef FUZZ_H
#define FUZZ_H

#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../parallelformers.h"

#ifndef FUZZ_FIXTURES
#define FUZZ_FIXTURES "test/fixtures"
#endif

/* This process's model directory, made on first use. */
static const char *fuzz_dir(void) {
    static char dir[64];
    if (!dir[0]) {
        snprintf(dir, sizeof dir, "/tmp/pf_fuzz_XXXXXX");
        if (!mkdtemp(dir)) abort();
    }
    return dir;
}

static void fuzz_path(char *out, size_t cap, const char *name) { snprintf(out, cap, "%s/%s", fuzz_dir(), name); }

static void fuzz_write(const char *name, const uint8_t *data, size_t size) {
    char path[256];
    fuzz_path(path, sizeof path, name);
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(data, 1, size, f) != size) abort();
    fclose(f);
}

/* FIXTURE/NAME in the directory as a symbolic link (the big files are not copied each run). */
static void fuzz_link_fixture(const char *fixture, const char *name) {
    char path[256], target[512];
    fuzz_path(path, sizeof path, name);
    snprintf(target, sizeof target, "%s/%s/%s", FUZZ_FIXTURES, fixture, name);
    unlink(path);
    if (symlink(target, path)) abort();
}

/* Loads the directory without its tokenizer and frees it. */
static void fuzz_load(int read_generation_config) {
    pf_load_options options = pf_load_options_init();
    pf_model *model = NULL;
    options.skip_tokenizer = 1;
    options.skip_generation_config = !read_generation_config;
    if (pf_load(fuzz_dir(), &options, &model) == PF_OK) {
        pf_model_info info = pf_get_info(model);
        pf_generate_options defaults = pf_model_generate_options(model);
        (void)info, (void)defaults;
    }
    pf_free(model);
}

#endif
