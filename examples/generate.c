/* generate: continue a prompt with a Hugging Face model directory, on N ranks.

   build/generate MODEL_DIR [options] PROMPT | --ids 1,2,3 | --batch-file FILE
   build/generate MODEL_DIR --chat [--system TEXT] PROMPT    (the model's chat template)
   build/generate MODEL_DIR -i [--system TEXT]                 (a conversation, a turn per line of stdin;
                                                               Ctrl-C stops a reply, at the prompt ends it)
   build/generate --help lists the options (the table below); --version says the library's version
   and features. With a text prompt and no beams, tokens are printed as they are chosen; special
   tokens (<|endoftext|>, </s>, ...) are left out of the text unless --special is given, as
   transformers' decode(..., skip_special_tokens=True) does. Errors go to stderr, and exit with 2
   for a wrong command line, 1 for a failure after it. */
#define _POSIX_C_SOURCE 200809L /* clock_gettime, getpid */
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../parallelformers.h"
#include "media.h"

/* ---- the command line ---- */

typedef enum value_kind { FLAG, INTEGER, NUMBER, TEXT, CHOICE } value_kind;

/* One option: how it is written, the value it takes and its line in --help. The parser, its
   error messages and --help all read this table, so that they cannot disagree. */
typedef struct cli_option {
    const char *short_name, *name; /* "-n" (or NULL), "--max-new-tokens" */
    value_kind kind;
    const char *value; /* the value's name in --help ("N", "FILE"); CHOICE: the choices, "a|b|c" */
    double lo, hi;     /* INTEGER, NUMBER: the values allowed */
    int above_lo;      /* NUMBER: lo itself is not allowed */
    const char *help;
} cli_option;

enum {
    OPT_IDS, OPT_BATCH_FILE, OPT_IDS_LINES, OPT_GLOBAL_TOKENS, OPT_MAX_NEW_TOKENS, OPT_RANKS, OPT_GPUS, OPT_CTX_SIZE, OPT_DEVICE, OPT_DTYPE, OPT_BF16_PRODUCTS,
    OPT_KV_CACHE, OPT_NO_CUDA_GRAPHS, OPT_DUMP_LOGITS,
    OPT_POLICY, OPT_BEAMS, OPT_RETURN, OPT_NO_REPEAT_NGRAM, OPT_SAMPLE, OPT_TEMPERATURE, OPT_TOP_K, OPT_TOP_P,
    OPT_REPETITION_PENALTY, OPT_MIN_P, OPT_PRESENCE_PENALTY, OPT_FREQUENCY_PENALTY, OPT_STOP, OPT_FILE, OPT_SEED,
    OPT_IGNORE_EOS, OPT_SPECIAL, OPT_PERPLEXITY, OPT_CHAT, OPT_SYSTEM, OPT_INTERACTIVE, OPT_VERBOSE, OPT_TOKEN_DELAY, OPT_HELP, OPT_VERSION, OPT_COUNT
};

#define MAX_SEED 9007199254740991.0 /* 2^53 - 1: every seed is exact in a double */

