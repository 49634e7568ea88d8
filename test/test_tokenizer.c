/* Tokenizer tests: ids exactly as HF tokenizers gives them (the fixtures' cases.txt), byte-exact
   round trips (random bytes, invalid UTF-8 and NUL included), the vocab.json + merges.txt path,
   HF's added-token rules on a hand-made tokenizer, concurrent encoding, and bad input. */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L /* mkdtemp */
#endif
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../parallelformers.h"
#include "test.h"

/* ---- helpers ---- */

static char *tt_read(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    char *buf = NULL;
    size_t cap = 0, n = 0;
    if (!f) return NULL;
    for (;;) {
        if (n + 4096 + 1 > cap) {
            char *p;
            cap = 2 * cap + 8192;
            p = (char *)realloc(buf, cap);
            if (!p) {
                free(buf);
                fclose(f);
                return NULL;
            }
            buf = p;
        }
        size_t got = fread(buf + n, 1, 4096, f);
        n += got;
        if (got < 4096) break;
    }
    fclose(f);
    buf[n] = 0;
    *len = n;
    return buf;
}

static int tt_write(const char *dir, const char *name, const char *data, size_t len) {
    char path[1024];
    FILE *f;
    snprintf(path, sizeof path, "%s/%s", dir, name);
    f = fopen(path, "wb");
    if (!f) return -1;
    if (fwrite(data, 1, len, f) != len) {
        fclose(f);
        return -1;
    }
    return fclose(f);
}

static int tt_copy(const char *from_dir, const char *name, const char *to_dir) {
    char path[1024];
    size_t len;
    char *data;
    int r;
    snprintf(path, sizeof path, "%s/%s", from_dir, name);
    data = tt_read(path, &len);
    if (!data) return -1;
    r = tt_write(to_dir, name, data, len);
    free(data);
    return r;
}

/* A fresh empty directory under /tmp (its path in dir), or -1. */
static int tt_mkdtemp(char *dir, size_t size) {
    snprintf(dir, size, "/tmp/pf_test_tok_XXXXXX");
    return mkdtemp(dir) ? 0 : -1;
}

/* Empties a directory made by tt_mkdtemp (of the files these tests write) and removes it. */
static void tt_rmdir(const char *dir) {
    static const char *names[] = {"tokenizer.json", "vocab.json", "merges.txt", "tokenizer_config.json"};
    char path[1024];
    size_t i;
    for (i = 0; i < sizeof names / sizeof names[0]; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        unlink(path);
    }
    rmdir(dir);
}

static pf_tokenizer *tt_load(const char *dir) {
    pf_tokenizer *t = NULL;
    char err[512] = "";
    pf_result r = pf_tokenizer_load(dir, &t, err, sizeof err);
    CHECK_MSG(r == PF_OK && t != NULL, "loading %s: %s (%s)", dir, pf_result_string(r), err);
    return r == PF_OK ? t : NULL;
}

static pf_tokenizer *tt_load_fixture(const char *name) {
    char dir[1024];
    snprintf(dir, sizeof dir, "%s/%s", test_fixtures, name);
    return tt_load(dir);
}

/* Encodes into a malloc'd array (*n ids); NULL on failure. */
static int32_t *tt_encode(const pf_tokenizer *t, const char *text, size_t len, size_t *n) {
    size_t cap = len + 16;
    int32_t *ids = (int32_t *)malloc(cap * sizeof *ids);
    if (!ids) return NULL;
    if (pf_tokenize(t, text, len, ids, cap, n) != PF_OK) {
        free(ids);
        return NULL;
    }
    return ids;
}

static void tt_format_ids(char *out, size_t size, const int32_t *ids, size_t n) {
    size_t i, used = 0;
    out[0] = 0;
    for (i = 0; i < n && used + 16 < size; i++)
        used += (size_t)snprintf(out + used, size - used, "%s%d", i ? "," : "", (int)ids[i]);
    if (i < n) snprintf(out + used, size - used, ",...");
}

static void tt_format_hex(char *out, size_t size, const char *s, size_t n) {
    size_t i, used = 0;
    out[0] = 0;
    for (i = 0; i < n && used + 4 < size; i++) used += (size_t)snprintf(out + used, size - used, "%02x", (unsigned char)s[i]);
}

static int tt_same_ids(const int32_t *a, size_t na, const int32_t *b, size_t nb) {
    return na == nb && (na == 0 || !memcmp(a, b, na * sizeof *a));
}

/* Decodes and compares with the expected bytes. */
static int tt_round_trips(const pf_tokenizer *t, const int32_t *ids, size_t n, const char *text, size_t len) {
    size_t cap = len + 1, got = 0;
    char *out = (char *)malloc(cap);
    int ok;
    if (!out) return 0;
    ok = pf_detokenize(t, ids, n, out, cap, &got) == PF_OK && got == len && !memcmp(out, text, len);
    free(out);
    return ok;
}

