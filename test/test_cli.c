/* build/generate, as scripts use it: --ids with --dump-logits on 1 and 3 ranks must give
   transformers' logits and greedy tokens for the hub-style checkpoint; errors exit non-zero. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "test.h"

#define TOLERANCE_HF 1e-4f

/* Runs a shell command, returning its exit status and its last stdout line. */
static int run(const char *command, char *last_line, size_t cap) {
    FILE *p = popen(command, "r");
    if (!p) return -1;
    char line[4096];
    if (last_line) last_line[0] = 0;
    while (fgets(line, sizeof line, p))
        if (last_line) snprintf(last_line, cap, "%s", line);
    int status = pclose(p);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* dtype: NULL, or the --dtype value (the fixture's own, so nothing is lost). */
static void check_ids_and_logits(const char *fixture, int ranks, const char *dtype) {
    char dir[1024], command[4096], last[4096], dump[64], ids[1024] = "";
    test_reference ref;
    snprintf(dir, sizeof dir, "%s/%s", test_fixtures, fixture);
    if (test_read_reference(dir, &ref)) {
        CHECK_MSG(0, "%s: no reference", fixture);
        return;
    }
    for (int i = 0; i < ref.num_prompt_ids; i++)
        snprintf(ids + strlen(ids), sizeof ids - strlen(ids), "%s%d", i ? "," : "", ref.prompt_ids[i]);
    snprintf(dump, sizeof dump, "/tmp/pf_cli_logits_%d.bin", (int)getpid());
    snprintf(command, sizeof command, "%s %s --ids %s -n %d --gpus %d --device cpu --dump-logits %s%s%s",
             test_generate_binary, dir, ids, ref.max_new_tokens, ranks, dump, dtype ? " --dtype " : "", dtype ? dtype : "");
    int status = run(command, last, sizeof last);
    CHECK_MSG(status == 0, "%s exited with %d", command, status);
    int got[64];
    int n = test_parse_ids(last, got, 64);
    int same = n == ref.num_greedy_ids;
    for (int i = 0; same && i < n; i++) same = got[i] == ref.greedy_ids[i];
    CHECK_MSG(same, "%s on %d ranks: printed ids \"%s\" are not transformers' greedy ids", fixture, ranks, last);

    size_t count = 0, ref_count = 0;
    float *logits = test_read_floats(dump, &count);
    char ref_path[1100];
    snprintf(ref_path, sizeof ref_path, "%s/reference_logits.bin", dir);
    float *want = test_read_floats(ref_path, &ref_count);
    CHECK_MSG(logits && want && count == ref_count, "%s: dumped %zu logits, want %zu", fixture, count, ref_count);
    if (logits && want && count == ref_count) {
        float diff = test_max_abs_diff(logits, want, count);
        CHECK_MSG(diff <= TOLERANCE_HF, "%s on %d ranks: dumped logits differ by %g", fixture, ranks, diff);
    }
    free(logits);
    free(want);
    remove(dump);
}

/* The version and features the library reports agree with the header and with each other. */
static void check_build_info(void) {
    pf_build_info info = pf_get_build_info();
    const char *text = pf_version_string();
    CHECK_MSG(info.version_major == PF_VERSION_MAJOR && info.version_minor == PF_VERSION_MINOR &&
                  info.version_patch == PF_VERSION_PATCH,
              "library %d.%d.%d, header %s", info.version_major, info.version_minor, info.version_patch, PF_VERSION_STRING);
    CHECK_MSG(!strncmp(text, PF_VERSION_STRING " ", strlen(PF_VERSION_STRING) + 1), "version string \"%s\"", text);
    static const char *const words[3][2] = {{"-cuda", "+cuda"}, {"-avx2", "+avx2"}, {"-avx512", "+avx512"}};
    int flags[3] = {info.cuda, info.avx2, info.avx512};
    for (int i = 0; i < 3; i++)
        CHECK_MSG((flags[i] == 0 || flags[i] == 1) && strstr(text, words[i][flags[i] != 0]) && !strstr(text, words[i][flags[i] == 0]),
                  "version string \"%s\" disagrees with the build info's %s = %d", text, words[i][1] + 1, flags[i]);
}

void test_cli(void) {
    check_build_info();
    check_ids_and_logits("gpt2-hub", 1, NULL);
    check_ids_and_logits("gpt2-hub", 3, NULL);
    check_ids_and_logits("gpt2-tiny", 2, NULL);
    check_ids_and_logits("gpt2-tiny-bf16", 2, "bf16");
    check_ids_and_logits("gpt2-tiny-f16", 1, "f16");

    char command[2048], last[4096];
    test_reference ref;
    char dir[1024];
    snprintf(dir, sizeof dir, "%s/gpt2-tiny", test_fixtures);
    if (test_read_reference(dir, &ref) == 0) {
        /* A text prompt prints the prompt and its continuation. */
        snprintf(command, sizeof command, "%s %s -n 5 --gpus 2 '%s'", test_generate_binary, dir, ref.prompt_text);
        CHECK(run(command, last, sizeof last) == 0);
        CHECK_MSG(strncmp(last, ref.prompt_text, strlen(ref.prompt_text)) == 0, "printed \"%s\"", last);
    }
    /* The parallelformers README's beam search, as recorded from transformers (gpt2-tiny's
       beam5_ngram4 case: 5 beams, no repeated 4-gram, max_length 15 = 4 new tokens). */
    snprintf(command, sizeof command, "%s %s --ids 391,330,11,305,277,259,283,220,354,388,331 -n 4 --beams 5 "
             "--no-repeat-ngram 4 --gpus 2", test_generate_binary, dir);
    CHECK(run(command, last, sizeof last) == 0);
    CHECK_MSG(!strcmp(last, "59,74,342,342\n"), "beam search printed \"%s\"", last);
    /* A batch file of id lines: one output line per prompt, the last one's as its greedy_ids. */
    FILE *f = fopen("/tmp/pf_cli_batch.txt", "w");
    if (f) {
        fprintf(f, "391,330\n");
        for (int i = 0; i < ref.num_prompt_ids; i++) fprintf(f, "%s%d", i ? "," : "", ref.prompt_ids[i]);
        fprintf(f, "\n");
        fclose(f);
    }
    snprintf(command, sizeof command, "%s %s --batch-file /tmp/pf_cli_batch.txt --ids-lines -n %d", test_generate_binary,
             dir, ref.max_new_tokens);
    CHECK(run(command, last, sizeof last) == 0);
    int got[64], n = test_parse_ids(last, got, 64), same = n == ref.num_greedy_ids;
    for (int i = 0; same && i < n; i++) same = got[i] == ref.greedy_ids[i];
    CHECK_MSG(same, "batch file: last line \"%s\" is not the greedy reference", last);
    remove("/tmp/pf_cli_batch.txt");
    snprintf(command, sizeof command, "%s %s --ids 1 --beams 0 2>/dev/null", test_generate_binary, dir);
    CHECK(run(command, NULL, 0) != 0);

    snprintf(command, sizeof command, "%s /nonexistent/dir --ids 1,2 2>/dev/null", test_generate_binary);
    CHECK(run(command, NULL, 0) != 0);
    snprintf(command, sizeof command, "%s %s --ids 1,x 2>/dev/null", test_generate_binary, dir);
    CHECK(run(command, NULL, 0) != 0);
    snprintf(command, sizeof command, "%s %s --ids 99999 2>/dev/null", test_generate_binary, dir);
    CHECK(run(command, NULL, 0) != 0);
    snprintf(command, sizeof command, "%s %s --gpus 0 --ids 1 2>/dev/null", test_generate_binary, dir);
    CHECK(run(command, NULL, 0) != 0);
    snprintf(command, sizeof command, "%s 2>/dev/null", test_generate_binary);
    CHECK(run(command, NULL, 0) != 0);
}