static const cli_option cli_options[OPT_COUNT] = {
    [OPT_IDS] = {NULL, "--ids", TEXT, "1,2,3", 0, 0, 0,
                 "token ids instead of a text prompt; prints the new ids"},
    [OPT_BATCH_FILE] = {NULL, "--batch-file", TEXT, "FILE", 0, 0, 0,
                        "one prompt per line; one output line per returned sequence"},
    [OPT_IDS_LINES] = {NULL, "--ids-lines", FLAG, NULL, 0, 0, 0, "the batch file's lines are ids (1,2,3), not text"},
    [OPT_GLOBAL_TOKENS] = {NULL, "--global-tokens", TEXT, "I,J,...", 0, 0, 0,
                           "LED: global attention on the source tokens at these positions in every prompt (special tokens counted)"},
    [OPT_MAX_NEW_TOKENS] = {"-n", "--max-new-tokens", INTEGER, "N", 1, 1e6, 0, "new tokens at most (default 20)"},
    [OPT_RANKS] = {"-r", "--ranks", INTEGER, "N", 1, 64, 0,
                   "ranks to split the model over: threads on the CPU, GPUs on CUDA (default: every core, or every GPU)"},
    [OPT_GPUS] = {NULL, "--gpus", INTEGER, "N", 1, 64, 0, "the same as --ranks (the name parallelformers used first)"},
    [OPT_CTX_SIZE] = {"-c", "--ctx-size", INTEGER, "N", 1, 1 << 22, 0,
                      "tokens the KV cache holds per sequence: prompt and reply (default: the model's positions)"},
    [OPT_DEVICE] = {NULL, "--device", CHOICE, "cpu|cuda|auto", 0, 0, 0, "where ranks run (default auto: CUDA if there is a GPU)"},
    [OPT_DTYPE] = {NULL, "--dtype", CHOICE, "f32|f16|bf16|q8|q4", 0, 0, 0,
                   "how ranks store weights (default on the CPU: f32, a GGUF's quantized blocks as they are; f16 on CUDA; q8, q4: CPU only)"},
    [OPT_BF16_PRODUCTS] = {NULL, "--bf16-products", FLAG, NULL, 0, 0, 0,
                           "with --dtype bf16: round each product's input to bf16, as CUDA does (AMX on Xeons)"},
    [OPT_KV_CACHE] = {NULL, "--kv-cache", CHOICE, "f32|f16|bf16", 0, 0, 0,
                      "how ranks cache keys and values (default f32 on the CPU, the weights' dtype on CUDA)"},
    [OPT_NO_CUDA_GRAPHS] = {NULL, "--no-cuda-graphs", FLAG, NULL, 0, 0, 0,
                            "launch each CUDA decode step's kernels one by one (default: replay captured graphs)"},
    [OPT_DUMP_LOGITS] = {NULL, "--dump-logits", TEXT, "FILE", 0, 0, 0,
                         "write the prompt's logits as float32 [n_prompt][vocab]"},
    [OPT_POLICY] = {NULL, "--policy", TEXT, "FILE", 0, 0, 0,
                    "register this policy JSON first: an architecture that is not compiled in"},
    [OPT_BEAMS] = {NULL, "--beams", INTEGER, "N", 1, 1e4, 0, "beam search with N beams (default 1)"},
    [OPT_RETURN] = {NULL, "--return", INTEGER, "N", 1, 1e4, 0, "sequences per prompt, with --beams or --sample (default 1)"},
    [OPT_NO_REPEAT_NGRAM] = {NULL, "--no-repeat-ngram", INTEGER, "N", 0, 1e6, 0, "never repeat an n-gram of this size (default 0: off)"},
    [OPT_SAMPLE] = {NULL, "--sample", FLAG, NULL, 0, 0, 0, "sample tokens instead of taking the most likely"},
    [OPT_TEMPERATURE] = {NULL, "--temperature", NUMBER, "T", 0, 1e6, 0, "sampling temperature (default 1); 0 means greedy"},
    [OPT_TOP_K] = {NULL, "--top-k", INTEGER, "K", 0, 1e9, 0, "sample among the K most likely tokens (default 50; 0: all)"},
    [OPT_TOP_P] = {NULL, "--top-p", NUMBER, "P", 0, 1, 1, "sample among the likeliest tokens whose sum is P (default 1)"},
    [OPT_REPETITION_PENALTY] = {NULL, "--repetition-penalty", NUMBER, "R", 0, 1e6, 1,
                                "penalize tokens already present by R (default 1: off)"},
    [OPT_MIN_P] = {NULL, "--min-p", NUMBER, "P", 0, 1, 0,
                   "sampling: drop tokens less likely than P times the likeliest (default 0: off)"},
    [OPT_PRESENCE_PENALTY] = {NULL, "--presence-penalty", NUMBER, "X", -1e6, 1e6, 0,
                              "subtract X from the score of every token already generated (default 0)"},
    [OPT_FREQUENCY_PENALTY] = {NULL, "--frequency-penalty", NUMBER, "X", -1e6, 1e6, 0,
                               "subtract X per time a token was already generated (default 0)"},
    [OPT_STOP] = {NULL, "--stop", TEXT, "TEXT", 0, 0, 0, "end at the token that completes TEXT (left out of the output)"},
    [OPT_FILE] = {"-f", "--file", TEXT, "FILE", 0, 0, 0, "the prompt is this file's text"},
    [OPT_SEED] = {NULL, "--seed", INTEGER, "S", 0, MAX_SEED, 0,
                  "sampling seed, the same text on any rank count (default: fresh)"},
    [OPT_IGNORE_EOS] = {NULL, "--ignore-eos", FLAG, NULL, 0, 0, 0, "go on past the end-of-sequence tokens, to -n"},
    [OPT_SPECIAL] = {NULL, "--special", FLAG, NULL, 0, 0, 0, "print special tokens (<|endoftext|>, </s>, ...) too"},
    [OPT_PERPLEXITY] = {NULL, "--perplexity", TEXT, "FILE", 0, 0, 0,
                        "print the model's perplexity on FILE's text, over windows of -c tokens (default 512)"},
    [OPT_CHAT] = {NULL, "--chat", FLAG, NULL, 0, 0, 0, "PROMPT is a user message, put through the model's chat template"},
    [OPT_SYSTEM] = {NULL, "--system", TEXT, "TEXT", 0, 0, 0, "a system message first, with --chat or -i"},
    [OPT_INTERACTIVE] = {"-i", "--interactive", FLAG, NULL, 0, 0, 0,
                         "chat: each line of stdin is a user turn, answered in the conversation so far"},
    [OPT_VERBOSE] = {"-v", "--verbose", FLAG, NULL, 0, 0, 0,
                     "the seed, backend, ranks, dtype, tokens/s, memory (MiB)"},
    [OPT_TOKEN_DELAY] = {NULL, "--token-delay-ms", INTEGER, "MS", 0, 1000, 0,
                         "tests: pause after each printed token (so that a reply can be interrupted mid-way)"},
    [OPT_HELP] = {"-h", "--help", FLAG, NULL, 0, 0, 0, "print this help and exit"},
    [OPT_VERSION] = {NULL, "--version", FLAG, NULL, 0, 0, 0, "print the version and features compiled in, and exit"},
};

/* What the command line asked for: each option's value as given (TEXT), parsed (INTEGER,
   NUMBER) or as the index of its choice (CHOICE). */
typedef struct cli_args {
    const char *dir, *prompt;
    int given[OPT_COUNT];
    const char *text[OPT_COUNT];
    double number[OPT_COUNT];
} cli_args;

static void print_help(void) {
    printf("usage: generate MODEL_DIR [options] PROMPT\n"
           "       generate MODEL_DIR [options] --ids 1,2,3\n"
           "       generate MODEL_DIR [options] --batch-file FILE\n"
           "       generate MODEL_DIR [options] --chat [--system TEXT] PROMPT\n"
           "       generate MODEL_DIR [options] -i [--system TEXT]\n"
           "Continues a prompt with the model in MODEL_DIR (config.json, *.safetensors, tokenizer.json),\n"
           "split over --ranks ranks.\n\noptions:\n");
    for (int i = 0; i < OPT_COUNT; i++) {
        const cli_option *o = &cli_options[i];
        char left[64];
        snprintf(left, sizeof left, "%s%s%s%s%s", o->short_name ? o->short_name : "", o->short_name ? ", " : "    ",
                 o->name, o->value ? " " : "", o->value ? o->value : "");
        printf("  %-30s %s\n", left, o->help);
    }
}

/* What an option's value may be, in words: "an integer from 1 to 10000", "cpu, cuda or auto". */
static void describe_value(const cli_option *o, char *out, size_t cap) {
    switch (o->kind) {
    case INTEGER: snprintf(out, cap, "an integer from %.16g to %.16g", o->lo, o->hi); break;
    case NUMBER:
        snprintf(out, cap, o->above_lo ? "a number above %.16g, at most %.16g" : "a number from %.16g to %.16g", o->lo, o->hi);
        break;
    case CHOICE: {
        size_t n = 0;
        const char *choice = o->value;
        out[0] = 0;
        while (*choice && n < cap) {
            size_t len = strcspn(choice, "|");
            const char *next = choice + len + (choice[len] == '|');
            n += (size_t)snprintf(out + n, cap - n, "%s%.*s", n == 0 ? "" : *next ? ", " : " or ", (int)len, choice);
            choice = next;
        }
        break;
    }
    default: snprintf(out, cap, "%s", o->value ? o->value : "nothing"); break;
    }
}

/* Reads option o's value from text into args; prints why not, naming the option as written, and
   returns -1 when it is not one the option allows. */