/* ---- cases.txt: "<hex of UTF-8 input>\t<comma-separated ids>" ---- */

typedef struct tt_case {
    char *text;
    size_t len;
    int32_t *ids;
    size_t num_ids;
} tt_case;

static void tt_free_cases(tt_case *cases, size_t n) {
    size_t i;
    for (i = 0; i < n; i++) {
        free(cases[i].text);
        free(cases[i].ids);
    }
    free(cases);
}

static int tt_hex(int c) {
    return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

/* Parses a cases.txt; NULL (and a failed check) when it is missing or malformed. */
static tt_case *tt_read_cases(const char *path, size_t *num) {
    size_t len, n = 0, cap = 0, lineno = 0;
    char *data = tt_read(path, &len), *line, *next;
    tt_case *cases = NULL;
    CHECK_MSG(data != NULL, "cannot read %s", path);
    if (!data) return NULL;
    for (line = data; line < data + len; line = next) {
        char *end = strchr(line, '\n'), *tab, *p;
        size_t hex_len, i;
        tt_case *c;
        if (!end) end = data + len;
        next = end + 1;
        *end = 0;
        lineno++;
        if (line == end) continue;
        tab = strchr(line, '\t');
        hex_len = tab ? (size_t)(tab - line) : 0;
        if (!tab || hex_len % 2) goto bad;
        if (n == cap) {
            tt_case *q = (tt_case *)realloc(cases, (cap = 2 * cap + 64) * sizeof *q);
            if (!q) goto bad;
            cases = q;
        }
        c = &cases[n];
        memset(c, 0, sizeof *c);
        c->len = hex_len / 2;
        c->text = (char *)malloc(c->len + 1);
        c->ids = (int32_t *)malloc((strlen(tab) + 1) * sizeof *c->ids);
        n++;
        if (!c->text || !c->ids) goto bad;
        for (i = 0; i < c->len; i++) {
            int hi = tt_hex(line[2 * i]), lo = tt_hex(line[2 * i + 1]);
            if (hi < 0 || lo < 0) goto bad;
            c->text[i] = (char)(hi * 16 + lo);
        }
        for (p = tab + 1; *p && *p != '\r';) {
            char *e;
            long v = strtol(p, &e, 10);
            if (e == p || v < 0) goto bad;
            c->ids[c->num_ids++] = (int32_t)v;
            p = *e == ',' ? e + 1 : e;
            if (*e && *e != ',' && *e != '\r') goto bad;
        }
    }
    free(data);
    *num = n;
    return cases;
bad:
    CHECK_MSG(0, "%s: line %zu is malformed", path, lineno);
    free(data);
    tt_free_cases(cases, n);
    return NULL;
}

/* Encodes every case: ids exactly the expected ones, and decoding gives the input back. */
static void tt_check_cases(const pf_tokenizer *t, const tt_case *cases, size_t n, const char *label) {
    size_t i, bad_ids = 0, bad_trip = 0, first_ids = n, first_trip = n;
    char hex[200], want[400], got[400];
    for (i = 0; i < n; i++) {
        size_t m = 0;
        int32_t *ids = tt_encode(t, cases[i].text, cases[i].len, &m);
        if (!ids || !tt_same_ids(ids, m, cases[i].ids, cases[i].num_ids)) {
            if (!bad_ids++) {
                first_ids = i;
                tt_format_hex(hex, sizeof hex, cases[i].text, cases[i].len);
                tt_format_ids(want, sizeof want, cases[i].ids, cases[i].num_ids);
                tt_format_ids(got, sizeof got, ids, ids ? m : 0);
            }
        }
        if (!tt_round_trips(t, cases[i].ids, cases[i].num_ids, cases[i].text, cases[i].len))
            if (!bad_trip++) first_trip = i;
        free(ids);
    }
    CHECK_MSG(n > 0, "%s: no cases", label);
    CHECK_MSG(bad_ids == 0, "%s: %zu of %zu cases encode differently; first, case %zu (input %s): want [%s], got [%s]",
              label, bad_ids, n, first_ids + 1, hex, want, got);
    CHECK_MSG(bad_trip == 0, "%s: %zu of %zu cases do not decode to their input; first, case %zu", label, bad_trip,
              n, first_trip + 1);
}

/* ---- random byte strings ---- */

static uint32_t tt_rand(uint64_t *state) {
    *state = *state * 6364136223846793005ull + 1442695040888963407ull;
    return (uint32_t)(*state >> 33);
}

/* A random byte string mixing ASCII words, spaces, contractions, valid multi-byte characters,
   added tokens, NUL, and invalid UTF-8 (stray continuations, truncated sequences, overlong forms,
   surrogates, 0xF5-0xFF). */
static size_t tt_random_text(uint64_t *st, char *out, size_t cap) {
    static const char *const parts[] = {
        "hello", " world", "'s", "'ll", "'", "  ", " ", "\n", "\r\n", "\t", "123", " 45", "!?", "...",
        "<|endoftext|>", "<|endoftext", "\xc3\xa9", "\xe6\x9d\xb1\xe4\xba\xac", "\xf0\x9f\x91\x8d",
        "\xc2\xa0", "\xe3\x80\x80", "\xd9\xa3", "_", "\x00", "\x80", "\xbf\xbf", "\xc3", "\xe6\x9d",
        "\xf0\x9f\x91", "\xc0\xaf", "\xe0\x80\x80", "\xed\xa0\x80", "\xf4\x90\x80\x80", "\xff", "\xfe ",
        "\xf5\x80", " \xc3(", "a\xcc\x81"};
    static const size_t lens[] = {5, 6, 2, 3, 1, 2, 1, 1, 2, 1, 3, 3, 2, 3, 13, 11, 2, 6, 4, 2, 3, 2, 1,
                                  1, 1, 2, 1, 2, 3, 2, 3, 3, 4, 1, 2, 2, 3, 3};
    size_t n = 0, k = tt_rand(st) % 24, j;
    for (j = 0; j < k; j++) {
        uint32_t r = tt_rand(st);
        if (r % 3 == 0) { /* raw random bytes */
            size_t m = 1 + r / 3 % 4;
            while (m-- && n < cap) out[n++] = (char)(tt_rand(st) & 0xFF);
        } else {
            size_t p = r / 3 % (sizeof parts / sizeof parts[0]);
            if (n + lens[p] > cap) break;
            memcpy(out + n, parts[p], lens[p]);
            n += lens[p];
        }
    }
    return n;
}

static void tt_check_random_round_trips(const pf_tokenizer *t, const char *label, uint64_t seed) {
    char text[256], hex[520];
    size_t i, bad = 0, total_ids = 0;
    uint64_t st = seed;
    hex[0] = 0;
    for (i = 0; i < 500; i++) {
        size_t len = tt_random_text(&st, text, sizeof text), n = 0;
        int32_t *ids = tt_encode(t, text, len, &n);
        if (!ids || !tt_round_trips(t, ids, n, text, len)) {
            if (!bad++) tt_format_hex(hex, sizeof hex, text, len);
        }
        total_ids += ids ? n : 0;
        free(ids);
    }
    CHECK_MSG(bad == 0, "%s: %zu of 500 random byte strings do not round-trip; first: %s", label, bad, hex);
    CHECK_MSG(total_ids > 500, "%s: random strings gave only %zu ids", label, total_ids);
}

/* ---- concurrent encoding ---- */

typedef struct tt_thread_job {
    const pf_tokenizer *t;
    const tt_case *cases;
    size_t n;
    size_t bad;
} tt_thread_job;

static void *tt_thread_main(void *arg) {
    tt_thread_job *job = (tt_thread_job *)arg;
    size_t i, round;
    for (round = 0; round < 4; round++)
        for (i = 0; i < job->n; i++) {
            size_t m = 0;
            int32_t *ids = tt_encode(job->t, job->cases[i].text, job->cases[i].len, &m);
            if (!ids || !tt_same_ids(ids, m, job->cases[i].ids, job->cases[i].num_ids)) job->bad++;
            free(ids);
        }
    return NULL;
}

static void tt_check_threads(const pf_tokenizer *t, const tt_case *cases, size_t n) {
    pthread_t threads[4];
    tt_thread_job jobs[4];
    int i, started = 0;
    size_t bad = 0;
    for (i = 0; i < 4; i++) {
        jobs[i].t = t;
        jobs[i].cases = cases;
        jobs[i].n = n;
        jobs[i].bad = 0;
        if (pthread_create(&threads[i], NULL, tt_thread_main, &jobs[i]) == 0) started++;
        else break;
    }
    for (i = 0; i < started; i++) {
        pthread_join(threads[i], NULL);
        bad += jobs[i].bad;
    }
    CHECK_MSG(started == 4, "only %d threads started", started);
    CHECK_MSG(bad == 0, "%zu encodings differ when 4 threads encode at once", bad);
}

/* ---- the tests ---- */

/* The real GPT-2 tokenizer: HF's ids, round trips, known ids, buffers, bad ids, threads. */
static void tt_test_gpt2(void) {
    static const struct {
        const char *text;
        int n;
        int32_t ids[8];
    } unicode_cases[] = {
        {"a\xe3\x80\x80\xe3\x80\x80" "b", 6, {64, 5099, 222, 5099, 222, 65}},
        {"x\xe2\x80\xa8\xe2\x80\xa8y", 6, {87, 447, 101, 447, 101, 88}},
        {"a\xc2\x85\xc2\x85 b", 6, {64, 126, 227, 126, 227, 275}},
        {"x \xc2\xa0\xc2\xa0y", 4, {87, 5624, 1849, 88}},
        {"a\x1c\x1c b", 4, {64, 216, 216, 275}},
        {"a\xe2\x80\x8b\xe2\x80\x8b b", 3, {64, 39009, 275}},
        {"caf\xc3\xa9\xcc\x81s", 6, {66, 1878, 2634, 136, 223, 82}},
        {"\xd9\xa3\xd9\xa4 \xc2\xbd\xc2\xb2", 6, {149, 96, 149, 97, 25208, 31185}},
    };
    char path[1024];
    size_t n = 0, num = 0, len = 0;
    tt_case *cases;
    pf_tokenizer *t = tt_load_fixture("tokenizer-gpt2");
    int32_t ids[8], bad_ids[3];
    char text[32];
    pf_result r;
    if (!t) return;
    CHECK_MSG(pf_tokenizer_vocab_size(t) == 50257, "vocab size %d", pf_tokenizer_vocab_size(t));
    snprintf(path, sizeof path, "%s/tokenizer-gpt2/cases.txt", test_fixtures);
    cases = tt_read_cases(path, &n);
    if (cases) {
        tt_check_cases(t, cases, n, "tokenizer-gpt2");
        tt_check_threads(t, cases, n);
        tt_free_cases(cases, n);
    }
    tt_check_random_round_trips(t, "tokenizer-gpt2", 1);

    /* known GPT-2 ids; then HF's ids where the Unicode classes matter beyond the fixtures: runs of
       non-ASCII spaces (U+3000, U+2028, U+0085, U+00A0), characters that are not spaces to HF
       (U+001C, U+200B), a combining mark (not a letter), other scripts' numbers */
    r = pf_tokenize(t, "Hello world<|endoftext|>", 24, ids, 8, &num);
    CHECK_MSG(r == PF_OK && num == 3 && ids[0] == 15496 && ids[1] == 995 && ids[2] == 50256,
              "\"Hello world<|endoftext|>\": %s, %zu ids", pf_result_string(r), num);
    for (n = 0; n < sizeof unicode_cases / sizeof unicode_cases[0]; n++) {
        char want_s[100], got_s[100];
        int32_t *got = tt_encode(t, unicode_cases[n].text, strlen(unicode_cases[n].text), &num);
        tt_format_ids(want_s, sizeof want_s, unicode_cases[n].ids, (size_t)unicode_cases[n].n);
        tt_format_ids(got_s, sizeof got_s, got, got ? num : 0);
        CHECK_MSG(got && tt_same_ids(got, num, unicode_cases[n].ids, (size_t)unicode_cases[n].n),
                  "unicode case %zu: want [%s], got [%s]", n + 1, want_s, got_s);
        free(got);
    }

    /* encode buffer too small: the full count, the first ids written, nothing past capacity */
    ids[0] = ids[1] = -7;
    r = pf_tokenize(t, "Hello world", 11, ids, 1, &num);
    CHECK_MSG(r == PF_ERROR_BUFFER_TOO_SMALL && num == 2, "capacity 1: %s, %zu ids", pf_result_string(r), num);
    CHECK_MSG(ids[0] == 15496 && ids[1] == -7, "capacity 1 wrote %d %d", (int)ids[0], (int)ids[1]);
    r = pf_tokenize(t, "Hello world", 11, NULL, 0, &num);
    CHECK_MSG(r == PF_ERROR_BUFFER_TOO_SMALL && num == 2, "counting: %s, %zu ids", pf_result_string(r), num);
    r = pf_tokenize(t, NULL, 0, NULL, 0, &num);
    CHECK_MSG(r == PF_OK && num == 0, "empty text: %s, %zu ids", pf_result_string(r), num);

    /* decode buffers: too small, exact (no NUL), with room (NUL) */
    ids[0] = 15496;
    ids[1] = 995;
    memset(text, '#', sizeof text);
    r = pf_detokenize(t, ids, 2, text, 5, &len);
    CHECK_MSG(r == PF_ERROR_BUFFER_TOO_SMALL && len == 11, "capacity 5: %s, length %zu", pf_result_string(r), len);
    CHECK_MSG(!memcmp(text, "Hello#", 6), "capacity 5 wrote \"%.6s\"", text);
    memset(text, '#', sizeof text);
    r = pf_detokenize(t, ids, 2, text, 11, &len);
    CHECK_MSG(r == PF_OK && len == 11 && !memcmp(text, "Hello world#", 12), "capacity 11: %s, \"%.12s\"",
              pf_result_string(r), text);
    r = pf_detokenize(t, ids, 2, text, 12, &len);
    CHECK_MSG(r == PF_OK && len == 11 && text[11] == 0, "capacity 12: %s, no NUL", pf_result_string(r));
    r = pf_detokenize(t, ids, 0, NULL, 0, &len);
    CHECK_MSG(r == PF_OK && len == 0, "no ids: %s, length %zu", pf_result_string(r), len);

    /* unknown ids */
    bad_ids[0] = 50257;
    bad_ids[1] = -1;
    bad_ids[2] = INT32_MAX;
    for (n = 0; n < 3; n++) {
        ids[1] = bad_ids[n];
        r = pf_detokenize(t, ids, 2, text, sizeof text, &len);
        CHECK_MSG(r == PF_ERROR_INVALID_ARGUMENT, "decoding id %d: %s", (int)bad_ids[n], pf_result_string(r));
    }

    /* NULL arguments */
    CHECK(pf_tokenize(NULL, "a", 1, ids, 8, &num) == PF_ERROR_INVALID_ARGUMENT);
    CHECK(pf_tokenize(t, "a", 1, ids, 8, NULL) == PF_ERROR_INVALID_ARGUMENT);
    CHECK(pf_tokenize(t, NULL, 1, ids, 8, &num) == PF_ERROR_INVALID_ARGUMENT);
    CHECK(pf_tokenize(t, "a", 1, NULL, 8, &num) == PF_ERROR_INVALID_ARGUMENT);
    CHECK(pf_detokenize(NULL, ids, 1, text, sizeof text, &len) == PF_ERROR_INVALID_ARGUMENT);
    CHECK(pf_detokenize(t, NULL, 1, text, sizeof text, &len) == PF_ERROR_INVALID_ARGUMENT);
    CHECK(pf_detokenize(t, ids, 1, NULL, sizeof text, &len) == PF_ERROR_INVALID_ARGUMENT);
    CHECK(pf_detokenize(t, ids, 1, text, sizeof text, NULL) == PF_ERROR_INVALID_ARGUMENT);
    CHECK(pf_tokenizer_vocab_size(NULL) == 0);
    pf_tokenizer_free(NULL);
    pf_tokenizer_free(t);
}

/* The small trained tokenizer: from tokenizer.json, from vocab.json + merges.txt alone (copied to
   a temp dir, and gpt2-hub's), and with a tokenizer_config.json adding a token and a prefix space. */
static void tt_test_tiny(void) {
    char path[1100], src[1024], dir[256];
    size_t n = 0, m1 = 0, m2 = 0;
    tt_case *cases;
    pf_tokenizer *t = tt_load_fixture("gpt2-tiny"), *t2;
    snprintf(src, sizeof src, "%s/gpt2-tiny", test_fixtures);
    snprintf(path, sizeof path, "%s/cases.txt", src);
    cases = tt_read_cases(path, &n);
    if (t && cases) {
        tt_check_cases(t, cases, n, "gpt2-tiny (tokenizer.json)");
        tt_check_random_round_trips(t, "gpt2-tiny", 2);
    }
    if (cases && tt_mkdtemp(dir, sizeof dir) == 0) {
        CHECK(tt_copy(src, "vocab.json", dir) == 0 && tt_copy(src, "merges.txt", dir) == 0);
        if ((t2 = tt_load(dir)) != NULL) {
            CHECK_MSG(t && pf_tokenizer_vocab_size(t2) == pf_tokenizer_vocab_size(t), "vocab size %d",
                      pf_tokenizer_vocab_size(t2));
            tt_check_cases(t2, cases, n, "gpt2-tiny (vocab.json + merges.txt)");
            pf_tokenizer_free(t2);
        }
        /* a tokenizer_config.json: one more special token, and add_prefix_space */
        {
            static const char config[] =
                "{\"add_prefix_space\": true, \"added_tokens_decoder\": {\"1000\": {\"content\": \"<|pad|>\", "
                "\"lstrip\": false, \"normalized\": false, \"rstrip\": false, \"single_word\": false, "
                "\"special\": true}}}";
            CHECK(tt_write(dir, "tokenizer_config.json", config, sizeof config - 1) == 0);
        }
        if (t && (t2 = tt_load(dir)) != NULL) {
            int32_t *a = tt_encode(t2, "<|pad|>x y", 10, &m1), *b = tt_encode(t, " x y", 4, &m2);
            CHECK_MSG(pf_tokenizer_vocab_size(t2) == 1001, "vocab size with <|pad|> %d", pf_tokenizer_vocab_size(t2));
            CHECK_MSG(a && b && m1 == m2 + 1 && a[0] == 1000 && tt_same_ids(a + 1, m1 - 1, b, m2),
                      "\"<|pad|>x y\" with a prefix space does not encode as <|pad|> then \" x y\"");
            CHECK(a && tt_round_trips(t2, a, 1, "<|pad|>", 7));
            free(a);
            free(b);
            pf_tokenizer_free(t2);
        }
        tt_rmdir(dir);
    }
    if (cases) {
        if ((t2 = tt_load_fixture("gpt2-hub")) != NULL) {
            tt_check_cases(t2, cases, n, "gpt2-hub (vocab.json + merges.txt)");
            pf_tokenizer_free(t2);
        }
        tt_free_cases(cases, n);
    }
    pf_tokenizer_free(t);
}

/* A hand-made tokenizer.json exercising HF's rules, with the ids HF tokenizers 0.23 gives:
   legacy "a b" merges, add_prefix_space, ignore_merges, unk_token with fuse_unk, and added tokens
   with lstrip, rstrip and single_word. HF ignores added tokens' "id": it takes the vocab's id
   ("ab" is 5, not 10) or the next one from the vocab's size ("<s>" is 9, not 42). */
static void tt_test_rules(void) {
    static const char json[] =
        "{\"version\":\"1.0\",\"added_tokens\":["
        "{\"id\":42,\"content\":\"<s>\",\"single_word\":false,\"lstrip\":true,\"rstrip\":false,\"normalized\":false,\"special\":true},"
        "{\"id\":10,\"content\":\"ab\",\"single_word\":true,\"lstrip\":false,\"rstrip\":true,\"normalized\":true,\"special\":false}],"
        "\"normalizer\":null,\"pre_tokenizer\":{\"type\":\"ByteLevel\",\"add_prefix_space\":true,\"trim_offsets\":true,\"use_regex\":true},"
        "\"post_processor\":null,\"decoder\":{\"type\":\"ByteLevel\",\"add_prefix_space\":true,\"trim_offsets\":true,\"use_regex\":true},"
        "\"model\":{\"type\":\"BPE\",\"dropout\":null,\"unk_token\":\"<unk>\",\"continuing_subword_prefix\":null,"
        "\"end_of_word_suffix\":null,\"fuse_unk\":true,\"byte_fallback\":false,\"ignore_merges\":true,"
        "\"vocab\":{\"<unk>\":0,\"a\":1,\"b\":2,\"c\":3,\"\\u0120\":4,\"ab\":5,\"abc\":6,\"\\u0120a\":7,\"\\u0120ab\":8},"
        "\"merges\":[\"a b\",\"\\u0120 a\",\"\\u0120a b\"]}}";
    static const struct {
        const char *text;
        int n;
        int32_t ids[8];
    } want[] = {
        {"abc", 3, {4, 5, 3}},          {"ab abc", 4, {5, 4, 5, 3}},  {"abx", 3, {4, 5, 0}},
        {"x<s>  ab", 6, {4, 0, 9, 4, 4, 5}}, {"cab  ab  c", 8, {4, 3, 5, 4, 4, 5, 4, 3}},
        {"zzz", 2, {4, 0}},             {"a<s>b", 4, {7, 9, 4, 2}},   {"ab", 1, {5}},
        {" ab", 2, {4, 5}},             {"abcab", 4, {4, 5, 3, 5}},   {"xyzzy ab", 4, {4, 0, 4, 5}},
        {"a  <s>b", 4, {7, 9, 4, 2}},   {"c \xe3\x80\x80<s>", 3, {4, 3, 9}}, {"!abc", 3, {4, 0, 6}},
        {"x abc", 5, {4, 0, 4, 5, 3}},
    };
    char dir[256], got_s[200], want_s[200];
    pf_tokenizer *t;
    size_t i, n;
    if (tt_mkdtemp(dir, sizeof dir)) {
        CHECK_MSG(0, "cannot make a temp dir");
        return;
    }
    CHECK(tt_write(dir, "tokenizer.json", json, sizeof json - 1) == 0);
    if ((t = tt_load(dir)) != NULL) {
        CHECK_MSG(pf_tokenizer_vocab_size(t) == 10, "vocab size %d", pf_tokenizer_vocab_size(t));
        for (i = 0; i < sizeof want / sizeof want[0]; i++) {
            int32_t *ids = tt_encode(t, want[i].text, strlen(want[i].text), &n);
            tt_format_ids(want_s, sizeof want_s, want[i].ids, (size_t)want[i].n);
            tt_format_ids(got_s, sizeof got_s, ids, ids ? n : 0);
            CHECK_MSG(ids && tt_same_ids(ids, n, want[i].ids, (size_t)want[i].n), "\"%s\": want [%s], got [%s]",
                      want[i].text, want_s, got_s);
            free(ids);
        }
        {
            int32_t ids[3] = {9, 4, 6};
            CHECK(tt_round_trips(t, ids, 3, "<s> abc", 7));
        }
        pf_tokenizer_free(t);
    }
    tt_rmdir(dir);
}

/* Writes `json` as tokenizer.json in a fresh dir and checks that loading fails with `want`, a
   NULL tokenizer, and a message holding `needle`. */
static void tt_expect_json_error(const char *json, pf_result want, const char *needle) {
    char dir[256], err[512] = "";
    pf_tokenizer *t = (pf_tokenizer *)&t;
    pf_result r;
    if (tt_mkdtemp(dir, sizeof dir)) {
        CHECK_MSG(0, "cannot make a temp dir");
        return;
    }
    CHECK(tt_write(dir, "tokenizer.json", json, strlen(json)) == 0);
    r = pf_tokenizer_load(dir, &t, err, sizeof err);
    CHECK_MSG(r == want && t == NULL, "%.60s...: want %s, got %s (%s)", json, pf_result_string(want),
              pf_result_string(r), err);
    CHECK_MSG(strstr(err, "tokenizer.json") && strstr(err, needle), "message \"%s\" lacks \"%s\"", err, needle);
    if (r == PF_OK) pf_tokenizer_free(t);
    tt_rmdir(dir);
}

/* vocab.json + merges.txt with the given contents (merges NULL: no file): load fails with `want`
   and a message holding `needle`. */
static void tt_expect_files_error(const char *vocab, const char *merges, pf_result want, const char *needle) {
    char dir[256], err[512] = "";
    pf_tokenizer *t = NULL;
    pf_result r;
    if (tt_mkdtemp(dir, sizeof dir)) {
        CHECK_MSG(0, "cannot make a temp dir");
        return;
    }
    CHECK(tt_write(dir, "vocab.json", vocab, strlen(vocab)) == 0);
    if (merges) CHECK(tt_write(dir, "merges.txt", merges, strlen(merges)) == 0);
    r = pf_tokenizer_load(dir, &t, err, sizeof err);
    CHECK_MSG(r == want && t == NULL, "vocab %.40s: want %s, got %s (%s)", vocab, pf_result_string(want),
              pf_result_string(r), err);
    CHECK_MSG(strstr(err, needle) != NULL, "message \"%s\" lacks \"%s\"", err, needle);
    if (r == PF_OK) pf_tokenizer_free(t);
    tt_rmdir(dir);
}

#define TT_PRE "{\"pre_tokenizer\":{\"type\":\"ByteLevel\"},\"decoder\":{\"type\":\"ByteLevel\"},"
#define TT_VOCAB "\"vocab\":{\"a\":0,\"b\":1,\"ab\":2}"

static void tt_test_bad_input(void) {
    char dir[1024], err[512] = "", small[8];
    pf_tokenizer *t = (pf_tokenizer *)&t;
    pf_result r;

    snprintf(dir, sizeof dir, "%s/no-such-tokenizer", test_fixtures);
    r = pf_tokenizer_load(dir, &t, err, sizeof err);
    CHECK_MSG(r == PF_ERROR_IO && t == NULL, "missing dir: %s", pf_result_string(r));
    CHECK_MSG(strstr(err, "no-such-tokenizer") != NULL, "message \"%s\"", err);
    t = (pf_tokenizer *)&t;
    r = pf_tokenizer_load(dir, &t, NULL, 0);
    CHECK_MSG(r == PF_ERROR_IO && t == NULL, "missing dir without a message buffer: %s", pf_result_string(r));
    memset(small, 'x', sizeof small);
    r = pf_tokenizer_load(dir, &t, small, sizeof small);
    CHECK_MSG(r == PF_ERROR_IO && memchr(small, 0, sizeof small) != NULL, "small message buffer: %s",
              pf_result_string(r));
    CHECK(pf_tokenizer_load(NULL, &t, err, sizeof err) == PF_ERROR_INVALID_ARGUMENT && t == NULL);
    CHECK(pf_tokenizer_load(dir, NULL, err, sizeof err) == PF_ERROR_INVALID_ARGUMENT);

    tt_expect_json_error("{\"model\": {\"type\": \"BPE\", ", PF_ERROR_FORMAT, "line 1");
    tt_expect_json_error("[1, 2]", PF_ERROR_FORMAT, "model");
    tt_expect_json_error(TT_PRE "\"model\":{\"type\":\"BPE\",\"vocab\":[\"a\"],\"merges\":[]}}", PF_ERROR_FORMAT, "vocab");
    tt_expect_json_error(TT_PRE "\"model\":{\"type\":\"BPE\",\"merges\":[]}}", PF_ERROR_FORMAT, "vocab");
    tt_expect_json_error(TT_PRE "\"model\":{\"type\":\"BPE\",\"vocab\":{\"a\":-1},\"merges\":[]}}", PF_ERROR_FORMAT, "\"a\"");
    tt_expect_json_error(TT_PRE "\"model\":{\"type\":\"BPE\",\"vocab\":{\"a\":1.5},\"merges\":[]}}", PF_ERROR_FORMAT, "\"a\"");
    tt_expect_json_error(TT_PRE "\"model\":{\"type\":\"BPE\"," TT_VOCAB ",\"merges\":[\"a zz\"]}}", PF_ERROR_FORMAT, "zz");
    tt_expect_json_error(TT_PRE "\"model\":{\"type\":\"BPE\"," TT_VOCAB ",\"merges\":[[\"b\",\"a\"]]}}", PF_ERROR_FORMAT, "ba");
    tt_expect_json_error(TT_PRE "\"model\":{\"type\":\"BPE\"," TT_VOCAB ",\"merges\":[\"a b c\"]}}", PF_ERROR_FORMAT, "merge 1");
    tt_expect_json_error(TT_PRE "\"model\":{\"type\":\"BPE\"," TT_VOCAB ",\"merges\":[7]}}", PF_ERROR_FORMAT, "merge 1");
    tt_expect_json_error(TT_PRE "\"model\":{\"type\":\"BPE\"," TT_VOCAB ",\"merges\":{}}}", PF_ERROR_FORMAT, "merges");
    tt_expect_json_error(TT_PRE "\"added_tokens\":[{\"id\":3}],\"model\":{\"type\":\"BPE\"," TT_VOCAB ",\"merges\":[]}}",
                         PF_ERROR_FORMAT, "added token");
    tt_expect_json_error(TT_PRE "\"model\":{\"type\":\"BPE\",\"vocab\":{\"a\":2000000000},\"merges\":[]}}",
                         PF_ERROR_FORMAT, "sparse");
    tt_expect_json_error(TT_PRE "\"model\":{\"type\":\"WordPiece\"," TT_VOCAB "}}", PF_ERROR_UNSUPPORTED, "WordPiece");
    tt_expect_json_error(TT_PRE "\"model\":{\"type\":\"BPE\",\"byte_fallback\":true," TT_VOCAB ",\"merges\":[]}}",
                         PF_ERROR_UNSUPPORTED, "byte_fallback");
    tt_expect_json_error("{\"pre_tokenizer\":{\"type\":\"Whitespace\"},\"model\":{\"type\":\"BPE\"," TT_VOCAB ",\"merges\":[]}}",
                         PF_ERROR_UNSUPPORTED, "Whitespace");
    tt_expect_json_error("{\"pre_tokenizer\":null,\"model\":{\"type\":\"BPE\"," TT_VOCAB ",\"merges\":[]}}",
                         PF_ERROR_UNSUPPORTED, "byte-level");
    tt_expect_json_error("{\"pre_tokenizer\":{\"type\":\"Split\",\"pattern\":{\"Regex\":\"\\\\d+\"},\"behavior\":\"Isolated\","
                         "\"invert\":false},\"model\":{\"type\":\"BPE\"," TT_VOCAB ",\"merges\":[]}}",
                         PF_ERROR_UNSUPPORTED, "Split");
    tt_expect_json_error(TT_PRE "\"normalizer\":{\"type\":\"NFC\"},\"model\":{\"type\":\"BPE\"," TT_VOCAB ",\"merges\":[]}}",
                         PF_ERROR_UNSUPPORTED, "NFC");
    tt_expect_json_error("{\"pre_tokenizer\":{\"type\":\"ByteLevel\"},\"decoder\":{\"type\":\"WordPiece\"},"
                         "\"model\":{\"type\":\"BPE\"," TT_VOCAB ",\"merges\":[]}}",
                         PF_ERROR_UNSUPPORTED, "WordPiece");

    tt_expect_files_error("{\"a\": 0, \"b\": 1", "a b\n", PF_ERROR_FORMAT, "vocab.json");
    tt_expect_files_error("[\"a\", \"b\"]", "a b\n", PF_ERROR_FORMAT, "vocab.json");
    tt_expect_files_error("{\"a\": 0, \"b\": 1, \"ab\": 2}", "#version: 0.2\na b\nab\n", PF_ERROR_FORMAT,
                          "merges.txt: line 3");
    tt_expect_files_error("{\"a\": 0, \"b\": 1, \"ab\": 2}", "a b\n\nb a\n", PF_ERROR_FORMAT, "\"ba\"");
    tt_expect_files_error("{\"a\": 0, \"b\": 1, \"ab\": 2}", NULL, PF_ERROR_IO, "merges.txt");
}

void test_tokenizer(void) {
    tt_test_gpt2();
    tt_test_tiny();
    tt_test_rules();
    tt_test_bad_input();
}
