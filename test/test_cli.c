/* build/generate, as scripts use it: --ids with --dump-logits on 1 and 3 ranks must give
   transformers' logits and greedy tokens for the hub-style checkpoint; errors exit non-zero. And
   as people use it: --help, --version, messages that name the wrong flag, what it prints. */
#define _XOPEN_SOURCE 600 /* posix_openpt */
#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
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


/* The CLI explains itself: --help has a line for every option, --version says the library's,
   and a wrong flag or value is named with what is allowed (exit status 2). */
static void check_cli_help(const char *dir) {
    static const char *const options[] = {"--ids", "--batch-file", "--ids-lines", "--global-tokens", "-n, --max-new-tokens", "-r, --ranks", "--gpus", "-c, --ctx-size",
                                          "--device", "--dtype", "--bf16-products", "--kv-cache", "--no-cuda-graphs", "--dump-logits", "--policy", "--beams", "--return",
                                          "--no-repeat-ngram", "--sample", "--temperature", "--top-k", "--top-p",
                                          "--repetition-penalty", "--min-p", "--presence-penalty", "--frequency-penalty",
                                          "--stop", "-f, --file", "--ignore-eos", "--token-delay-ms", "--seed", "--special", "--perplexity", "--chat", "--system",
                                          "-i, --interactive", "-v, --verbose", "-h, --help",
                                          "--version"};
    char command[2048], out[16384];
    snprintf(command, sizeof command, "%s --help", test_generate_binary);
    CHECK(test_run_output(command, out, sizeof out) == 0);
    for (size_t i = 0; i < sizeof options / sizeof options[0]; i++) { /* "  -n, --max-new-tokens N  ...", "      --ids ..." */
        char line_start[64];
        snprintf(line_start, sizeof line_start, options[i][1] == '-' ? "\n      %s " : "\n  %s ", options[i]);
        CHECK_MSG(strstr(out, line_start), "--help has no line for %s", options[i]);
    }
    snprintf(command, sizeof command, "%s --version", test_generate_binary);
    CHECK(test_run_output(command, out, sizeof out) == 0);
    CHECK_MSG(strstr(out, pf_version_string()) != NULL, "--version printed \"%s\"", out);

    static const struct {
        const char *arguments, *said[2]; /* what the message must name */
    } wrong[] = {
        {"--ids 1 --beams 0", {"--beams", "an integer from 1 to 10000, not \"0\""}},
        {"--ids 1 -n 2.5", {"-n ", "an integer from 1 to 1000000"}},
        {"--ids 1 --device gpu", {"--device", "cpu, cuda or auto"}},
        {"--ids 1 --dtype fp8", {"--dtype", "f32, f16, bf16, q8 or q4"}},
        {"--ids 1 --kv-cache q8", {"--kv-cache", "f32, f16 or bf16"}},
        {"--ids 1 --top-p=0", {"--top-p", "above 0, at most 1"}},
        {"--ids 1 --temperature -1", {"--temperature", "from 0 to"}},
        {"--ids 1 --seed", {"--seed needs a value", "an integer from 0"}},
        {"--ids 1 --frobnicate", {"unknown option", "--frobnicate"}},
        {"--ids 1 --sample=yes", {"--sample", "takes no value"}},
        {"--ids 1 --return 2", {"--return", "--sample or --beams"}},
        {"--ids 1 'a prompt'", {"PROMPT", "--ids"}},
        {"", {"PROMPT", "--batch-file"}},
        {"--ids 1 -c 0", {"-c", "an integer from 1"}},
        {"--perplexity x.txt --ids 1", {"--perplexity", "no PROMPT"}},
    };
    for (size_t i = 0; i < sizeof wrong / sizeof wrong[0]; i++) {
        snprintf(command, sizeof command, "%s %s %s 2>&1", test_generate_binary, dir, wrong[i].arguments);
        int status = test_run_output(command, out, sizeof out);
        CHECK_MSG(status == 2 && strstr(out, wrong[i].said[0]) && strstr(out, wrong[i].said[1]),
                  "generate %s: exit %d, said \"%s\"", wrong[i].arguments, status, out);
    }
    snprintf(command, sizeof command, "%s 2>&1", test_generate_binary);
    CHECK(test_run_output(command, out, sizeof out) == 2 && strstr(out, "MODEL_DIR"));
    /* a policy that cannot be registered stops it before the model is read */
    snprintf(command, sizeof command, "%s %s --ids 1 --policy /nonexistent/policy.json 2>&1", test_generate_binary, dir);
    CHECK_MSG(test_run_output(command, out, sizeof out) == 1 && strstr(out, "/nonexistent/policy.json"), "--policy: \"%s\"", out);
}