static int parse_value(const cli_option *o, const char *written, int index, const char *text, cli_args *args) {
    char *end = NULL;
    double v = 0;
    args->text[index] = text;
    switch (o->kind) {
    case INTEGER: /* digits only: strtoull would take "-1" and " 5" */
        if (text[0] >= '0' && text[0] <= '9') v = (double)strtoull(text, &end, 10);
        if (end && !*end && v >= o->lo && v <= o->hi) return args->number[index] = v, 0;
        break;
    case NUMBER:
        v = strtod(text, &end);
        if (end != text && !*end && isfinite(v) && (o->above_lo ? v > o->lo : v >= o->lo) && v <= o->hi)
            return args->number[index] = v, 0;
        break;
    case CHOICE: {
        int k = 0;
        for (const char *choice = o->value; *choice; k++) {
            size_t len = strcspn(choice, "|");
            if (strlen(text) == len && !strncmp(text, choice, len)) return args->number[index] = k, 0;
            choice += len + (choice[len] == '|');
        }
        break;
    }
    default: return 0;
    }
    char allowed[160];
    describe_value(o, allowed, sizeof allowed);
    fprintf(stderr, "generate: %s wants %s, not \"%s\"\n", written, allowed, text);
    return -1;
}

/* Fills args from argv. Returns -1 to go on, or the status to exit with: 0 after --help or
   --version, 2 after a message naming what was wrong. */
static int parse_command_line(int argc, char **argv, cli_args *args) {
    int options_end = 0; /* after "--", everything is a positional argument */
    memset(args, 0, sizeof *args);
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *inline_value = NULL;
        if (options_end || a[0] != '-' || !a[1]) {
            if (!args->dir) args->dir = a;
            else if (!args->prompt) args->prompt = a;
            else {
                fprintf(stderr, "generate: unexpected argument \"%s\": MODEL_DIR and PROMPT are given already "
                                "(quote a prompt that has spaces)\n", a);
                return 2;
            }
            continue;
        }
        if (!strcmp(a, "--")) {
            options_end = 1;
            continue;
        }
        size_t name_len = strcspn(a, "=");
        if (a[name_len] == '=' && a[1] == '-') inline_value = a + name_len + 1; /* --name=value */
        else name_len = strlen(a);
        int index = -1;
        for (int k = 0; k < OPT_COUNT && index < 0; k++) {
            const cli_option *o = &cli_options[k];
            if ((strlen(o->name) == name_len && !strncmp(a, o->name, name_len)) ||
                (o->short_name && !inline_value && !strcmp(a, o->short_name)))
                index = k;
        }
        if (index < 0) {
            fprintf(stderr, "generate: unknown option \"%.*s\" (generate --help lists them)\n", (int)name_len, a);
            return 2;
        }
        const cli_option *o = &cli_options[index];
        const char *written = inline_value ? o->name : a;
        args->given[index] = 1;
        if (index == OPT_HELP) return print_help(), 0;
        if (index == OPT_VERSION) return printf("generate, parallelformers %s\n", pf_version_string()), 0;
        if (o->kind == FLAG) {
            if (inline_value) {
                fprintf(stderr, "generate: %s takes no value\n", written);
                return 2;
            }
            continue;
        }
        if (!inline_value && i + 1 == argc) {
            char allowed[160];
            describe_value(o, allowed, sizeof allowed);
            fprintf(stderr, "generate: %s needs a value: %s\n", written, allowed);
            return 2;
        }
        if (parse_value(o, written, index, inline_value ? inline_value : argv[++i], args)) return 2;
    }

    /* What the options mean together. */
    int prompts = !!args->prompt + args->given[OPT_IDS] + args->given[OPT_BATCH_FILE] + args->given[OPT_FILE];
    int interactive = args->given[OPT_INTERACTIVE], chat = args->given[OPT_CHAT] || interactive;
    int perplexity = args->given[OPT_PERPLEXITY];
    const char *wrong = !args->dir     ? "no MODEL_DIR (generate --help shows the usage)"
                        : perplexity && (prompts || chat) ? "--perplexity reads its text from FILE: no PROMPT, -f, --ids, --batch-file, --chat or -i"
                        : perplexity ? NULL
                        : interactive && prompts ? "-i reads the prompts from stdin: give no PROMPT, -f, --ids or --batch-file"
                        : prompts == 0 && !interactive ? "nothing to continue: give a PROMPT, -f FILE, --ids or --batch-file (or -i)"
                        : prompts > 1  ? "give one of PROMPT, -f, --ids and --batch-file, not several"
                        : chat && (args->given[OPT_IDS] || args->given[OPT_BATCH_FILE]) ? "--chat takes a text PROMPT (or -f), not --ids or --batch-file"
                        : args->given[OPT_STOP] && !args->prompt && !args->given[OPT_FILE] && !interactive ? "--stop goes with a text prompt"
                        : args->given[OPT_SYSTEM] && !chat ? "--system goes with --chat or -i"
                        : interactive && (args->given[OPT_BEAMS] || args->given[OPT_RETURN]) ? "-i answers with one sequence: no --beams or --return"
                        : args->given[OPT_IDS_LINES] && !args->given[OPT_BATCH_FILE] ? "--ids-lines goes with --batch-file"
                        : args->given[OPT_GLOBAL_TOKENS] && chat ? "--global-tokens marks a prompt's tokens: not with --chat or -i"
                        : args->given[OPT_STOP] && args->given[OPT_BEAMS] ? "--stop needs greedy search or sampling, not --beams"
                                                                                      : NULL;
    if (wrong) {
        fprintf(stderr, "generate: %s\n", wrong);
        return 2;
    }
    int returns = args->given[OPT_RETURN] ? (int)args->number[OPT_RETURN] : 1;
    int beams = args->given[OPT_BEAMS] ? (int)args->number[OPT_BEAMS] : 1;
    if (returns > 1 && beams == 1 && !args->given[OPT_SAMPLE]) {
        fprintf(stderr, "generate: --return %d needs --sample or --beams: greedy search returns one sequence\n", returns);
        return 2;
    }
    if (beams > 1 && returns > beams) {
        fprintf(stderr, "generate: --return %d is more than the %d beams of --beams\n", returns, beams);
        return 2;
    }
    /* Sampling's options do nothing without it: said, not refused (transformers warns too). */
    static const int sampling_only[] = {OPT_TOP_K, OPT_TOP_P, OPT_MIN_P, OPT_SEED};
    for (size_t k = 0; k < sizeof sampling_only / sizeof sampling_only[0]; k++)
        if (args->given[sampling_only[k]] && !args->given[OPT_SAMPLE])
            fprintf(stderr, "generate: %s only matters with --sample\n", cli_options[sampling_only[k]].name);
    if (args->given[OPT_TEMPERATURE] && args->number[OPT_TEMPERATURE] > 0 && !args->given[OPT_SAMPLE])
        fprintf(stderr, "generate: --temperature only matters with --sample (--temperature 0 is greedy)\n");
    return -1;
}

/* ---- running ---- */

static void print_log(void *user, pf_log_level level, const char *line) {
    (void)user;
    fprintf(stderr, "%s%s\n", level == PF_LOG_ERROR ? "error: " : level == PF_LOG_WARNING ? "warning: " : "", line);
}

/* A progress bar on a terminal while the weights are copied to the ranks. */
static void print_progress(void *user, uint64_t done, uint64_t total) {
    (void)user;
    int percent = total ? (int)(done * 100 / total) : 100;
    fprintf(stderr, "\rloading weights %3d%% (%llu of %llu MiB)%s", percent, (unsigned long long)(done >> 20),
            (unsigned long long)(total >> 20), done == total ? "\n" : "");
    fflush(stderr);
}

static double seconds_now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* A seed for sampling when none is given: from the system's entropy, else the clock and pid. */
static uint64_t fresh_seed(void) {
    uint64_t seed = 0;
    FILE *f = fopen("/dev/urandom", "rb");
    if (!f || fread(&seed, sizeof seed, 1, f) != 1) {
        struct timespec t;
        clock_gettime(CLOCK_REALTIME, &t);
        seed = ((uint64_t)t.tv_sec * 1000000007u) ^ (uint64_t)t.tv_nsec ^ ((uint64_t)getpid() << 32);
    }
    if (f) fclose(f);
    return seed % ((uint64_t)MAX_SEED + 1); /* within --seed's range, so that it can be given back */
}

typedef struct stream_state {
    pf_tokenizer *tokenizer;
    int show_special;
    double first_token_time; /* 0 until the first token */
    const char *stop;        /* --stop: text held back while it may begin it, never printed; or NULL */
    char *held;              /* text not printed yet (it may begin the stop text) */
    size_t held_length;
    int stopped;             /* the stop text came: the rest is not printed */
    int delay_ms;            /* --token-delay-ms */
} stream_state;

/* Ctrl-C during -i's reply: the reply stops there and the conversation goes on (at the prompt,
   the program ends). Set by the signal handler, read by the stream callback. */
static volatile sig_atomic_t interrupted, at_prompt;
/* Ctrl-C: during a reply, stops it (the stream callback reads the flag); at -i's prompt, ends the
   program at once. A flag there would race with getline: a signal that comes after the check and
   before the read blocks is lost, and the program waits on. */
static void on_interrupt(int sig) {
    (void)sig;
    if (at_prompt) _exit(0);
    interrupted = 1;
}

/* Prints what of s->held cannot begin the stop text (all of it without one, or at the end). */
static void print_held(stream_state *s, int at_end) {
    size_t ready = s->held_length;
    if (s->stop && !s->stopped) {
        const char *found = NULL;
        size_t stop_length = strlen(s->stop);
        for (size_t i = 0; i + stop_length <= s->held_length && !found; i++)
            if (!memcmp(s->held + i, s->stop, stop_length)) found = s->held + i;
        if (found) ready = (size_t)(found - s->held), s->stopped = 1;
        else if (!at_end) /* keep a tail that could begin the stop text */
            for (size_t k = stop_length - 1; k > 0; k--)
                if (k <= s->held_length && !memcmp(s->held + s->held_length - k, s->stop, k)) {
                    ready = s->held_length - k;
                    break;
                }
    }
    fwrite(s->held, 1, ready, stdout);
    memmove(s->held, s->held + ready, s->held_length - ready);
    s->held_length = s->stopped || at_end ? 0 : s->held_length - ready;
    fflush(stdout);
}

static int print_piece(void *user, int row, int32_t token, const char *text, size_t len) {
    stream_state *s = (stream_state *)user;
    (void)row;
    if (!s->first_token_time) s->first_token_time = seconds_now();
    if (text && !s->stopped && (s->show_special || !pf_tokenizer_is_special(s->tokenizer, token))) {
        char *grown = (char *)realloc(s->held, s->held_length + len + 1);
        if (!grown) return 1;
        s->held = grown;
        memcpy(s->held + s->held_length, text, len);
        s->held_length += len;
        print_held(s, 0);
    }
    if (s->delay_ms) nanosleep(&(struct timespec){s->delay_ms / 1000, (s->delay_ms % 1000) * 1000000L}, NULL);
    return interrupted; /* Ctrl-C: stop this reply */
}

/* Parses "17,523,4"; returns the count or -1. */
static int parse_ids(const char *text, int32_t **out) {
    int cap = 16, n = 0;
    int32_t *ids = (int32_t *)malloc((size_t)cap * sizeof *ids);
    const char *p = text;
    while (ids && *p && *p != '\n') {
        char *end;
        long v = strtol(p, &end, 10);
        if (end == p || v < 0 || v > 0x7fffffff) break;
        if (n == cap) {
            int32_t *grown = (int32_t *)realloc(ids, (size_t)(cap *= 2) * sizeof *ids);
            if (!grown) break;
            ids = grown;
        }
        ids[n++] = (int32_t)v;
        p = end;
        if (*p == ',') p++;
        else if (*p && *p != '\n') break;
    }
    if (!ids || (*p && *p != '\n') || n == 0) {
        free(ids);
        return -1;
    }
    *out = ids;
    return n;
}

/* Tokenizes a text prompt as transformers' tokenizer(text) would; a chat template's text, which
   holds its special tokens already, as apply_chat_template does (add_special_tokens=False). */
static int tokenize(pf_model *model, const char *text, int templated, int32_t **out) {
    pf_tokenizer *tok = pf_model_tokenizer(model);
    pf_result (*encode)(const pf_tokenizer *, const char *, size_t, int32_t *, size_t, size_t *) =
        templated ? pf_tokenize : pf_tokenize_special;
    size_t n = 0;
    if (!tok) return -1;
    encode(tok, text, strlen(text), NULL, 0, &n);
    *out = (int32_t *)malloc((n ? n : 1) * sizeof **out);
    if (!*out || encode(tok, text, strlen(text), *out, n, &n) || n == 0) return -1;
    return (int)n;
}

static char *sequence_text(pf_tokenizer *tok, const int32_t *ids, int n, int show_special);

/* ---- perplexity ---- */


/* exp(mean negative log-likelihood) of a text's tokens, cut into windows of `window` tokens that
   do not overlap; each window's first token has no prefix and is not scored (transformers'
   perplexity recipe with stride = window). 0 on success. */