/* What it prints: --temperature 0 is greedy; special tokens only with --special; a fresh seed
   without --seed, shown by -v and repeatable with --seed; a note when the context length ends
   the generation; -v's summary and memory table. */
static void check_cli_output(const char *dir, const test_reference *ref) {
    char command[4096], out[16384], ids[1024] = "", greedy[1024] = "";
    for (int i = 0; i < ref->num_prompt_ids; i++) snprintf(ids + strlen(ids), sizeof ids - strlen(ids), "%s%d", i ? "," : "", ref->prompt_ids[i]);
    for (int i = 0; i < ref->num_greedy_ids; i++) snprintf(greedy + strlen(greedy), sizeof greedy - strlen(greedy), "%s%d", i ? "," : "", ref->greedy_ids[i]);

    snprintf(command, sizeof command, "%s %s --ids %s -n %d --sample --temperature 0", test_generate_binary, dir, ids,
             ref->max_new_tokens);
    CHECK(test_run_output(command, out, sizeof out) == 0);
    CHECK_MSG(!strcmp(out, greedy) || (!strncmp(out, greedy, strlen(greedy)) && !strcmp(out + strlen(greedy), "\n")),
              "--temperature 0 printed \"%s\", not the greedy ids %s", out, greedy);

    /* gpt2-tiny's greedy continuation of its prompt ends with <|endoftext|> (id 499) before 60
       tokens: left out of the text unless --special, streamed or not (a batch file). */
    char batch_path[64]; /* per process: suites of other checkouts may run at the same time */
    snprintf(batch_path, sizeof batch_path, "/tmp/pf_cli_special_%d.txt", (int)getpid());
    FILE *f = fopen(batch_path, "w");
    if (f) fprintf(f, "%s\n", ref->prompt_text), fclose(f);
    snprintf(command, sizeof command, "%s %s --ids %s -n 60", test_generate_binary, dir, ids);
    CHECK(test_run_output(command, out, sizeof out) == 0);
    CHECK_MSG(strlen(out) > 5 && !strcmp(out + strlen(out) - 5, ",499\n"), "greedy -n 60 no longer ends with eos: %s", out);
    for (int special = 0; special <= 1; special++)
        for (int batch_file = 0; batch_file <= 1; batch_file++) {
            if (batch_file)
                snprintf(command, sizeof command, "%s %s -n 60 --batch-file %s%s", test_generate_binary, dir, batch_path,
                         special ? " --special" : "");
            else
                snprintf(command, sizeof command, "%s %s -n 60 '%s'%s", test_generate_binary, dir, ref->prompt_text,
                         special ? " --special" : "");
            CHECK(test_run_output(command, out, sizeof out) == 0);
            CHECK_MSG(!strstr(out, "<|endoftext|>") == !special, "%s printed \"%s\"", command, out);
        }
    remove(batch_path);

    /* Sampling without --seed: a fresh seed each run, which -v shows and --seed repeats. */
    unsigned long long seeds[2] = {0, 0};
    char sampled[2][1024];
    for (int i = 0; i < 2; i++) {
        snprintf(command, sizeof command, "%s %s --ids %s -n 8 --sample -v 2>&1", test_generate_binary, dir, ids);
        CHECK(test_run_output(command, out, sizeof out) == 0);
        const char *seed = strstr(out, "seed ");
        CHECK_MSG(seed && sscanf(seed, "seed %llu", &seeds[i]) == 1, "-v printed no seed: %s", out);
        const char *last = strrchr(out, '\n'), *line = out; /* the ids: the only line of digits and commas */
        sampled[i][0] = 0;
        for (; line && line < last; line = strchr(line, '\n') + 1)
            if (line[0] >= '0' && line[0] <= '9' && strspn(line, "0123456789,") == strcspn(line, "\n"))
                snprintf(sampled[i], sizeof sampled[i], "%.*s", (int)strcspn(line, "\n"), line);
    }
    CHECK_MSG(seeds[0] != seeds[1], "two runs sampled with the same seed %llu", seeds[0]);
    snprintf(command, sizeof command, "%s %s --ids %s -n 8 --sample --seed %llu", test_generate_binary, dir, ids, seeds[1]);
    CHECK(test_run_output(command, out, sizeof out) == 0);
    CHECK_MSG(sampled[1][0] && !strncmp(out, sampled[1], strlen(sampled[1])), "--seed %llu printed %s; -v's run printed %s",
              seeds[1], out, sampled[1]);

    /* Prompt id 2's greedy continuation meets no eos before the 64 positions end. */
    snprintf(command, sizeof command, "%s %s --ids 2 -n 70 2>&1", test_generate_binary, dir);
    CHECK(test_run_output(command, out, sizeof out) == 0);
    CHECK_MSG(strstr(out, "context length cut the generation short: 63 tokens"), "-n 70 after 1 token of 64: %s", out);
    snprintf(command, sizeof command, "%s %s --ids 2 -n 63 2>&1", test_generate_binary, dir);
    CHECK(test_run_output(command, out, sizeof out) == 0);
    CHECK_MSG(!strstr(out, "context"), "-n 63 after 1 token of 64: %s", out);

    snprintf(command, sizeof command, "%s %s -n 4 --gpus 2 --dtype bf16 -v '%s' 2>&1 >/dev/null", test_generate_binary, dir,
             ref->prompt_text);
    CHECK(test_run_output(command, out, sizeof out) == 0);
    CHECK_MSG(strstr(out, "cpu backend, 2 ranks, bf16 weights: 4 new tokens in ") && strstr(out, " tokens/s") &&
                  strstr(out, "(MiB)") && strstr(out, "\n0 ") && strstr(out, "\n1 ") && !strstr(out, "\n2 ") &&
                  !strstr(out, "seed"),
              "-v printed \"%s\"", out);
}