static int run_perplexity(pf_model *model, const char *path, int window) {
    char *text = media_read_text(path, MEDIA_MAX_FILE_BYTES);
    int32_t *ids = NULL;
    int n = text ? tokenize(model, text, 0, &ids) : -1;
    free(text);
    if (n < 2) {
        fprintf(stderr, "generate: %s: %s\n", path, n < 0 ? "cannot read or tokenize it" : "fewer than 2 tokens");
        free(ids);
        return 1;
    }
    int vocab = pf_get_info(model).vocab_size, scored = 0, windows = 0;
    float *logits = (float *)malloc((size_t)(window < n ? window : n) * (size_t)vocab * sizeof *logits);
    double nll = 0;
    for (int start = 0; logits && start + 1 < n; start += window, windows++) {
        int T = n - start < window ? n - start : window;
        pf_result r = pf_forward(model, ids + start, 1, T, logits);
        if (r) {
            fprintf(stderr, "generate: %s: %s\n", pf_result_string(r), pf_error_message(model));
            break;
        }
        for (int t = 0; t + 1 < T; t++) { /* -log softmax(logits[t])[next token], in double */
            const float *row = logits + (size_t)t * vocab;
            double max = row[0], sum = 0;
            for (int v = 1; v < vocab; v++) max = row[v] > max ? row[v] : max;
            for (int v = 0; v < vocab; v++) sum += exp((double)row[v] - max);
            nll += max + log(sum) - (double)row[ids[start + t + 1]];
            scored++;
        }
    }
    int ok = logits && scored == n - (n + window - 1) / window;
    if (!logits) fprintf(stderr, "generate: out of memory\n");
    if (ok) printf("perplexity: %.6f over %d tokens (%d window%s of %d)\n", exp(nll / scored), scored, windows,
                   windows == 1 ? "" : "s", window);
    free(logits);
    free(ids);
    return ok ? 0 : 1;
}

/* ---- chat ---- */

/* A conversation: its messages own their text. */
typedef struct conversation {
    pf_chat_message *messages;
    int count, cap;
} conversation;

static int conversation_add(conversation *c, const char *role, const char *content) {
    if (c->count == c->cap) {
        int cap = c->cap ? 2 * c->cap : 8;
        pf_chat_message *grown = (pf_chat_message *)realloc(c->messages, (size_t)cap * sizeof *grown);
        if (!grown) return -1;
        c->messages = grown;
        c->cap = cap;
    }
    char *copy = (char *)malloc(strlen(content) + 1);
    if (!copy) return -1;
    strcpy(copy, content);
    c->messages[c->count].role = role;
    c->messages[c->count++].content = copy;
    return 0;
}

static void conversation_free(conversation *c) {
    for (int i = 0; i < c->count; i++) free((char *)c->messages[i].content);
    free(c->messages);
}

/* The conversation through the model's chat template, ending with the assistant's turn opened;
   NULL (with a message) on failure. The caller frees it with pf_string_free. */
static char *chat_prompt(pf_model *model, const conversation *c, int verbose) {
    char *text = NULL, error[512];
    pf_result r = pf_apply_chat_template(pf_model_tokenizer(model), c->messages, c->count, NULL, &text, error, sizeof error);
    if (r) {
        fprintf(stderr, "generate: %s: %s\n", pf_result_string(r), error);
        return NULL;
    }
    if (verbose) fprintf(stderr, "generate: the chat template gives:\n%s\n", text);
    return text;
}

/* Ends text (NUL) where the stop text begins in it, if it does. */
static void cut_at_stop(char *text, const char *stop) {
    char *at = text && stop ? strstr(text, stop) : NULL;
    if (at) *at = 0;
}

/* -i: each line of stdin is a user turn; the reply streams to stdout, ends with a newline and
   joins the conversation (as its text without special tokens, as transformers' chat pipelines
   keep it). Returns the exit status. */
static int run_interactive(pf_model *model, pf_generate_options *go, conversation *c, int verbose, int show_special) {
    char *line = NULL;
    size_t line_cap = 0;
    int status = 0, prompt_on_tty = isatty(0) && isatty(2);
    for (;;) {
        at_prompt = 1;
        if (prompt_on_tty) fputs("> ", stderr);
        ssize_t len = getline(&line, &line_cap, stdin);
        at_prompt = 0;
        if (len < 0) break; /* the end of the input, or Ctrl-C at the prompt */
        while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r')) line[--len] = 0;
        if (!len) continue;
        if (conversation_add(c, "user", line)) {
            fprintf(stderr, "generate: out of memory\n");
            status = 1;
            break;
        }
        char *text = chat_prompt(model, c, verbose);
        int32_t *ids = NULL;
        int n = text ? tokenize(model, text, 1, &ids) : -1;
        pf_string_free(text);
        pf_generation result;
        memset(&result, 0, sizeof result);
        pf_result r = PF_OK;
        if (n < 0 || (r = pf_generate_batch(model, (const int32_t *const *)&ids, &n, 1, go, &result))) {
            if (n >= 0) fprintf(stderr, "generate: %s: %s\n", pf_result_string(r), pf_error_message(model));
            else fprintf(stderr, "generate: cannot tokenize the conversation\n");
            free(ids);
            status = 1;
            break;
        }
        free(ids);
        stream_state *stream = (stream_state *)go->stream_user;
        print_held(stream, 1);
        stream->stopped = 0;
        char *reply = sequence_text(pf_model_tokenizer(model), result.tokens[0], result.lengths[0], 0);
        cut_at_stop(reply, stream->stop);
        printf("\n");
        fflush(stdout);
        if (interrupted) fputs("generate: interrupted (Ctrl-C again at the prompt ends the conversation)\n", stderr);
        interrupted = 0;
        pf_generation_free(&result);
        if (!reply || conversation_add(c, "assistant", reply)) {
            fprintf(stderr, "generate: cannot keep the reply\n");
            free(reply);
            status = 1;
            break;
        }
        free(reply);
    }
    (void)show_special;
    free(line);
    return status;
}

/* One sequence's text, special tokens left out unless show_special; NULL without memory or for
   an id the tokenizer does not know. The caller frees it. */
static char *sequence_text(pf_tokenizer *tok, const int32_t *ids, int n, int show_special) {
    int32_t *kept = (int32_t *)malloc((size_t)(n ? n : 1) * sizeof *kept);
    size_t num_kept = 0, len = 0;
    char *text = NULL;
    if (!kept) return NULL;
    for (int i = 0; i < n; i++)
        if (show_special || !pf_tokenizer_is_special(tok, ids[i])) kept[num_kept++] = ids[i];
    pf_result sized = pf_detokenize(tok, kept, num_kept, NULL, 0, &len); /* the length first */
    if ((sized == PF_OK || sized == PF_ERROR_BUFFER_TOO_SMALL) && (text = (char *)malloc(len + 1)) &&
        pf_detokenize(tok, kept, num_kept, text, len + 1, &len) == PF_OK) {
        text[len] = 0;
    } else {
        free(text);
        text = NULL;
    }
    free(kept);
    return text;
}

static const char *device_name(pf_device device) { return device == PF_DEVICE_CUDA ? "cuda" : "cpu"; }

static const char *dtype_name(pf_dtype dtype) {
    return dtype == PF_DTYPE_F16 ? "f16" : dtype == PF_DTYPE_BF16 ? "bf16" : dtype == PF_DTYPE_Q8_0 ? "q8"
           : dtype == PF_DTYPE_Q4_0 ? "q4" : "f32";
}

/* -v's report at the end: what ran where, how fast, and each rank's memory in MiB. */
static void print_run_summary(pf_model *model, int new_tokens, double seconds, double first_token_seconds) {
    const double mib = 1024.0 * 1024.0;
    int ranks = pf_num_ranks(model);
    fprintf(stderr, "rank  weights    kv-cache   scratch    total      device used / total (MiB)\n");
    for (int i = 0; i < ranks; i++) {
        pf_memory_info m;
        if (pf_get_memory_info(model, i, &m)) continue;
        fprintf(stderr, "%-5d %-10.1f %-10.1f %-10.1f %-10.1f ", i, m.weights / mib, m.kv_cache / mib, m.scratch / mib,
                m.allocated / mib);
        if (m.device_total) fprintf(stderr, "%.1f / %.1f\n", m.device_used / mib, m.device_total / mib);
        else fprintf(stderr, "-\n");
    }
    fprintf(stderr, "generate: %s backend, %d rank%s, %s weights: %d new tokens in %.3g s, %.1f tokens/s", device_name(pf_model_device(model)),
            ranks, ranks == 1 ? "" : "s", dtype_name(pf_model_dtype(model)), new_tokens, seconds,
            seconds > 0 ? new_tokens / seconds : 0.0);
    if (first_token_seconds > 0) fprintf(stderr, " (the first after %.3g s)", first_token_seconds);
    fprintf(stderr, "\n");
}

/* The ranks' options as --device, --dtype, --bf16-products, --kv-cache, --ctx-size and --no-cuda-graphs ask. */
static pf_parallel_options parallel_options(const cli_args *args) {
    static const pf_device devices[] = {PF_DEVICE_CPU, PF_DEVICE_CUDA, PF_DEVICE_AUTO}; /* --device's order */
    static const pf_dtype dtypes[] = {PF_DTYPE_F32, PF_DTYPE_F16, PF_DTYPE_BF16, PF_DTYPE_Q8_0,
                                      PF_DTYPE_Q4_0}; /* --dtype's order; --kv-cache's first three */
    pf_parallel_options po = pf_parallel_options_init();
    po.device = args->given[OPT_DEVICE] ? devices[(int)args->number[OPT_DEVICE]] : PF_DEVICE_AUTO;
    po.dtype = args->given[OPT_DTYPE] ? dtypes[(int)args->number[OPT_DTYPE]] : PF_DTYPE_AUTO;
    po.bf16_products = args->given[OPT_BF16_PRODUCTS];
    po.kv_cache_dtype = args->given[OPT_KV_CACHE] ? dtypes[(int)args->number[OPT_KV_CACHE]] : PF_DTYPE_AUTO;
    po.disable_cuda_graphs = args->given[OPT_NO_CUDA_GRAPHS];
    if (args->given[OPT_CTX_SIZE]) po.max_sequence_length = (int)args->number[OPT_CTX_SIZE];
    return po;
}