/* dtype: NULL, or the --dtype value (the fixture's own, so nothing is lost). kv_cache: NULL, or the
   --kv-cache value, on a fixture whose greedy steps win by 0.07 or more: the ids alone are checked
   (test_models bounds the logits of a 16-bit cache). */
static void check_ids_and_logits(const char *fixture, int ranks, const char *dtype, const char *kv_cache) {
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
    char policy[1100], policy_option[1200] = ""; /* an architecture not compiled in: its policy.json */
    snprintf(policy, sizeof policy, "%s/policy.json", dir);
    if (access(policy, R_OK) == 0) snprintf(policy_option, sizeof policy_option, " --policy %s", policy);
    snprintf(command, sizeof command, "%s %s --ids %s -n %d --gpus %d --device cpu --dump-logits %s%s%s%s%s%s",
             test_generate_binary, dir, ids, ref.max_new_tokens, ranks, dump, dtype ? " --dtype " : "", dtype ? dtype : "",
             kv_cache ? " --kv-cache " : "", kv_cache ? kv_cache : "", policy_option);
    int status = run(command, last, sizeof last);
    CHECK_MSG(status == 0, "%s exited with %d", command, status);
    int got[64];
    int n = test_parse_ids(last, got, 64);
    int same = n == ref.num_greedy_ids;
    for (int i = 0; same && i < n; i++) same = got[i] == ref.greedy_ids[i];
    CHECK_MSG(same, "%s on %d ranks%s%s: printed ids \"%s\" are not transformers' greedy ids", fixture, ranks,
              kv_cache ? " with --kv-cache " : "", kv_cache ? kv_cache : "", last);
    if (kv_cache) {
        remove(dump);
        return;
    }
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

/* --bf16-products with --dtype bf16 prints the greedy ids of transformers running bf16 products
   (llama-q8's bf16p reference: each step wins by 0.09 or more) on 2 ranks; with fp32 weights it
   fails (exit 1) with the library's message, which names the option. */
static void check_bf16_products_cli(void) {
    char dir[1024], ref_dir[1100], command[4096], out[16384], ids[1024] = "";
    test_reference ref;
    snprintf(dir, sizeof dir, "%s/llama-q8", test_fixtures);
    snprintf(ref_dir, sizeof ref_dir, "%s/bf16p", dir);
    if (test_read_reference(ref_dir, &ref)) {
        CHECK_MSG(0, "%s: no reference", ref_dir);
        return;
    }
    for (int i = 0; i < ref.num_prompt_ids; i++)
        snprintf(ids + strlen(ids), sizeof ids - strlen(ids), "%s%d", i ? "," : "", ref.prompt_ids[i]);
    snprintf(command, sizeof command, "%s %s --ids %s -n %d --gpus 2 --device cpu --dtype bf16 --bf16-products",
             test_generate_binary, dir, ids, ref.max_new_tokens);
    char last[4096];
    CHECK_MSG(run(command, last, sizeof last) == 0, "%s failed", command);
    int got[64], n = test_parse_ids(last, got, 64), same = n == ref.num_greedy_ids;
    for (int i = 0; same && i < n; i++) same = got[i] == ref.greedy_ids[i];
    CHECK_MSG(same, "--bf16-products printed ids \"%s\", not transformers' bf16-products greedy ids", last);
    snprintf(command, sizeof command, "%s %s --ids %s -n 2 --device cpu --bf16-products 2>&1", test_generate_binary, dir, ids);
    CHECK_MSG(test_run_output(command, out, sizeof out) == 1 && strstr(out, "bf16_products"),
              "--bf16-products with fp32 weights printed \"%s\"", out);
}

/* The version and features the library reports agree with the header and with each other. */
static void check_build_info(void) {
    pf_build_info info = pf_get_build_info();
    const char *text = pf_version_string();
    CHECK_MSG(info.version_major == PF_VERSION_MAJOR && info.version_minor == PF_VERSION_MINOR &&
                  info.version_patch == PF_VERSION_PATCH,
              "library %d.%d.%d, header %s", info.version_major, info.version_minor, info.version_patch, PF_VERSION_STRING);
    CHECK_MSG(!strncmp(text, PF_VERSION_STRING " ", strlen(PF_VERSION_STRING) + 1), "version string \"%s\"", text);
    static const char *const words[4][2] = {{"-cuda", "+cuda"}, {"-avx2", "+avx2"}, {"-avx512", "+avx512"}, {"-amx", "+amx"}};
    int flags[4] = {info.cuda, info.avx2, info.avx512, info.amx};
    for (int i = 0; i < 4; i++)
        CHECK_MSG((flags[i] == 0 || flags[i] == 1) && strstr(text, words[i][flags[i] != 0]) && !strstr(text, words[i][flags[i] == 0]),
                  "version string \"%s\" disagrees with the build info's %s = %d", text, words[i][1] + 1, flags[i]);
}

/* Runs generate on FIXTURE with the text in prompt_file as its PROMPT argument (bytes as they
   are, newlines included: "$(cat)" would drop the last ones) and extra options; its stdout in out. */
static int run_with_prompt_file(const char *dir, const char *prompt_file, const char *extra, char *out, size_t cap) {
    char command[2048];
    snprintf(command, sizeof command, "p=\"$(cat %s; printf x)\"; %s %s %s \"${p%%x}\"", prompt_file, test_generate_binary, dir, extra);
    return test_run_output(command, out, cap);
}

/* --chat and -i put the prompt through the model's chat template (gpt2-tiny-chat's, a short one): the
   reply must be what the plain command gives for the templated text, and -i's second turn what
   it gives for the whole conversation, the first reply included. */
static void check_cli_chat(void) {
    char dir[1024], command[2048], reply1[4096], reply2[4096], plain[8192], expected[8192], file[64];
    static const char *const turn1 = "s: Be brief.\nu: Hi\na:";
    snprintf(dir, sizeof dir, "%s/gpt2-tiny-chat", test_fixtures);
    snprintf(file, sizeof file, "/tmp/pf_cli_chat_%d.txt", (int)getpid());

    snprintf(command, sizeof command, "%s %s -n 3 --chat --system 'Be brief.' Hi", test_generate_binary, dir);
    CHECK(test_run_output(command, reply1, sizeof reply1) == 0);
    size_t len1 = strlen(reply1);
    CHECK_MSG(len1 > 0 && reply1[len1 - 1] == '\n', "--chat printed \"%s\"", reply1);
    CHECK(test_write_file(file, turn1, strlen(turn1)) == 0);
    CHECK(run_with_prompt_file(dir, file, "-n 3", plain, sizeof plain) == 0);
    snprintf(expected, sizeof expected, "%s%s", turn1, reply1);
    CHECK_MSG(!strcmp(plain, expected), "--chat replied \"%s\", the templated prompt gives \"%s\"", reply1, plain);

    /* -i: two turns; the second prompt is the conversation with the first reply */
    snprintf(command, sizeof command, "printf 'Hi\\nOk\\n' | %s %s -n 3 -i --system 'Be brief.'", test_generate_binary, dir);
    char both[8192];
    CHECK(test_run_output(command, both, sizeof both) == 0);
    CHECK_MSG(!strncmp(both, reply1, len1), "-i's first reply \"%s\" is not --chat's \"%s\"", both, reply1);
    snprintf(reply2, sizeof reply2, "%s", strncmp(both, reply1, len1) ? "" : both + len1);
    char turn2[4096];
    snprintf(turn2, sizeof turn2, "s: Be brief.\nu: Hi\na: %.*s\nu: Ok\na:", (int)len1 - 1, reply1);
    CHECK(test_write_file(file, turn2, strlen(turn2)) == 0);
    CHECK(run_with_prompt_file(dir, file, "-n 3", plain, sizeof plain) == 0);
    snprintf(expected, sizeof expected, "%s%s", turn2, reply2);
    CHECK_MSG(reply2[0] && !strcmp(plain, expected), "-i's second reply \"%s\", the conversation gives \"%s\"", reply2, plain);
    remove(file);

    /* a model without a template, and options that do not go together */
    snprintf(command, sizeof command, "%s %s/gpt2-tiny --chat Hi 2>&1", test_generate_binary, test_fixtures);
    CHECK(test_run_output(command, plain, sizeof plain) == 1 && strstr(plain, "no chat template"));
    snprintf(command, sizeof command, "%s %s -i Hi 2>&1", test_generate_binary, dir);
    CHECK(test_run_output(command, plain, sizeof plain) == 2 && strstr(plain, "-i reads the prompts from stdin"));
    snprintf(command, sizeof command, "%s %s --system x Hi 2>&1", test_generate_binary, dir);
    CHECK(test_run_output(command, plain, sizeof plain) == 2 && strstr(plain, "--system goes with --chat"));
    snprintf(command, sizeof command, "%s %s --chat --ids 1,2 2>&1", test_generate_binary, dir);
    CHECK(test_run_output(command, plain, sizeof plain) == 2 && strstr(plain, "--chat takes a text PROMPT"));
}

/* --stop ends at the token that completes the text, left out of what is printed (streamed, and
   from a file with -f); --frequency-penalty changes the greedy text; --stop with --beams is a
   command-line mistake. */
static void check_cli_stop_and_file(const char *dir) {
    char command[2048], plain[4096], stopped[4096], from_file[4096], penalised[4096];
    snprintf(command, sizeof command, "%s %s -n 20 'hello there'", test_generate_binary, dir);
    CHECK(run(command, plain, sizeof plain) == 0);
    size_t prefix = strlen("hello there");
    CHECK_MSG(strlen(plain) > prefix + 8, "printed \"%s\"", plain);
    if (strlen(plain) <= prefix + 8) return;
    char stop[8], want[4096];
    snprintf(stop, sizeof stop, "%.3s", plain + prefix + 4); /* from the middle of the continuation */
    snprintf(want, sizeof want, "%.*s\n", (int)(strstr(plain + prefix, stop) - plain), plain);
    snprintf(command, sizeof command, "%s %s -n 20 --stop '%s' 'hello there'", test_generate_binary, dir, stop);
    CHECK(run(command, stopped, sizeof stopped) == 0);
    CHECK_MSG(!strcmp(stopped, want), "--stop '%s' printed \"%s\", want \"%s\"", stop, stopped, want);
    char path[256];
    snprintf(path, sizeof path, "/tmp/pf_cli_prompt_%d.txt", (int)getpid());
    FILE *f = fopen(path, "w");
    if (f) fputs("hello there", f), fclose(f);
    snprintf(command, sizeof command, "%s %s -n 20 --stop '%s' -f %s", test_generate_binary, dir, stop, path);
    CHECK(run(command, from_file, sizeof from_file) == 0);
    CHECK_MSG(!strcmp(from_file, want), "-f printed \"%s\", want \"%s\"", from_file, want);
    remove(path);
    snprintf(command, sizeof command, "%s %s -n 20 --frequency-penalty 5 'hello there'", test_generate_binary, dir);
    CHECK(run(command, penalised, sizeof penalised) == 0);
    CHECK_MSG(strcmp(penalised, plain), "--frequency-penalty 5 printed the plain text \"%s\"", penalised);
    snprintf(command, sizeof command, "%s %s --stop x --beams 2 hello 2>&1", test_generate_binary, dir);
    CHECK(test_run_output(command, plain, sizeof plain) == 2 && strstr(plain, "--stop needs greedy search"));
}

/* Reads what the pseudo-terminal's program writes into out (appended, NUL-terminated) until
   `want` is in it or `seconds` pass; whether it came. */
static int pty_wait_for(int master, char *out, size_t cap, const char *want, double seconds) {
    struct timespec start, now;
    clock_gettime(CLOCK_MONOTONIC, &start);
    for (;;) {
        if (strstr(out, want)) return 1;
        clock_gettime(CLOCK_MONOTONIC, &now);
        double left = seconds - (double)(now.tv_sec - start.tv_sec) - (double)(now.tv_nsec - start.tv_nsec) * 1e-9;
        if (left <= 0) return 0;
        struct pollfd p = {master, POLLIN, 0};
        if (poll(&p, 1, (int)(left * 1000) + 1) <= 0) continue;
        size_t used = strlen(out);
        ssize_t n = read(master, out + used, cap - used - 1);
        if (n <= 0) return strstr(out, want) != NULL; /* the program closed the terminal */
        out[used + (size_t)n] = 0;
    }
}

/* -i on a terminal (a pseudo-terminal, as a person at a shell): Ctrl-C stops a reply mid-way and
   the conversation goes on; Ctrl-C at the prompt ends the program with status 0. */
static void check_cli_interrupt(void) {
    char dir[1024];
    snprintf(dir, sizeof dir, "%s/gpt2-tiny-chat", test_fixtures);
    int master = posix_openpt(O_RDWR | O_NOCTTY);
    if (master < 0 || grantpt(master) || unlockpt(master) || !ptsname(master)) {
        CHECK_MSG(0, "no pseudo-terminal");
        if (master >= 0) close(master);
        return;
    }
    char slave_name[256], command[2048];
    snprintf(slave_name, sizeof slave_name, "%s", ptsname(master));
    /* through the shell, as the other checks' popen: test_generate_binary may be a command with its
       runner (qemu-user for a cross build) */
    snprintf(command, sizeof command, "exec %s %s -i --ignore-eos -n 40 --token-delay-ms 50", test_generate_binary, dir);
    pid_t child = fork();
    if (child == 0) { /* a session whose controlling terminal is the slave: Ctrl-C there is SIGINT */
        setsid();
        int slave = open(slave_name, O_RDWR);
        if (slave < 0) _exit(126);
        dup2(slave, 0), dup2(slave, 1), dup2(slave, 2);
        close(master);
        execl("/bin/sh", "sh", "-c", command, (char *)NULL);
        _exit(127);
    }
    static char out[1 << 16];
    out[0] = 0;
    int ok = child > 0 && pty_wait_for(master, out, sizeof out, "> ", 20);
    CHECK_MSG(ok, "-i shows no prompt on a terminal: \"%s\"", out);
    for (int turn = 0; ok && turn < 2; turn++) {
        size_t before = strlen(out);
        if (write(master, turn ? "Ok\n" : "Hi\n", 3) != 3) break;
        /* a few tokens of the reply (40 at 50 ms: 2 s in all), then Ctrl-C */
        struct timespec pause = {0, 300 * 1000000L};
        nanosleep(&pause, NULL);
        if (write(master, "\x03", 1) != 1) break;
        ok = pty_wait_for(master, out + before, sizeof out - before, "interrupted", 10) &&
             pty_wait_for(master, out + before, sizeof out - before, "> ", 5);
        CHECK_MSG(ok, "turn %d: Ctrl-C did not stop the reply (it prints \"interrupted\" then) and give the prompt back: \"%s\"", turn, out + before);
    }
    if (ok && write(master, "\x03", 1) == 1) { /* at the prompt: the end */
        int status = -1;
        for (int i = 0; i < 100 && waitpid(child, &status, WNOHANG) == 0; i++) {
            struct timespec pause = {0, 50 * 1000000L};
            char drain[4096];
            struct pollfd p = {master, POLLIN, 0};
            if (poll(&p, 1, 0) > 0 && read(master, drain, sizeof drain) <= 0) { /* closed */ }
            nanosleep(&pause, NULL);
            status = -1;
        }
        if (status == -1 && waitpid(child, &status, WNOHANG) == 0) status = -2;
        CHECK_MSG(status >= 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0,
                  "Ctrl-C at the prompt: the program %s", status == -2 ? "is still running" : "did not exit with 0");
        if (status >= 0) child = -1;
    }
    if (child > 0) kill(child, SIGKILL), waitpid(child, NULL, 0);
    close(master);
}

/* --perplexity against transformers' on the same text and windows (make_perplexity_reference.py),
   on 1 and 2 ranks; the default rank count (every core) runs it too. */
static void check_cli_perplexity(void) {
    char path[1024], command[2048], out[4096], *text;
    size_t size = 0;
    snprintf(path, sizeof path, "%s/perplexity/reference.txt", test_fixtures);
    if (!(text = test_read_file(path, &size))) {
        CHECK_MSG(0, "cannot read %s", path);
        return;
    }
    static const struct { int window; const char *ranks; } runs[] = {{16, "-r 1"}, {16, "-r 2"}, {64, ""}};
    for (size_t i = 0; i < sizeof runs / sizeof runs[0]; i++) {
        char key[32];
        snprintf(key, sizeof key, "window_%d=", runs[i].window);
        const char *at = strstr(text, key);
        double want = at ? atof(at + strlen(key)) : 0;
        int want_scored = at ? atoi(strchr(at, ' ') + 1) : 0;
        snprintf(command, sizeof command, "%s %s/gpt2-tiny --perplexity %s/perplexity/text.txt -c %d %s 2>&1",
                 test_generate_binary, test_fixtures, test_fixtures, runs[i].window, runs[i].ranks);
        int status = test_run_output(command, out, sizeof out);
        double got = 0;
        int scored = 0;
        int parsed = sscanf(out, "perplexity: %lf over %d tokens", &got, &scored) == 2;
        CHECK_MSG(status == 0 && parsed && at && scored == want_scored && fabs(got - want) <= 1e-5 * want,
                  "--perplexity, windows of %d %s: \"%s\" (transformers: %.9g over %d tokens)", runs[i].window,
                  runs[i].ranks, out, want, want_scored);
    }
    free(text);
}

/* build/tokenize (beside build/generate): transformers' ids for the fixtures' prompts, with and
   without the special tokens the tokenizer adds, from a directory and from a GGUF file; the text
   back from --decode; each token's text; bad input exits 1 or 2 with a message. */
static void check_cli_tokenize(void) {
    char tool[1024], command[4096], out[4096];
    snprintf(tool, sizeof tool, "%s", test_generate_binary);
    char *slash = strrchr(tool, '/');
    snprintf(slash ? slash + 1 : tool, sizeof tool - (size_t)(slash ? slash + 1 - tool : 0), "tokenize");
    static const struct { const char *source, *arguments, *want; int status; } cases[] = {
        /* reference.txt's prompt_ids for its prompt_text */
        {"gpt2-tiny", "'Hello world, this is a test of 12 tokens'", "391,330,11,305,277,259,283,220,354,388,331\n", 0},
        {"gguf/gpt2-f32.gguf", "'Hello world, this is a test of 12 tokens'", "391,330,11,305,277,259,283,220,354,388,331\n", 0},
        {"llama", "'Hello world'", "1,464,398\n", 0}, /* LLaMA's <s> first */
        {"llama", "--no-special 'Hello world'", "464,398\n", 0},
        {"llama", "--count 'Hello world'", "3\n", 0},
        {"gpt2-tiny", "--pieces 'Hello world'", "391\tHello\n330\t world\n", 0},
        {"gpt2-tiny", "--decode 391,330,11", "Hello world,\n", 0},
        {"gpt2-tiny", "--decode 1,x", "tokenize: --decode wants comma-separated non-negative integers\n", 2},
        {"gpt2-tiny", "--decode 999999", "tokenize: an id is not in the vocabulary\n", 1},
        {"gpt2-tiny", "", "tokenize: give one of TEXT, -f FILE and --decode IDS\n", 2},
        {"nonexistent", "x", NULL, 1},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        snprintf(command, sizeof command, "%s %s/%s %s 2>&1", tool, test_fixtures, cases[i].source, cases[i].arguments);
        int status = test_run_output(command, out, sizeof out);
        CHECK_MSG(status == cases[i].status && (!cases[i].want || !strcmp(out, cases[i].want)),
                  "tokenize %s %s: exit %d, printed \"%s\"", cases[i].source, cases[i].arguments, status, out);
    }
}

void test_cli(void) {
    check_cli_perplexity();
    check_cli_tokenize();
    check_cli_chat();
    check_build_info();
    check_ids_and_logits("gpt2-hub", 1, NULL, NULL);
    check_ids_and_logits("gpt2-hub", 3, NULL, NULL);
    check_ids_and_logits("gpt2-tiny", 2, NULL, NULL);
    check_ids_and_logits("gpt2-tiny-bf16", 2, "bf16", NULL);
    check_ids_and_logits("gpt2-tiny-f16", 1, "f16", NULL);
    check_ids_and_logits("llama-q8", 2, NULL, "f16");
    check_ids_and_logits("llama-q8", 2, NULL, "bf16");
    check_ids_and_logits("my-llama", 2, NULL, NULL); /* through --policy */
    check_bf16_products_cli();

    char command[2048], last[4096];
    test_reference ref;
    char dir[1024];
    snprintf(dir, sizeof dir, "%s/gpt2-tiny", test_fixtures);
    if (test_read_reference(dir, &ref) == 0) {
        /* A text prompt prints the prompt and its continuation. */
        snprintf(command, sizeof command, "%s %s -n 5 --gpus 2 '%s'", test_generate_binary, dir, ref.prompt_text);
        CHECK(run(command, last, sizeof last) == 0);
        CHECK_MSG(strncmp(last, ref.prompt_text, strlen(ref.prompt_text)) == 0, "printed \"%s\"", last);
        check_cli_output(dir, &ref);
    }
    check_cli_help(dir);
    check_cli_stop_and_file(dir);
    check_cli_interrupt();
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