int main(int argc, char **argv) {
    cli_args args;
    int parsed = parse_command_line(argc, argv, &args);
    if (parsed >= 0) return parsed;
    const char *dir = args.dir, *prompt = args.prompt, *ids_text = args.text[OPT_IDS], *batch_file = args.text[OPT_BATCH_FILE];
    int ranks = args.given[OPT_RANKS] ? (int)args.number[OPT_RANKS] : args.given[OPT_GPUS] ? (int)args.number[OPT_GPUS]
                                                                                           : 0; /* 0: every device */
    int verbose = args.given[OPT_VERBOSE];
    int delay_ms = args.given[OPT_TOKEN_DELAY] ? (int)args.number[OPT_TOKEN_DELAY] : 0;
    stream_state stream; /* how streamed tokens are printed: filled in once the model is loaded */
    memset(&stream, 0, sizeof stream);
    int ids_lines = args.given[OPT_IDS_LINES], show_special = args.given[OPT_SPECIAL];
    int interactive = args.given[OPT_INTERACTIVE], chat = args.given[OPT_CHAT] || interactive;
    conversation conv;
    char *chat_text = NULL;
    memset(&conv, 0, sizeof conv);
    pf_generate_options go = pf_generate_options_init();
    go.max_new_tokens = args.given[OPT_MAX_NEW_TOKENS] ? (int)args.number[OPT_MAX_NEW_TOKENS] : 20;
    if (args.given[OPT_BEAMS]) go.num_beams = (int)args.number[OPT_BEAMS];
    if (args.given[OPT_RETURN]) go.num_return_sequences = (int)args.number[OPT_RETURN];
    if (args.given[OPT_NO_REPEAT_NGRAM]) go.no_repeat_ngram_size = (int)args.number[OPT_NO_REPEAT_NGRAM];
    if (args.given[OPT_TOP_K]) go.top_k = (int)args.number[OPT_TOP_K];
    if (args.given[OPT_TOP_P]) go.top_p = (float)args.number[OPT_TOP_P];
    if (args.given[OPT_REPETITION_PENALTY]) go.repetition_penalty = (float)args.number[OPT_REPETITION_PENALTY];
    if (args.given[OPT_MIN_P]) go.min_p = (float)args.number[OPT_MIN_P];
    go.ignore_eos = args.given[OPT_IGNORE_EOS];
    if (args.given[OPT_PRESENCE_PENALTY]) go.presence_penalty = (float)args.number[OPT_PRESENCE_PENALTY];
    if (args.given[OPT_FREQUENCY_PENALTY]) go.frequency_penalty = (float)args.number[OPT_FREQUENCY_PENALTY];
    const char *stop = args.given[OPT_STOP] ? args.text[OPT_STOP] : NULL;
    if (stop && !*stop) {
        fprintf(stderr, "generate: --stop wants a text that is not empty\n");
        return 2;
    }
    if (stop) go.stop_strings = &stop, go.num_stop_strings = 1;
    /* -f FILE: the prompt is the file's text */
    char *prompt_file_text = NULL;
    if (args.given[OPT_FILE]) {
        if (!(prompt_file_text = media_read_text(args.text[OPT_FILE], MEDIA_MAX_FILE_BYTES))) {
            fprintf(stderr, "generate: cannot read %s\n", args.text[OPT_FILE]);
            return 1;
        }
        prompt = prompt_file_text;
    }
    go.do_sample = args.given[OPT_SAMPLE];
    if (args.given[OPT_TEMPERATURE]) {
        if (args.number[OPT_TEMPERATURE] == 0) go.do_sample = 0; /* the limit of sampling as T falls: the most likely token */
        else go.temperature = (float)args.number[OPT_TEMPERATURE];
    }
    if (go.do_sample) {
        go.seed = args.given[OPT_SEED] ? (uint64_t)args.number[OPT_SEED] : fresh_seed();
        if (verbose) fprintf(stderr, "generate: seed %llu\n", (unsigned long long)go.seed);
    }

    pf_load_options lo = pf_load_options_init();
    lo.log = print_log; /* warnings always; what a user should know with -v */
    lo.log_level = verbose ? PF_LOG_INFO : PF_LOG_WARNING;
    if (isatty(2)) lo.progress = print_progress;
    pf_model *model = NULL;
    int status = 1, batch = 0, text_mode = !ids_text && !(batch_file && ids_lines);
    int32_t **prompts = NULL;
    int32_t *global_positions = NULL, **global_rows = NULL; /* --global-tokens' */
    int *lengths = NULL;
    float *logits = NULL;
    pf_generation result;
    memset(&result, 0, sizeof result);
    char policy_error[1024];
    pf_result r = args.given[OPT_POLICY] ? pf_register_policy_file(args.text[OPT_POLICY], policy_error, sizeof policy_error) : PF_OK;
    if (r) {
        fprintf(stderr, "generate: %s: %s\n", pf_result_string(r), policy_error);
        goto done;
    }
    r = pf_load(dir, &lo, &model);
    if (r) {
        fprintf(stderr, "generate: %s: %s\n", pf_result_string(r), pf_error_message(model));
        goto done;
    }
    if (args.given[OPT_PERPLEXITY]) {
        int window = args.given[OPT_CTX_SIZE] ? (int)args.number[OPT_CTX_SIZE] : 512;
        if (window > pf_get_info(model).max_positions) window = pf_get_info(model).max_positions;
        pf_parallel_options po = parallel_options(&args);
        po.max_sequence_length = window;
        if ((r = pf_parallelize(model, ranks, &po))) {
            fprintf(stderr, "generate: %s: %s\n", pf_result_string(r), pf_error_message(model));
            goto done;
        }
        status = window < 2 ? (fprintf(stderr, "generate: --perplexity needs windows of 2 tokens or more\n"), 2)
                            : run_perplexity(model, args.text[OPT_PERPLEXITY], window);
        goto done;
    }
    /* a chat reply runs to its end of turn (or the model's positions) unless -n says otherwise */
    if (chat && !args.given[OPT_MAX_NEW_TOKENS]) go.max_new_tokens = pf_get_info(model).max_positions;
    if (text_mode && !pf_model_tokenizer(model)) {
        fprintf(stderr, "generate: %s has no tokenizer; use --ids\n", dir);
        goto done;
    }
    if (chat) {
        if (!pf_tokenizer_chat_template(pf_model_tokenizer(model))) {
            fprintf(stderr, "generate: %s has no chat template (tokenizer_config.json's chat_template, or chat_template.jinja): "
                            "give the prompt without --chat / -i\n", dir);
            goto done;
        }
        if ((args.given[OPT_SYSTEM] && conversation_add(&conv, "system", args.text[OPT_SYSTEM])) ||
            (!interactive && conversation_add(&conv, "user", prompt))) {
            fprintf(stderr, "generate: out of memory\n");
            goto done;
        }
        if (interactive) {
            pf_parallel_options po = parallel_options(&args);
            if ((r = pf_parallelize(model, ranks, &po))) {
                fprintf(stderr, "generate: %s: %s\n", pf_result_string(r), pf_error_message(model));
                goto done;
            }
            stream = (stream_state){pf_model_tokenizer(model), show_special, 0, stop, NULL, 0, 0, delay_ms};
            go.stream = print_piece;
            go.stream_user = &stream;
            struct sigaction action;
            memset(&action, 0, sizeof action);
            action.sa_handler = on_interrupt; /* no SA_RESTART: Ctrl-C at the prompt ends getline */
            sigemptyset(&action.sa_mask);
            sigaction(SIGINT, &action, NULL);
            status = run_interactive(model, &go, &conv, verbose, show_special);
            goto done;
        }
        if (!(chat_text = chat_prompt(model, &conv, verbose))) goto done;
        prompt = chat_text;
    }

    /* the prompts: one from the command line, or one per line of the batch file */
    char *file_text = NULL;
    if (batch_file) {
        if (!(file_text = media_read_text(batch_file, MEDIA_MAX_FILE_BYTES))) {
            fprintf(stderr, "generate: cannot read %s\n", batch_file);
            goto done;
        }
    }
    for (int pass = 0; pass < 2; pass++) { /* count, then fill */
        int n = 0;
        const char *line = batch_file ? file_text : ids_text ? ids_text : prompt;
        while (line && *line) {
            const char *end = batch_file ? strchr(line, '\n') : NULL;
            size_t len = end ? (size_t)(end - line) : strlen(line);
            if (len) {
                if (pass) {
                    char *copy = (char *)malloc(len + 1);
                    if (!copy) break;
                    memcpy(copy, line, len);
                    copy[len] = 0;
                    lengths[n] = text_mode ? tokenize(model, copy, chat, &prompts[n]) : parse_ids(copy, &prompts[n]);
                    free(copy);
                    if (lengths[n] < 0) {
                        fprintf(stderr, "generate: prompt %d: %s\n", n + 1,
                                text_mode ? "cannot tokenize it" : "--ids wants comma-separated non-negative integers");
                        free(file_text);
                        batch = n + 1;
                        goto done;
                    }
                }
                n++;
            }
            line = end ? end + 1 : NULL;
        }
        if (!pass) {
            batch = n;
            prompts = (int32_t **)calloc((size_t)(n ? n : 1), sizeof *prompts);
            lengths = (int *)calloc((size_t)(n ? n : 1), sizeof *lengths);
            if (!n || !prompts || !lengths) {
                fprintf(stderr, "generate: no prompt\n");
                free(file_text);
                goto done;
            }
        }
    }
    free(file_text);
    /* --global-tokens: 1 at those positions of every prompt (pf_generate_options.global_attention) */
    int num_global = args.given[OPT_GLOBAL_TOKENS] ? parse_ids(args.text[OPT_GLOBAL_TOKENS], &global_positions) : 0;
    if (num_global < 0) {
        fprintf(stderr, "generate: --global-tokens wants comma-separated positions (0, 1, ...)\n");
        status = 2;
        goto done;
    }
    if (num_global && !(global_rows = (int32_t **)calloc((size_t)batch, sizeof *global_rows))) {
        fprintf(stderr, "generate: out of memory\n");
        goto done;
    }
    for (int b = 0; num_global && b < batch; b++) {
        if (!(global_rows[b] = (int32_t *)calloc((size_t)lengths[b], sizeof(int32_t)))) {
            fprintf(stderr, "generate: out of memory\n");
            goto done;
        }
        for (int k = 0; k < num_global; k++) {
            if (global_positions[k] >= lengths[b]) {
                fprintf(stderr, "generate: --global-tokens position %d is beyond prompt %d's %d tokens\n",
                        (int)global_positions[k], b + 1, lengths[b]);
                goto done;
            }
            global_rows[b][global_positions[k]] = 1;
        }
    }
    go.global_attention = (const int32_t *const *)global_rows;

    pf_parallel_options po = parallel_options(&args);
    po.max_batch = batch * (go.num_beams > 1 ? go.num_beams : go.num_return_sequences);
    if ((r = pf_parallelize(model, ranks, &po))) {
        fprintf(stderr, "generate: %s: %s\n", pf_result_string(r), pf_error_message(model));
        goto done;
    }
    pf_model_info info = pf_get_info(model);
    if (args.given[OPT_DUMP_LOGITS]) {
        const char *dump = args.text[OPT_DUMP_LOGITS];
        logits = (float *)malloc((size_t)lengths[0] * info.vocab_size * sizeof *logits);
        if (!logits || (r = pf_forward(model, prompts[0], 1, lengths[0], logits))) {
            fprintf(stderr, "generate: %s: %s\n", pf_result_string(r), pf_error_message(model));
            goto done;
        }
        FILE *f = fopen(dump, "wb");
        size_t count = (size_t)lengths[0] * info.vocab_size;
        if (!f || fwrite(logits, sizeof *logits, count, f) != count || fclose(f)) {
            fprintf(stderr, "generate: cannot write %s\n", dump);
            goto done;
        }
    }
    stream = (stream_state){pf_model_tokenizer(model), show_special, 0, stop, NULL, 0, 0, delay_ms};
    /* an encoder-decoder's output is a text of its own (a translation, a summary), not the
       prompt's continuation: the prompt is not echoed, and the decoder's positions bound it */
    const char *echo = info.is_encoder_decoder ? "" : prompt;
    int streaming = text_mode && !batch_file && go.num_beams == 1 && go.num_return_sequences == 1;
    if (streaming) {
        go.stream = print_piece;
        go.stream_user = &stream;
        if (!chat) fputs(echo, stdout); /* a chat prints the reply alone */
    }
    double start = seconds_now();
    if ((r = pf_generate_batch(model, (const int32_t *const *)prompts, lengths, batch, &go, &result))) {
        fprintf(stderr, "generate: %s: %s\n", pf_result_string(r), pf_error_message(model));
        goto done;
    }
    double seconds = seconds_now() - start;
    int new_tokens = 0, longest_prompt = 0, cut_short = 0;
    for (int b = 0; b < batch; b++) longest_prompt = lengths[b] > longest_prompt ? lengths[b] : longest_prompt;
    /* the KV cache holds max_positions tokens (or -c's): the prompt's and the new ones, or (an
       encoder-decoder) the decoder's start token and the new ones */
    int positions = args.given[OPT_CTX_SIZE] && args.number[OPT_CTX_SIZE] < info.max_positions ? (int)args.number[OPT_CTX_SIZE]
                                                                                                 : info.max_positions;
    int room = positions - (info.is_encoder_decoder ? 1 : longest_prompt);
    for (int i = 0; i < result.num_sequences; i++) {
        int n = result.lengths[i];
        new_tokens += n;
        int ended_by_eos = 0;
        for (int k = 0; n > 0 && k < info.num_eos_token_ids; k++) ended_by_eos |= result.tokens[i][n - 1] == info.eos_token_ids[k];
        if (room < go.max_new_tokens && n >= room && !ended_by_eos) cut_short = 1;
        if (streaming) {
            print_held(&stream, 1);
            printf("\n");
        } else if (!text_mode) {
            for (int t = 0; t < n; t++) printf("%s%d", t ? "," : "", (int)result.tokens[i][t]);
            printf("\n");
        } else {
            char *text = sequence_text(pf_model_tokenizer(model), result.tokens[i], n, show_special);
            cut_at_stop(text, stop);
            if (!text) {
                fprintf(stderr, "generate: cannot decode the output\n");
                goto done;
            }
            for (char *c = text; *c; c++) /* one line per sequence */
                if (*c == '\n') *c = ' ';
            printf("%s%s\n", batch_file || chat ? "" : echo, text);
            free(text);
        }
    }
    fflush(stdout);
    if (cut_short)
        fprintf(stderr, "generate: the context length cut the generation short: %d tokens after the %d-token prompt%s "
                        "fill the %s %d positions (-n asked for %d)\n",
                room, longest_prompt, batch > 1 ? " (the longest)" : "", positions < info.max_positions ? "KV cache's (-c)" : "model's",
                positions, go.max_new_tokens);
    if (verbose) print_run_summary(model, new_tokens, seconds, stream.first_token_time ? stream.first_token_time - start : 0);
    status = 0;
done:
    for (int i = 0; prompts && i < batch; i++) free(prompts[i]);
    for (int i = 0; global_rows && i < batch; i++) free(global_rows[i]);
    free(global_rows);
    free(global_positions);
    free(prompts);
    free(lengths);
    free(logits);
    pf_generation_free(&result);
    pf_free(model);
    pf_string_free(chat_text);
    conversation_free(&conv);
    free(stream.held);
    free(prompt_file_text);
    return status;
}
