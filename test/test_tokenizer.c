/* Tokenizer tests: ids exactly as HF tokenizers gives them (every fixture dir's cases.txt, and
   cases_special.txt with the post-processor's special tokens; cases_pair.txt: pairs, type ids
   and truncation through pf_tokenize_pair), decodes as HF's (the decodes
   recorded in tokenizer_decode_cases.txt; byte-exact round trips for byte-level tokenizers, random
   bytes, invalid UTF-8 and NUL included), every normalizer / pre-tokenizer / decoder style on
   random strings against HF (tokenizer_style_cases.txt), the vocab.json + merges.txt path, HF's
   added-token rules, model options and post-processors on hand-made tokenizers, concurrent
   encoding, and bad input. The two .txt files are written by test/make_tokenizer_cases.py; the
   encoder tokenizers' fixtures (tokenizer-bert, ...) by test/make_encoder_tokenizers.py; the BPE
   files without tokenizer.json (tokenizer-*-files, OpenAI GPT's to BERTweet's) by
   test/make_bpe_file_tokenizers.py; XLM's and FlauBERT's Moses + BPE (tokenizer-xlm-*, tokenizer-flaubert-*) by
   test/make_moses_tokenizers.py, BertJapanese's (tokenizer-bert-japanese-*) by
   test/make_bert_japanese_tokenizers.py. */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L /* mkdtemp */
#endif
#include <dirent.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../parallelformers.h"
#include "test.h"

/* ---- helpers ---- */

static int tt_write(const char *dir, const char *name, const char *data, size_t len) {
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    return test_write_file(path, data, len);
}

static int tt_copy(const char *from_dir, const char *name, const char *to_dir) {
    char path[1024];
    size_t len;
    char *data;
    int r;
    snprintf(path, sizeof path, "%s/%s", from_dir, name);
    data = test_read_file(path, &len);
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
    static const char *names[] = {"tokenizer.json", "vocab.json", "merges.txt", "tokenizer_config.json", "source.spm",
                                  "vocab.txt", "bpe.codes"};
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

/* Encodes (with the post-processor's special tokens when `special`) into a malloc'd array (*n
   ids); NULL on failure. */
static int32_t *tt_encode_with(const pf_tokenizer *t, const char *text, size_t len, size_t *n, int special) {
    size_t cap = 4 * len + 16;
    int32_t *ids = (int32_t *)malloc(cap * sizeof *ids);
    if (!ids) return NULL;
    if ((special ? pf_tokenize_special : pf_tokenize)(t, text, len, ids, cap, n) != PF_OK) {
        free(ids);
        return NULL;
    }
    return ids;
}

static int32_t *tt_encode(const pf_tokenizer *t, const char *text, size_t len, size_t *n) {
    return tt_encode_with(t, text, len, n, 0);
}

/* Decodes into a malloc'd, NUL-terminated string (*len bytes); NULL on failure. */
static char *tt_decode(const pf_tokenizer *t, const int32_t *ids, size_t n, size_t *len) {
    size_t need = 0;
    char *out;
    pf_result r = pf_detokenize(t, ids, n, NULL, 0, &need);
    if (r != PF_OK && r != PF_ERROR_BUFFER_TOO_SMALL) return NULL;
    out = (char *)malloc(need + 1);
    if (!out) return NULL;
    if (pf_detokenize(t, ids, n, out, need + 1, len) != PF_OK || *len != need) {
        free(out);
        return NULL;
    }
    return out;
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
    char *data = test_read_file(path, &len), *line, *next;
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

/* What a case decodes to: `text` (len bytes), or the case's input when text is NULL. */
typedef struct tt_text {
    char *text;
    size_t len;
} tt_text;

/* Encodes every case (with the post-processor's special tokens when `special`): ids exactly the
   expected ones; and decoding the expected ids gives want[i] (NULL: every case's input). */
static void tt_check_cases_with(const pf_tokenizer *t, const tt_case *cases, size_t n, const char *label, int special,
                                const tt_text *want) {
    size_t i, bad_ids = 0, bad_trip = 0, first_ids = n, first_trip = n;
    char hex[200], want_s[400], got[400], dec_want[200], dec_got[200];
    for (i = 0; i < n; i++) {
        size_t m = 0, len = 0;
        int32_t *ids = tt_encode_with(t, cases[i].text, cases[i].len, &m, special);
        char *dec;
        const char *w = want && want[i].text ? want[i].text : cases[i].text;
        size_t wl = want && want[i].text ? want[i].len : cases[i].len;
        if (!ids || !tt_same_ids(ids, m, cases[i].ids, cases[i].num_ids)) {
            if (!bad_ids++) {
                first_ids = i;
                tt_format_hex(hex, sizeof hex, cases[i].text, cases[i].len);
                tt_format_ids(want_s, sizeof want_s, cases[i].ids, cases[i].num_ids);
                tt_format_ids(got, sizeof got, ids, ids ? m : 0);
            }
        }
        dec = tt_decode(t, cases[i].ids, cases[i].num_ids, &len);
        if (!dec || len != wl || memcmp(dec, w, wl)) {
            if (!bad_trip++) {
                first_trip = i;
                tt_format_hex(dec_want, sizeof dec_want, w, wl);
                tt_format_hex(dec_got, sizeof dec_got, dec ? dec : "", dec ? len : 0);
            }
        }
        free(dec);
        free(ids);
    }
    CHECK_MSG(n > 0, "%s: no cases", label);
    CHECK_MSG(bad_ids == 0, "%s: %zu of %zu cases encode differently; first, case %zu (input %s): want [%s], got [%s]",
              label, bad_ids, n, first_ids + 1, hex, want_s, got);
    CHECK_MSG(bad_trip == 0, "%s: %zu of %zu cases decode differently; first, case %zu: want %s, got %s", label,
              bad_trip, n, first_trip + 1, dec_want, dec_got);
}

/* Encodes every case: ids exactly the expected ones, and decoding gives the input back. */
static void tt_check_cases(const pf_tokenizer *t, const tt_case *cases, size_t n, const char *label) {
    tt_check_cases_with(t, cases, n, label, 0, NULL);
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

/* Random byte strings through a tokenizer that need not round-trip (a normalizer, unk tokens):
   encoding and decoding succeed, with and without special tokens. */
static void tt_check_random_strings(const pf_tokenizer *t, const char *label, uint64_t seed) {
    char text[256];
    size_t i, bad = 0;
    uint64_t st = seed;
    for (i = 0; i < 300; i++) {
        size_t len = tt_random_text(&st, text, sizeof text), n = 0, dl = 0;
        int32_t *ids = tt_encode_with(t, text, len, &n, (int)(i & 1));
        char *dec = ids ? tt_decode(t, ids, n, &dl) : NULL;
        bad += !ids || !dec;
        free(ids);
        free(dec);
    }
    CHECK_MSG(bad == 0, "%s: %zu of 300 random byte strings fail to encode or decode", label, bad);
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

/* Added tokens are found by an automaton (issue 31): at each place the longest added token (of
   equal matches the first added), left to right, non-normalized ones in the raw text first, then
   normalized ones in the normalized pieces between. Random token sets over a small alphabet, so that
   tokens overlap, nest and share prefixes and suffixes, against that rule written out by brute force. */
typedef struct tt_added {
    char content[8], match[8];
    size_t len;
    int normalized;
    int32_t id;
} tt_added;

/* The rule for one pass over s[0 .. n): ids of the added tokens, and of the bytes between (a
   gap: through gap() when given, else the vocab's ids of a and b, which are 0 and 1). */
static void tt_added_reference(const tt_added *tokens, size_t num, int pass, const char *s, size_t n, int32_t *ids,
                               size_t *count) {
    size_t p = 0, gap = 0, i, k;
    while (p <= n) {
        const tt_added *best = NULL;
        for (i = 0; p < n && i < num; i++)
            if (tokens[i].normalized == pass && tokens[i].len <= n - p && (!best || tokens[i].len > best->len) &&
                !memcmp(pass ? tokens[i].match : tokens[i].content, s + p, tokens[i].len))
                best = &tokens[i];
        if (!best && p < n) {
            p++;
            continue;
        }
        if (gap < p) { /* the piece before: normalized (lower-cased), then the other pass */
            char lower[64];
            for (k = gap; k < p; k++) lower[k - gap] = (char)(s[k] >= 'A' && s[k] <= 'Z' ? s[k] + 32 : s[k]);
            if (pass == 0) tt_added_reference(tokens, num, 1, lower, p - gap, ids, count);
            else
                for (k = 0; k < p - gap; k++) ids[(*count)++] = lower[k] == 'a' ? 0 : 1;
        }
        if (!best) break;
        ids[(*count)++] = best->id;
        gap = p += best->len;
    }
}

static void tt_test_added_matching(void) {
    static const char head[] =
        "{\"version\":\"1.0\",\"normalizer\":{\"type\":\"Lowercase\"},\"pre_tokenizer\":null,\"post_processor\":null,"
        "\"decoder\":null,\"model\":{\"type\":\"BPE\",\"vocab\":{\"a\":0,\"b\":1},\"merges\":[]},\"added_tokens\":[";
    uint64_t st = 31;
    char dir[256], json[4096];
    int round, bad = 0, texts = 0;
    if (tt_mkdtemp(dir, sizeof dir)) {
        CHECK_MSG(0, "cannot make a temp dir");
        return;
    }
    for (round = 0; round < 200 && !bad; round++) {
        tt_added tokens[12];
        size_t num = 0, want_tokens = 1 + tt_rand(&st) % 12, used, i, j;
        pf_tokenizer *t;
        used = (size_t)snprintf(json, sizeof json, "%s", head);
        while (num < want_tokens) {
            tt_added *a = &tokens[num];
            a->len = 1 + tt_rand(&st) % 4;
            for (i = 0; i < a->len; i++) a->content[i] = "abAB"[tt_rand(&st) % 4];
            a->content[a->len] = 0;
            for (i = 0; i <= a->len; i++)
                a->match[i] = (char)(a->content[i] >= 'A' && a->content[i] <= 'Z' ? a->content[i] + 32 : a->content[i]);
            a->normalized = (int)(tt_rand(&st) % 2);
            for (j = 0; j < num && strcmp(tokens[j].content, a->content); j++) {}
            if (j < num) continue; /* each content once */
            used += (size_t)snprintf(json + used, sizeof json - used, "%s{\"id\":0,\"content\":\"%s\",\"special\":false,"
                                     "\"normalized\":%s,\"lstrip\":false,\"rstrip\":false,\"single_word\":false}",
                                     num ? "," : "", a->content, a->normalized ? "true" : "false");
            num++;
        }
        snprintf(json + used, sizeof json - used, "]}");
        CHECK(tt_write(dir, "tokenizer.json", json, strlen(json)) == 0);
        if (!(t = tt_load(dir))) break;
        for (i = 0; i < num; i++) tokens[i].id = pf_tokenizer_token_id(t, tokens[i].content);
        for (j = 0; j < 40 && !bad; j++, texts++) {
            char text[48];
            int32_t want[48], *got;
            size_t n = tt_rand(&st) % sizeof text, count = 0, got_n = 0;
            for (i = 0; i < n; i++) text[i] = "abAB"[tt_rand(&st) % 4];
            tt_added_reference(tokens, num, 0, text, n, want, &count);
            got = tt_encode(t, text, n, &got_n);
            if (!got || !tt_same_ids(got, got_n, want, count)) {
                char want_s[300], got_s[300];
                tt_format_ids(want_s, sizeof want_s, want, count);
                tt_format_ids(got_s, sizeof got_s, got, got ? got_n : 0);
                CHECK_MSG(0, "added tokens %s, text \"%.*s\": want [%s], got [%s]", json + sizeof head - 1, (int)n, text,
                          want_s, got_s);
                bad = 1;
            }
            free(got);
        }
        pf_tokenizer_free(t);
    }
    CHECK_MSG(texts == 200 * 40, "%d random texts matched as the rule says", texts);
    tt_rmdir(dir);
}

/* ---- every fixture dir with cases: ids, special ids and decodes as HF's ---- */

typedef struct tt_dec_dir { /* a dir of tokenizer_decode_cases.txt */
    char name[128];
    int byte_level;
    tt_text *want; /* per case, cases.txt then cases_special.txt */
    size_t n, cap;
} tt_dec_dir;

static void tt_free_dec_dirs(tt_dec_dir *dirs, size_t n) {
    size_t i, j;
    for (i = 0; i < n; i++) {
        for (j = 0; j < dirs[i].n; j++) free(dirs[i].want[j].text);
        free(dirs[i].want);
    }
    free(dirs);
}

/* Decodes hex into a malloc'd string; NULL when malformed. */
static char *tt_unhex(const char *hex, size_t hex_len, size_t *len) {
    size_t i;
    char *out = (char *)malloc(hex_len / 2 + 1);
    if (!out || hex_len % 2) {
        free(out);
        return NULL;
    }
    for (i = 0; i < hex_len / 2; i++) {
        int hi = tt_hex(hex[2 * i]), lo = tt_hex(hex[2 * i + 1]);
        if (hi < 0 || lo < 0) {
            free(out);
            return NULL;
        }
        out[i] = (char)(hi * 16 + lo);
    }
    out[i] = 0;
    *len = i;
    return out;
}

/* Reads tokenizer_decode_cases.txt; NULL (and a failed check) when missing or malformed. */
static tt_dec_dir *tt_read_decode_cases(const char *path, size_t *num) {
    size_t len, n = 0, cap = 0, lineno = 0;
    char *data = test_read_file(path, &len), *line, *next;
    tt_dec_dir *dirs = NULL;
    CHECK_MSG(data != NULL, "cannot read %s", path);
    if (!data) return NULL;
    for (line = data; line < data + len; line = next) {
        char *end = strchr(line, '\n');
        if (!end) end = data + len;
        next = end + 1;
        *end = 0;
        lineno++;
        if (line == end) continue;
        if (!strncmp(line, "dir\t", 4)) {
            char *tab = strchr(line + 4, '\t');
            if (!tab || (size_t)(tab - line - 4) >= sizeof dirs[0].name) goto bad;
            if (n == cap) {
                tt_dec_dir *q = (tt_dec_dir *)realloc(dirs, (cap = 2 * cap + 16) * sizeof *q);
                if (!q) goto bad;
                dirs = q;
            }
            memset(&dirs[n], 0, sizeof dirs[n]);
            memcpy(dirs[n].name, line + 4, (size_t)(tab - line - 4));
            dirs[n].byte_level = tab[1] == '1';
            n++;
        } else {
            tt_dec_dir *d = n ? &dirs[n - 1] : NULL;
            if (!d) goto bad;
            if (d->n == d->cap) {
                tt_text *q = (tt_text *)realloc(d->want, (d->cap = 2 * d->cap + 64) * sizeof *q);
                if (!q) goto bad;
                d->want = q;
            }
            d->want[d->n].text = NULL;
            d->want[d->n].len = 0;
            if (strcmp(line, "=") && !(d->want[d->n].text = tt_unhex(line, strcmp(line, "-") ? strlen(line) : 0,
                                                                      &d->want[d->n].len)))
                goto bad;
            d->n++;
        }
    }
    free(data);
    *num = n;
    return dirs;
bad:
    CHECK_MSG(0, "%s: line %zu is malformed", path, lineno);
    free(data);
    tt_free_dec_dirs(dirs, n);
    return NULL;
}

static tt_case *tt_read_fixture_cases(const char *dir, const char *name, size_t *n) {
    char path[1100];
    snprintf(path, sizeof path, "%s/%s/%s", test_fixtures, dir, name);
    if (access(path, R_OK) != 0) {
        *n = 0;
        return NULL;
    }
    return tt_read_cases(path, n);
}

/* Every fixture dir with a cases.txt is in tokenizer_decode_cases.txt, and gives HF's ids (with
   pf_tokenize; cases_special.txt with pf_tokenize_special) and HF's decodes; byte-level ones
   round-trip random bytes too. */
static void tt_test_families(void) {
    char path[1100], label[300];
    size_t nd = 0, i;
    tt_dec_dir *dirs;
    DIR *dir;
    struct dirent *e;
    snprintf(path, sizeof path, "%s/../tokenizer_decode_cases.txt", test_fixtures);
    dirs = tt_read_decode_cases(path, &nd);
    if (!dirs) return;
    if ((dir = opendir(test_fixtures)) != NULL) {
        while ((e = readdir(dir)) != NULL) {
            snprintf(path, sizeof path, "%s/%s/cases.txt", test_fixtures, e->d_name);
            if (e->d_name[0] == '.' || access(path, R_OK) != 0) continue;
            for (i = 0; i < nd && strcmp(dirs[i].name, e->d_name); i++) {}
            CHECK_MSG(i < nd, "fixture %s has cases.txt but no decodes in tokenizer_decode_cases.txt "
                      "(run test/make_tokenizer_cases.py)", e->d_name);
        }
        closedir(dir);
    }
    for (i = 0; i < nd; i++) {
        size_t n = 0, ns = 0;
        tt_case *cases = tt_read_fixture_cases(dirs[i].name, "cases.txt", &n);
        tt_case *special = tt_read_fixture_cases(dirs[i].name, "cases_special.txt", &ns);
        pf_tokenizer *t = tt_load_fixture(dirs[i].name);
        CHECK_MSG(dirs[i].n == n + ns, "%s: %zu decodes for %zu cases", dirs[i].name, dirs[i].n, n + ns);
        if (t && cases && dirs[i].n == n + ns) {
            snprintf(label, sizeof label, "%s (cases.txt)", dirs[i].name);
            tt_check_cases_with(t, cases, n, label, 0, dirs[i].want);
            if (special) {
                snprintf(label, sizeof label, "%s (cases_special.txt)", dirs[i].name);
                tt_check_cases_with(t, special, ns, label, 1, dirs[i].want + n);
            }
            if (dirs[i].byte_level) tt_check_random_round_trips(t, dirs[i].name, 7 + i);
            else tt_check_random_strings(t, dirs[i].name, 7 + i);
            /* the WordPiece and the Unigram (Precompiled) tokenizers from several threads at once */
            if (!strcmp(dirs[i].name, "tokenizer-bert") || !strcmp(dirs[i].name, "tokenizer-xlmr"))
                tt_check_threads(t, cases, n);
        }
        pf_tokenizer_free(t);
        tt_free_cases(cases, n);
        tt_free_cases(special, ns);
    }
    tt_free_dec_dirs(dirs, nd);
}

/* Parses comma-separated ids into out (at most cap); their count, or -1 when malformed. */
static long tt_parse_ids(const char *s, int32_t *out, size_t cap) {
    size_t n = 0;
    char *e;
    while (*s) {
        long v = strtol(s, &e, 10);
        if (e == s || n == cap || (*e && *e != ',')) return -1;
        out[n++] = (int32_t)v;
        s = *e ? e + 1 : e;
    }
    return (long)n;
}

/* Every fixture dir's cases_pair.txt: pf_tokenize_pair gives HF's ids and type ids for texts and
   pairs, with and without special tokens, under every truncation strategy (and fails where HF
   does). Line: hex a, hex b or -, special, max_length, strategy, ids or "error", type ids. */
static void tt_test_pairs(void) {
    DIR *dir = opendir(test_fixtures);
    struct dirent *e;
    size_t dirs = 0;
    CHECK_MSG(dir != NULL, "cannot list %s", test_fixtures);
    if (!dir) return;
    while ((e = readdir(dir)) != NULL) {
        char path[1100], *data, *line, *next, first[1200] = "";
        size_t len, n = 0, bad = 0;
        pf_tokenizer *t;
        snprintf(path, sizeof path, "%s/%s/cases_pair.txt", test_fixtures, e->d_name);
        if (e->d_name[0] == '.' || access(path, R_OK)) continue;
        if (!(data = test_read_file(path, &len))) continue;
        if (!(t = tt_load_fixture(e->d_name))) {
            free(data);
            continue;
        }
        dirs++;
        for (line = data; line < data + len; line = next) {
            char *f[7], *end = strchr(line, '\n'), *a = NULL, *b = NULL;
            int k, err;
            size_t la = 0, lb = 0, got_n = 0;
            int32_t want[2048], want_types[2048], got[2048], got_types[2048];
            long nw = 0, nt = 0;
            pf_tokenize_options o = pf_tokenize_options_init();
            pf_result r;
            if (!end) end = data + len;
            next = end + 1;
            *end = 0;
            if (line == end) continue;
            n++;
            f[0] = line;
            for (k = 1; k < 7 && f[k - 1]; k++) {
                f[k] = strchr(f[k - 1], '\t');
                if (f[k]) *f[k]++ = 0;
            }
            if (!f[6] || !(a = tt_unhex(f[0], strlen(f[0]), &la)) ||
                (strcmp(f[1], "-") && !(b = tt_unhex(f[1], strlen(f[1]), &lb)))) {
                bad++;
                free(a);
                continue;
            }
            err = !strcmp(f[5], "error");
            if (!err) {
                nw = tt_parse_ids(f[5], want, 2048);
                nt = tt_parse_ids(f[6], want_types, 2048);
            }
            o.no_special_tokens = f[2][0] == '0';
            o.max_length = (size_t)strtoul(f[3], NULL, 10);
            o.truncation = !strcmp(f[4], "only_first") ? PF_TRUNCATION_ONLY_FIRST
                           : !strcmp(f[4], "only_second") ? PF_TRUNCATION_ONLY_SECOND : PF_TRUNCATION_LONGEST_FIRST;
            r = pf_tokenize_pair(t, a, la, b, lb, &o, got, got_types, 2048, &got_n);
            if (err ? r != PF_ERROR_INVALID_ARGUMENT
                    : r != PF_OK || nw < 0 || nt != nw || !tt_same_ids(got, got_n, want, (size_t)nw) ||
                          !tt_same_ids(got_types, got_n, want_types, (size_t)nt)) {
                if (!bad++) {
                    char ws[200], gs[200], wt[200], gt[200];
                    tt_format_ids(ws, sizeof ws, want, nw > 0 ? (size_t)nw : 0);
                    tt_format_ids(gs, sizeof gs, got, r == PF_OK ? got_n : 0);
                    tt_format_ids(wt, sizeof wt, want_types, nt > 0 ? (size_t)nt : 0);
                    tt_format_ids(gt, sizeof gt, got_types, r == PF_OK ? got_n : 0);
                    snprintf(first, sizeof first, "line %zu (special %s, max_length %s, %s): %s; want [%s] types [%s], "
                             "got [%s] types [%s]", n, f[2], f[3], f[4], pf_result_string(r), err ? "error" : ws, wt, gs, gt);
                }
            }
            free(a);
            free(b);
        }
        CHECK_MSG(n > 0 && bad == 0, "%s: %zu of %zu pair cases differ; first, %s", e->d_name, bad, n, first);
        pf_tokenizer_free(t);
        free(data);
    }
    closedir(dir);
    CHECK_MSG(dirs >= 2, "only %zu fixture dirs with cases_pair.txt", dirs);
}

/* pf_tokenize_pair on a hand-made template (the second text first, type ids on every piece, a
   two-id special token; ids from HF 0.23), truncation around it, and bad arguments. */
static void tt_test_pair_api(void) {
    static const char json[] =
        "{\"pre_tokenizer\":{\"type\":\"WhitespaceSplit\"},\"post_processor\":{\"type\":\"TemplateProcessing\","
        "\"single\":[{\"Sequence\":{\"id\":\"A\",\"type_id\":3}},{\"SpecialToken\":{\"id\":\"<e>\",\"type_id\":4}}],"
        "\"pair\":[{\"SpecialToken\":{\"id\":\"<e>\",\"type_id\":2}},{\"Sequence\":{\"id\":\"B\",\"type_id\":1}},"
        "{\"SpecialToken\":{\"id\":\"<x>\",\"type_id\":0}},{\"Sequence\":{\"id\":\"A\",\"type_id\":5}}],"
        "\"special_tokens\":{\"<e>\":{\"id\":\"<e>\",\"ids\":[4,5],\"tokens\":[\"<e>\",\"<f>\"]},\"<x>\":{\"id\":\"<x>\","
        "\"ids\":[6],\"tokens\":[\"<x>\"]}}},\"model\":{\"type\":\"BPE\",\"vocab\":{\"a\":0,\"b\":1,\"c\":2,\"<unk>\":3,"
        "\"<e>\":4,\"<f>\":5,\"<x>\":6},\"merges\":[]}}";
    static const struct {
        const char *a, *b;
        int special;
        size_t max_length;
        pf_truncation truncation;
        int n;
        int32_t ids[8], types[8];
    } want[] = {
        {"a b", "c", 1, 0, PF_TRUNCATION_LONGEST_FIRST, 6, {4, 5, 2, 6, 0, 1}, {2, 2, 1, 0, 5, 5}},
        {"a b", "c", 0, 0, PF_TRUNCATION_LONGEST_FIRST, 3, {2, 0, 1}, {1, 5, 5}},
        {"a b", NULL, 1, 0, PF_TRUNCATION_LONGEST_FIRST, 4, {0, 1, 4, 5}, {3, 3, 4, 4}},
        {"a b c a", "b c", 1, 5, PF_TRUNCATION_LONGEST_FIRST, 5, {4, 5, 1, 6, 0}, {2, 2, 1, 0, 5}},
        {"a b c a", "b c", 1, 3, PF_TRUNCATION_ONLY_SECOND, 3, {4, 5, 6}, {2, 2, 0}},
        {"a b c a", "b c", 0, 3, PF_TRUNCATION_ONLY_FIRST, 3, {1, 2, 0}, {1, 1, 5}},
        {"a b c a", NULL, 1, 3, PF_TRUNCATION_LONGEST_FIRST, 3, {0, 4, 5}, {3, 4, 4}},
    };
    char dir[256], ws[200], gs[200];
    pf_tokenizer *t;
    size_t i, n = 0;
    int32_t ids[16], types[16];
    pf_tokenize_options o = pf_tokenize_options_init();
    pf_result r;
    CHECK(o.no_special_tokens == 0 && o.max_length == 0 && o.truncation == PF_TRUNCATION_LONGEST_FIRST);
    if (tt_mkdtemp(dir, sizeof dir)) {
        CHECK_MSG(0, "cannot make a temp dir");
        return;
    }
    CHECK(tt_write(dir, "tokenizer.json", json, sizeof json - 1) == 0);
    t = tt_load(dir);
    tt_rmdir(dir);
    if (!t) return;
    for (i = 0; i < sizeof want / sizeof want[0]; i++) {
        o.no_special_tokens = !want[i].special;
        o.max_length = want[i].max_length;
        o.truncation = want[i].truncation;
        r = pf_tokenize_pair(t, want[i].a, strlen(want[i].a), want[i].b, want[i].b ? strlen(want[i].b) : 0, &o, ids,
                             types, 16, &n);
        tt_format_ids(ws, sizeof ws, want[i].ids, (size_t)want[i].n);
        tt_format_ids(gs, sizeof gs, ids, r == PF_OK ? n : 0);
        CHECK_MSG(r == PF_OK && tt_same_ids(ids, n, want[i].ids, (size_t)want[i].n) &&
                  tt_same_ids(types, n, want[i].types, (size_t)want[i].n), "pair case %zu: %s, want [%s], got [%s]",
                  i + 1, pf_result_string(r), ws, gs);
    }
    /* too small a buffer: the count, and ids and type ids up to the capacity */
    ids[2] = types[2] = -7;
    r = pf_tokenize_pair(t, "a b", 3, "c", 1, NULL, ids, types, 2, &n);
    CHECK_MSG(r == PF_ERROR_BUFFER_TOO_SMALL && n == 6 && ids[0] == 4 && ids[1] == 5 && types[1] == 2 && ids[2] == -7 &&
              types[2] == -7, "pair into 2 entries: %s, %zu ids", pf_result_string(r), n);
    r = pf_tokenize_pair(t, "a b", 3, "", 0, NULL, NULL, NULL, 0, &n);
    CHECK_MSG(r == PF_ERROR_BUFFER_TOO_SMALL && n == 5, "counting a pair with an empty second text: %s, %zu",
              pf_result_string(r), n);
    /* refusals: max_length below the special tokens, a cut longer than the text, ONLY_SECOND alone */
    o = pf_tokenize_options_init();
    o.max_length = 2;
    CHECK(pf_tokenize_pair(t, "a", 1, "b", 1, &o, ids, types, 16, &n) == PF_ERROR_INVALID_ARGUMENT && n == 0);
    o.max_length = 4;
    o.truncation = PF_TRUNCATION_ONLY_FIRST;
    CHECK(pf_tokenize_pair(t, "a", 1, "b c", 3, &o, ids, types, 16, &n) == PF_ERROR_INVALID_ARGUMENT);
    o.truncation = PF_TRUNCATION_ONLY_SECOND;
    CHECK(pf_tokenize_pair(t, "a b c", 5, NULL, 0, &o, ids, types, 16, &n) == PF_ERROR_INVALID_ARGUMENT);
    CHECK(pf_tokenize_pair(t, "a", 1, NULL, 0, &o, ids, types, 16, &n) == PF_OK && n == 3);
    o.truncation = (pf_truncation)7;
    CHECK(pf_tokenize_pair(t, "a", 1, NULL, 0, &o, ids, types, 16, &n) == PF_ERROR_INVALID_ARGUMENT);
    CHECK(pf_tokenize_pair(t, "a", 1, NULL, 1, NULL, ids, types, 16, &n) == PF_ERROR_INVALID_ARGUMENT);
    CHECK(pf_tokenize_pair(NULL, "a", 1, "b", 1, NULL, ids, types, 16, &n) == PF_ERROR_INVALID_ARGUMENT);
    CHECK(pf_tokenize_pair(t, "a", 1, "b", 1, NULL, ids, types, 16, NULL) == PF_ERROR_INVALID_ARGUMENT);
    pf_tokenizer_free(t);
}

/* Every model fixture's tokenizer encodes its prompt_text to its prompt_ids with the special
   tokens transformers adds (pf_tokenize_special). */
static void tt_test_prompts(void) {
    DIR *dir = opendir(test_fixtures);
    struct dirent *e;
    int checked = 0;
    CHECK_MSG(dir != NULL, "cannot list %s", test_fixtures);
    if (!dir) return;
    while ((e = readdir(dir)) != NULL) {
        char path[1100], tdir[1100], *data, *text, *ids_line, *p;
        size_t len, n = 0, m = 0;
        int32_t want[256], *got;
        pf_tokenizer *t;
        snprintf(path, sizeof path, "%s/%s/reference.txt", test_fixtures, e->d_name);
        snprintf(tdir, sizeof tdir, "%s/%s/tokenizer.json", test_fixtures, e->d_name);
        if (e->d_name[0] == '.' || access(path, R_OK) || access(tdir, R_OK)) continue;
        if (!(data = test_read_file(path, &len))) continue;
        text = strstr(data, "prompt_text=");
        ids_line = strstr(data, "prompt_ids=");
        if (text && ids_line) {
            text += 12;
            *strchr(text, '\n') = 0;
            for (p = ids_line + 11; *p && *p != '\n' && n < 256;) {
                want[n++] = (int32_t)strtol(p, &p, 10);
                if (*p == ',') p++;
            }
            snprintf(tdir, sizeof tdir, "%s/%s", test_fixtures, e->d_name);
            if ((t = tt_load(tdir)) != NULL) {
                char want_s[400], got_s[400];
                got = tt_encode_with(t, text, strlen(text), &m, 1);
                tt_format_ids(want_s, sizeof want_s, want, n);
                tt_format_ids(got_s, sizeof got_s, got, got ? m : 0);
                CHECK_MSG(got && tt_same_ids(got, m, want, n), "%s: prompt with special tokens: want [%s], got [%s]",
                          e->d_name, want_s, got_s);
                free(got);
                pf_tokenizer_free(t);
                checked++;
            }
        }
        free(data);
    }
    closedir(dir);
    CHECK_MSG(checked >= 10, "only %d fixture prompts checked", checked);
}

/* ---- styles: random strings through small tokenizers, against HF ---- */

/* The probe vocab of make_tokenizer_cases.py as JSON: byte-level, GPT-2's byte characters (id =
   byte) and each with "</w>" (256 + byte); else the byte-fallback tokens <0xXX> (id = byte). */
static char *tt_style_vocab(int byte_level) {
    char *out = (char *)malloc(256 * 40 + 8), *p = out;
    int b, n = 0;
    if (!out) return NULL;
    *p++ = '{';
    for (b = 0; b < 256; b++) {
        int printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
        int ch = printable ? b : 256 + n++;
        if (byte_level)
            p += sprintf(p, "%s\"\\u%04x\":%d,\"\\u%04x</w>\":%d", b ? "," : "", ch, b, ch, 256 + b);
        else
            p += sprintf(p, "%s\"<0x%02X>\":%d", b ? "," : "", b, b);
    }
    strcpy(p, "}");
    return out;
}

/* Writes a style's tokenizer.json (its "@VOCAB@" replaced) into a fresh dir and loads it. */
static pf_tokenizer *tt_load_style(const char *json, char *dir, size_t dir_size) {
    const char *at = strstr(json, "\"@VOCAB@\"");
    char *vocab, *full;
    pf_tokenizer *t = NULL;
    size_t len;
    if (!at || tt_mkdtemp(dir, dir_size)) return NULL;
    vocab = tt_style_vocab(strstr(json, "\"byte_fallback\":true") == NULL);
    full = vocab ? (char *)malloc(strlen(json) + strlen(vocab) + 1) : NULL;
    if (full) {
        len = (size_t)(at - json);
        memcpy(full, json, len);
        strcpy(full + len, vocab);
        strcat(full, at + 9);
        if (tt_write(dir, "tokenizer.json", full, strlen(full)) == 0) t = tt_load(dir);
    }
    free(vocab);
    free(full);
    tt_rmdir(dir);
    return t;
}

/* tokenizer_style_cases.txt (or $PF_TOKENIZER_STYLE_CASES): for each style, every case's ids and
   decode as HF's. */
static void tt_test_styles(void) {
    char path[1100], dir[256], *data, *line, *next, name[128] = "";
    const char *env = getenv("PF_TOKENIZER_STYLE_CASES");
    size_t len, n = 0, bad = 0, bad_dec = 0, styles = 0, total = 0;
    pf_tokenizer *t = NULL;
    char first[700] = "";
    if (env && *env) snprintf(path, sizeof path, "%s", env);
    else snprintf(path, sizeof path, "%s/../tokenizer_style_cases.txt", test_fixtures);
    data = test_read_file(path, &len);
    CHECK_MSG(data != NULL, "cannot read %s", path);
    if (!data) return;
    for (line = data; line <= data + len; line = next) {
        char *end = line < data + len ? strchr(line, '\n') : NULL;
        if (!end) end = data + len;
        next = end + 1;
        *end = 0;
        if (line == end || !strncmp(line, "style\t", 6)) { /* the end of a style */
            if (name[0]) {
                CHECK_MSG(t && n > 0 && bad == 0 && bad_dec == 0, "style %s: %s; %zu of %zu cases encode, %zu decode "
                          "differently; first: %s", name, t ? "loaded" : "does not load", bad, n, bad_dec, first);
                pf_tokenizer_free(t);
                t = NULL;
                name[0] = 0;
            }
            if (line == end) continue;
        }
        if (!strncmp(line, "style\t", 6)) {
            char *tab = strchr(line + 6, '\t');
            if (!tab) break;
            snprintf(name, sizeof name, "%.*s", (int)(tab - line - 6), line + 6);
            t = tt_load_style(tab + 1, dir, sizeof dir);
            n = bad = bad_dec = 0;
            first[0] = 0;
            styles++;
            continue;
        }
        if (t) { /* <hex input> \t <ids> \t <hex decode or => */
            char *t1 = strchr(line, '\t'), *t2 = t1 ? strchr(t1 + 1, '\t') : NULL, *p, *text = NULL, *dec = NULL, *want_dec;
            size_t tl = 0, m = 0, nw = 0, dl = 0, wl = 0;
            int32_t *want = NULL, *got = NULL;
            n++;
            total++;
            if (t1 && t2) {
                text = tt_unhex(line, (size_t)(t1 - line), &tl);
                want = (int32_t *)malloc(((size_t)(t2 - t1) + 1) * sizeof *want);
            }
            if (!text || !want) {
                bad++;
                free(text);
                free(want);
                continue;
            }
            for (p = t1 + 1; p < t2;) {
                want[nw++] = (int32_t)strtol(p, &p, 10);
                if (*p == ',') p++;
            }
            got = tt_encode(t, text, tl, &m);
            if (!got || !tt_same_ids(got, m, want, nw)) {
                if (!bad++) {
                    char h[200], ws[200], gs[200];
                    tt_format_hex(h, sizeof h, text, tl);
                    tt_format_ids(ws, sizeof ws, want, nw);
                    tt_format_ids(gs, sizeof gs, got, got ? m : 0);
                    snprintf(first, sizeof first, "input %s: want [%s], got [%s]", h, ws, gs);
                }
            }
            want_dec = strcmp(t2 + 1, "=") ? tt_unhex(t2 + 1, strlen(t2 + 1), &wl) : NULL;
            dec = tt_decode(t, want, nw, &dl);
            if (!want_dec && strcmp(t2 + 1, "=") == 0) {
                if (!dec || dl != tl || memcmp(dec, text, tl)) bad_dec++;
            } else if (!want_dec || !dec || dl != wl || memcmp(dec, want_dec, wl)) {
                if (!bad_dec++ && !first[0]) {
                    char h[200], gs[200];
                    tt_format_hex(h, sizeof h, text, tl);
                    tt_format_hex(gs, sizeof gs, dec ? dec : "", dec ? dl : 0);
                    snprintf(first, sizeof first, "decode of input %s: got %s", h, gs);
                }
            }
            free(want_dec);
            free(dec);
            free(got);
            free(want);
            free(text);
        }
        if (end == data + len) break;
    }
    if (name[0]) {
        CHECK_MSG(t && n > 0 && bad == 0 && bad_dec == 0, "style %s: %zu of %zu cases encode, %zu decode differently; "
                  "first: %s", name, bad, n, bad_dec, first);
        pf_tokenizer_free(t);
    }
    free(data);
    CHECK_MSG(styles >= 20 && total >= 1000, "%s: only %zu styles, %zu cases", path, styles, total);
}

/* ---- model options, post-processors and decoders on hand-made tokenizers (ids from HF 0.23) ---- */

typedef struct tt_hand_case {
    const char *text;
    int n, ns; /* ids without and with special tokens */
    int32_t ids[8], special[8];
    const char *decoded, *decoded_special; /* HF's decode of each */
} tt_hand_case;

static void tt_check_hand(const char *label, const char *json, const tt_hand_case *cases, size_t num) {
    char dir[256], ws[200], gs[200];
    pf_tokenizer *t;
    size_t i, n, len;
    if (tt_mkdtemp(dir, sizeof dir)) {
        CHECK_MSG(0, "cannot make a temp dir");
        return;
    }
    CHECK(tt_write(dir, "tokenizer.json", json, strlen(json)) == 0);
    t = tt_load(dir);
    tt_rmdir(dir);
    if (!t) return;
    for (i = 0; i < num; i++) {
        int special;
        for (special = 0; special < 2; special++) {
            const int32_t *want = special ? cases[i].special : cases[i].ids;
            int nw = special ? cases[i].ns : cases[i].n;
            const char *want_dec = special ? cases[i].decoded_special : cases[i].decoded;
            int32_t *ids = tt_encode_with(t, cases[i].text, strlen(cases[i].text), &n, special);
            char *dec = tt_decode(t, want, (size_t)nw, &len);
            tt_format_ids(ws, sizeof ws, want, (size_t)nw);
            tt_format_ids(gs, sizeof gs, ids, ids ? n : 0);
            CHECK_MSG(ids && tt_same_ids(ids, n, want, (size_t)nw), "%s: \"%s\"%s: want [%s], got [%s]", label,
                      cases[i].text, special ? " with special tokens" : "", ws, gs);
            CHECK_MSG(dec && len == strlen(want_dec) && !memcmp(dec, want_dec, len), "%s: decode of [%s]: want \"%s\", "
                      "got \"%s\"", label, ws, want_dec, dec ? dec : "(failed)");
            free(ids);
            free(dec);
        }
    }
    pf_tokenizer_free(t);
}

static void tt_test_components(void) {
    /* continuing_subword_prefix: merges drop the prefix of their second token; BertProcessing;
       no decoder: tokens joined with spaces */
    static const char json_a[] =
        "{\"version\":\"1.0\",\"added_tokens\":[],\"normalizer\":null,\"pre_tokenizer\":{\"type\":\"WhitespaceSplit\"},"
        "\"post_processor\":{\"type\":\"BertProcessing\",\"sep\":[\"[SEP]\",7],\"cls\":[\"[CLS]\",6]},\"decoder\":null,"
        "\"model\":{\"type\":\"BPE\",\"continuing_subword_prefix\":\"##\",\"vocab\":{\"a\":0,\"b\":1,\"##b\":2,\"ab\":3,"
        "\"##c\":4,\"c\":5,\"[CLS]\":6,\"[SEP]\":7,\"##a\":8},\"merges\":[[\"a\",\"##b\"]]}}";
    static const tt_hand_case cases_a[] = {
        {"abc", 2, 4, {3, 4}, {6, 3, 4, 7}, "ab ##c", "[CLS] ab ##c [SEP]"},
        {"ab ab", 2, 4, {3, 3}, {6, 3, 3, 7}, "ab ab", "[CLS] ab ab [SEP]"},
        {"cab", 3, 5, {5, 8, 2}, {6, 5, 8, 2, 7}, "c ##a ##b", "[CLS] c ##a ##b [SEP]"},
        {"a", 1, 3, {0}, {6, 0, 7}, "a", "[CLS] a [SEP]"},
    };
    /* end_of_word_suffix; a Sequence post-processor (ByteLevel, then a template with a
       two-id special token); BPEDecoder then Strip */
    static const char json_b[] =
        "{\"version\":\"1.0\",\"added_tokens\":[],\"normalizer\":null,\"pre_tokenizer\":{\"type\":\"WhitespaceSplit\"},"
        "\"post_processor\":{\"type\":\"Sequence\",\"processors\":[{\"type\":\"ByteLevel\",\"add_prefix_space\":true,"
        "\"trim_offsets\":false,\"use_regex\":true},{\"type\":\"TemplateProcessing\",\"single\":[{\"SpecialToken\":{\"id\":"
        "\"<s>\",\"type_id\":0}},{\"Sequence\":{\"id\":\"A\",\"type_id\":0}},{\"SpecialToken\":{\"id\":\"</s>\",\"type_id\":"
        "0}}],\"pair\":[],\"special_tokens\":{\"<s>\":{\"id\":\"<s>\",\"ids\":[4],\"tokens\":[\"<s>\"]},\"</s>\":{\"id\":"
        "\"</s>\",\"ids\":[5,5],\"tokens\":[\"</s>\",\"</s>\"]}}}]},\"decoder\":{\"type\":\"Sequence\",\"decoders\":[{\"type\":"
        "\"BPEDecoder\",\"suffix\":\"</w>\"},{\"type\":\"Strip\",\"content\":\"a\",\"start\":2,\"stop\":0}]},"
        "\"model\":{\"type\":\"BPE\",\"end_of_word_suffix\":\"</w>\",\"unk_token\":\"<unk>\",\"vocab\":{\"<unk>\":0,"
        "\"a\":1,\"a</w>\":2,\"b</w>\":3,\"<s>\":4,\"</s>\":5,\"x\":6},\"merges\":[]}}";
    static const tt_hand_case cases_b[] = {
        {"a b", 2, 5, {2, 3}, {4, 2, 3, 5, 5}, " b", "<s> b </s></s>"},
        {"aa ab", 4, 7, {1, 2, 1, 3}, {4, 1, 2, 1, 3, 5, 5}, " b", "<s> b </s></s>"},
        {"b", 1, 4, {3}, {4, 3, 5, 5}, "b", "<s>b </s></s>"},
        {"", 0, 3, {0}, {4, 5, 5}, "", "<s></s></s>"},
        {"xa", 2, 5, {6, 2}, {4, 6, 2, 5, 5}, "x", "<s>x </s></s>"},
    };
    /* byte_fallback with some byte tokens missing, unk fused: HF puts the byte-fallback tokens of
       a later character before a pending unk; ByteFallback, Fuse, Replace decoders (bytes that
       are not valid UTF-8 are kept where HF writes U+FFFD) */
    static const char json_c[] =
        "{\"version\":\"1.0\",\"added_tokens\":[],\"normalizer\":null,\"pre_tokenizer\":null,\"post_processor\":null,"
        "\"decoder\":{\"type\":\"Sequence\",\"decoders\":[{\"type\":\"ByteFallback\"},{\"type\":\"Fuse\"},{\"type\":"
        "\"Replace\",\"pattern\":{\"String\":\"aa\"},\"content\":\"<A>\"}]},\"model\":{\"type\":\"BPE\",\"unk_token\":"
        "\"<unk>\",\"fuse_unk\":true,\"byte_fallback\":true,\"vocab\":{\"<unk>\":0,\"<0xC3>\":1,\"<0xA9>\":2,\"a\":3,"
        "\"<0x61>\":4,\"<0xE6>\":5,\"<0x9D>\":6,\"<0xB1>\":7},\"merges\":[]}}";
    static const tt_hand_case cases_c[] = {
        {"a\xc3\xa9" "a", 4, 4, {3, 1, 2, 3}, {3, 1, 2, 3}, "a\xc3\xa9" "a", "a\xc3\xa9" "a"},
        {"zz\xc3\xa9", 3, 3, {1, 2, 0}, {1, 2, 0}, "\xc3\xa9<unk>", "\xc3\xa9<unk>"},
        {"z\xc3\xa9za", 4, 4, {1, 2, 0, 3}, {1, 2, 0, 3}, "\xc3\xa9<unk>a", "\xc3\xa9<unk>a"},
        {"aaa\xe6\x9d\xb1", 6, 6, {3, 3, 3, 5, 6, 7}, {3, 3, 3, 5, 6, 7}, "<A>a\xe6\x9d\xb1", "<A>a\xe6\x9d\xb1"},
        {"\xe6\x9d\xb1z", 4, 4, {5, 6, 7, 0}, {5, 6, 7, 0}, "\xe6\x9d\xb1<unk>", "\xe6\x9d\xb1<unk>"},
        {"\xc3" "a\xa9", 3, 3, {1, 3, 2}, {1, 3, 2}, "\xc3" "a\xa9", "\xc3" "a\xa9"},
    };
    /* WordPiece with its own prefix: the longest piece first, a word with a place no piece starts
       or longer than max_input_chars_per_word is unk; the decoder's prefix and cleanup */
    static const char json_d[] =
        "{\"version\":\"1.0\",\"added_tokens\":[],\"normalizer\":null,\"pre_tokenizer\":{\"type\":\"WhitespaceSplit\"},"
        "\"post_processor\":null,\"decoder\":{\"type\":\"WordPiece\",\"prefix\":\"@@\",\"cleanup\":true},\"model\":{"
        "\"type\":\"WordPiece\",\"unk_token\":\"<unk>\",\"continuing_subword_prefix\":\"@@\",\"max_input_chars_per_word\":6,"
        "\"vocab\":{\"<unk>\":0,\"a\":1,\"ab\":2,\"@@b\":3,\"@@c\":4,\"abc\":5,\"'\":6,\"@@'\":7,\"n't\":8,\"do\":9,"
        "\"not\":10,\".\":11,\"@@.\":12,\"\\u00e9\":13,\"@@\\u00e9\":14,\"x\":15}}}";
    static const tt_hand_case cases_d[] = {
        {"abc", 1, 1, {5}, {5}, "abc", "abc"},
        {"abbc", 3, 3, {2, 3, 4}, {2, 3, 4}, "abbc", "abbc"},
        {"ab ac", 3, 3, {2, 1, 4}, {2, 1, 4}, "ab ac", "ab ac"},
        {"abcabc", 1, 1, {0}, {0}, "<unk>", "<unk>"},
        {"aaaaaaa", 1, 1, {0}, {0}, "<unk>", "<unk>"},
        {"do not", 2, 2, {9, 10}, {9, 10}, "do not", "do not"},
        {"a ' n't", 3, 3, {1, 6, 8}, {1, 6, 8}, "a 'n't", "a 'n't"},
        {"a .", 2, 2, {1, 11}, {1, 11}, "a.", "a."},
        {"a.", 2, 2, {1, 12}, {1, 12}, "a.", "a."},
        {"a\xc3\xa9", 2, 2, {1, 14}, {1, 14}, "a\xc3\xa9", "a\xc3\xa9"},
        {"x. abd", 3, 3, {15, 12, 0}, {15, 12, 0}, "x. <unk>", "x. <unk>"},
    };
    /* WordPiece without its unk token, and Unigram without unk_id: a word that needs it fails the
       encoding, as in HF */
    static const char json_e[] =
        "{\"pre_tokenizer\":{\"type\":\"WhitespaceSplit\"},\"model\":{\"type\":\"WordPiece\",\"vocab\":{\"a\":0,\"##b\":1}}}";
    static const char json_h[] =
        "{\"pre_tokenizer\":{\"type\":\"WhitespaceSplit\"},\"model\":{\"type\":\"Unigram\",\"unk_id\":null,\"vocab\":"
        "[[\"a\",-1],[\"b\",-1],[\"ab\",-1.5]]}}";
    /* Unigram: positive scores (an unknown character costs the lowest score less 10), ties kept
       by the first path found, a repeated piece (its last id and score), byte_fallback with a
       byte token missing (unk then), a piece after fallback bytes */
    static const char json_f[] =
        "{\"pre_tokenizer\":{\"type\":\"WhitespaceSplit\"},\"decoder\":{\"type\":\"Sequence\",\"decoders\":[{\"type\":"
        "\"ByteFallback\"},{\"type\":\"Fuse\"}]},\"model\":{\"type\":\"Unigram\",\"unk_id\":0,\"byte_fallback\":true,"
        "\"vocab\":[[\"<unk>\",0.0],[\"a\",5.0],[\"c\",5.0],[\"abc\",1.0],[\"x\",-1.0],[\"y\",-1.0],[\"xy\",-2.0],"
        "[\"yz\",-2.0],[\"z\",-1.0],[\"qq\",-100.0],[\"<0xC3>\",-3.0],[\"<0xA9>\",-3.0],[\"<0x71>\",-3.0],[\"d\",-1.0],"
        "[\"d\",-4.0],[\"\\u00e9e\",-2.0]]}}";
    static const tt_hand_case cases_f[] = {
        {"abc", 1, 1, {3}, {3}, "abc", "abc"},
        {"ab", 2, 2, {1, 0}, {1, 0}, "a<unk>", "a<unk>"},
        {"bb", 1, 1, {0}, {0}, "<unk>", "<unk>"},
        {"xyzxyz", 4, 4, {4, 7, 4, 7}, {4, 7, 4, 7}, "xyzxyz", "xyzxyz"},
        {"qq q", 2, 2, {9, 12}, {9, 12}, "qqq", "qqq"},
        {"\xc3\xa9q", 3, 3, {10, 11, 12}, {10, 11, 12}, "\xc3\xa9q", "\xc3\xa9q"},
        {"\xc3\xa9\xc3\xa9" "e", 3, 3, {10, 11, 15}, {10, 11, 15}, "\xc3\xa9\xc3\xa9" "e", "\xc3\xa9\xc3\xa9" "e"},
        {"ddd", 3, 3, {14, 14, 14}, {14, 14, 14}, "ddd", "ddd"},
        {"bqb a b c", 4, 4, {0, 1, 0, 2}, {0, 1, 0, 2}, "<unk>a<unk>c", "<unk>a<unk>c"},
    };
    /* Unigram: an unknown character costs the lowest score (30) less 10: two of them beat "qq",
       and the run is looked up again as a whole; "aqc" (125) beats a, unk, c (120) */
    static const char json_g[] =
        "{\"pre_tokenizer\":{\"type\":\"WhitespaceSplit\"},\"model\":{\"type\":\"Unigram\",\"unk_id\":0,\"vocab\":["
        "[\"<unk>\",50.0],[\"a\",50.0],[\"qq\",30.0],[\"b\",40.0],[\"c\",50.0],[\"aqc\",125.0]]}}";
    static const tt_hand_case cases_g[] = {
        {"qq", 1, 1, {2}, {2}, "qq", "qq"},
        {"aqqa", 3, 3, {1, 2, 1}, {1, 2, 1}, "a qq a", "a qq a"},
        {"qqq bqb", 4, 4, {0, 3, 0, 3}, {0, 3, 0, 3}, "<unk> b <unk> b", "<unk> b <unk> b"},
        {"aqc aqqc", 4, 4, {5, 1, 2, 4}, {5, 1, 2, 4}, "aqc a qq c", "aqc a qq c"},
    };
    char dir[256];
    tt_check_hand("unigram", json_f, cases_f, sizeof cases_f / sizeof cases_f[0]);
    tt_check_hand("unigram unknown runs", json_g, cases_g, sizeof cases_g / sizeof cases_g[0]);
    tt_check_hand("wordpiece", json_d, cases_d, sizeof cases_d / sizeof cases_d[0]);
    if (tt_mkdtemp(dir, sizeof dir) == 0) {
        pf_tokenizer *t;
        int32_t ids[4];
        size_t n = 0;
        pf_result r;
        CHECK(tt_write(dir, "tokenizer.json", json_e, sizeof json_e - 1) == 0);
        if ((t = tt_load(dir)) != NULL) {
            r = pf_tokenize(t, "ab a", 4, ids, 4, &n);
            CHECK_MSG(r == PF_OK && n == 3 && ids[0] == 0 && ids[1] == 1 && ids[2] == 0, "wordpiece \"ab a\": %s, %zu ids",
                      pf_result_string(r), n);
            r = pf_tokenize(t, "ab c", 4, ids, 4, &n);
            CHECK_MSG(r == PF_ERROR_INVALID_ARGUMENT && n == 0, "wordpiece without [UNK] on \"ab c\": %s",
                      pf_result_string(r));
            pf_tokenizer_free(t);
        }
        CHECK(tt_write(dir, "tokenizer.json", json_h, sizeof json_h - 1) == 0);
        if ((t = tt_load(dir)) != NULL) {
            r = pf_tokenize(t, "ab ba", 5, ids, 4, &n);
            CHECK_MSG(r == PF_OK && n == 3 && ids[0] == 2 && ids[1] == 1 && ids[2] == 0, "unigram \"ab ba\": %s, %zu ids",
                      pf_result_string(r), n);
            r = pf_tokenize(t, "ab c", 4, ids, 4, &n);
            CHECK_MSG(r == PF_ERROR_INVALID_ARGUMENT && n == 0, "unigram without unk_id on \"ab c\": %s",
                      pf_result_string(r));
            pf_tokenizer_free(t);
        }
        tt_rmdir(dir);
    }
    tt_check_hand("continuing_subword_prefix", json_a, cases_a, sizeof cases_a / sizeof cases_a[0]);
    tt_check_hand("end_of_word_suffix", json_b, cases_b, sizeof cases_b / sizeof cases_b[0]);
    tt_check_hand("byte_fallback", json_c, cases_c, sizeof cases_c / sizeof cases_c[0]);
    {
        /* Replace with a Regex that is a literal (Pegasus' normalizer: "\\n" -> " "), in a
           normalizer and a decoder */
        static const char json_r[] =
            "{\"version\":\"1.0\",\"added_tokens\":[],\"normalizer\":{\"type\":\"Replace\",\"pattern\":{\"Regex\":"
            "\"\\\\n\"},\"content\":\" \"},\"pre_tokenizer\":null,\"post_processor\":null,\"decoder\":{\"type\":"
            "\"Sequence\",\"decoders\":[{\"type\":\"Replace\",\"pattern\":{\"Regex\":\"\\\\.\"},\"content\":\"x\"},"
            "{\"type\":\"Fuse\"}]},\"model\":{\"type\":\"BPE\",\"vocab\":{\"a\":0,\"b\":1,\" \":2,\".\":3,\"x\":4},"
            "\"merges\":[]}}";
        static const tt_hand_case cases_r[] = {
            {"a\nb.", 4, 4, {0, 2, 1, 3}, {0, 2, 1, 3}, "a bx", "a bx"},
            {".\n\n.a", 5, 5, {3, 2, 2, 3, 0}, {3, 2, 2, 3, 0}, "x  xa", "x  xa"},
        };
        tt_check_hand("literal Regex", json_r, cases_r, sizeof cases_r / sizeof cases_r[0]);
    }
}

/* Standard base64 of data[0 .. n) into out (4 * ((n + 2) / 3) + 1 bytes). */
static void tt_base64(const unsigned char *data, size_t n, char *out) {
    static const char digits[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    size_t i;
    for (i = 0; i < n; i += 3, out += 4) {
        uint32_t v = (uint32_t)data[i] << 16 | (i + 1 < n ? (uint32_t)data[i + 1] << 8 : 0) | (i + 2 < n ? data[i + 2] : 0);
        out[0] = digits[v >> 18];
        out[1] = digits[v >> 12 & 63];
        out[2] = i + 1 < n ? digits[v >> 6 & 63] : '=';
        out[3] = i + 2 < n ? digits[v & 63] : '=';
    }
    *out = 0;
}

/* A Precompiled charsmap whose trie points outside itself (HF would panic): "a" leads to a value
   past the units, "b" to one past the replacements; "c" has no key. Loading works and encoding
   keeps to the data: "a" stays, "b" becomes "", "c" stays. */
static void tt_test_hostile_charsmap(void) {
    unsigned char blob[4 + 4 * 256 + 2];
    char b64[4 * ((sizeof blob + 2) / 3) + 1], json[4 * ((sizeof blob + 2) / 3) + 400], dir[256];
    uint32_t units[256];
    size_t i, n = 0;
    int32_t ids[8];
    pf_tokenizer *t;
    pf_result r;
    memset(units, 0, sizeof units);
    units[0x61] = 0x61 | 1u << 8 | 0x400u << 10;
    units[0x62] = 0x62 | 1u << 8 | (uint32_t)(0x62 ^ 0x10) << 10;
    units[0x10] = 0x80000000u | 1000;
    blob[0] = 0x00;
    blob[1] = 0x04;
    blob[2] = blob[3] = 0;
    for (i = 0; i < 256; i++) {
        blob[4 + 4 * i] = (unsigned char)units[i];
        blob[5 + 4 * i] = (unsigned char)(units[i] >> 8);
        blob[6 + 4 * i] = (unsigned char)(units[i] >> 16);
        blob[7 + 4 * i] = (unsigned char)(units[i] >> 24);
    }
    blob[4 + 4 * 256] = 'x';
    blob[5 + 4 * 256] = 0;
    tt_base64(blob, sizeof blob, b64);
    snprintf(json, sizeof json, "{\"normalizer\":{\"type\":\"Precompiled\",\"precompiled_charsmap\":\"%s\"},"
             "\"model\":{\"type\":\"BPE\",\"vocab\":{\"a\":0,\"b\":1,\"c\":2},\"merges\":[]}}", b64);
    if (tt_mkdtemp(dir, sizeof dir)) return;
    CHECK(tt_write(dir, "tokenizer.json", json, strlen(json)) == 0);
    if ((t = tt_load(dir)) != NULL) {
        r = pf_tokenize(t, "abcab", 5, ids, 8, &n);
        CHECK_MSG(r == PF_OK && n == 3 && ids[0] == 0 && ids[1] == 2 && ids[2] == 0, "hostile charsmap: %s, %zu ids",
                  pf_result_string(r), n);
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

/* Malformed or unsupported normalizers, pre-tokenizers, model options, decoders and
   post-processors: each a clear error naming what is wrong (and no leak: see the sanitizer runs). */
static void tt_test_bad_components(void) {
#define TT_M "\"model\":{\"type\":\"BPE\"," TT_VOCAB ",\"merges\":[]}}"
#define TT_N(x) "{\"normalizer\":" x "," TT_M
#define TT_P(x) "{\"pre_tokenizer\":" x "," TT_M
#define TT_D(x) "{\"decoder\":" x "," TT_M
#define TT_Q(x) "{\"post_processor\":" x "," TT_M
    static const struct {
        const char *json;
        pf_result want;
        const char *needle;
    } bad[] = {
        {TT_N("{\"kind\":\"NFC\"}"), PF_ERROR_FORMAT, "normalizer has no \"type\""},
        {TT_N("{\"type\":\"Sequence\",\"normalizers\":{}}"), PF_ERROR_FORMAT, "normalizers"},
        {TT_N("{\"type\":\"Sequence\",\"normalizers\":[7]}"), PF_ERROR_FORMAT, "not an object"},
        {TT_N("{\"type\":\"Replace\",\"pattern\":{\"Regex\":\" +\"},\"content\":\" \"}"), PF_ERROR_UNSUPPORTED, "Regex"},
        {TT_N("{\"type\":\"Replace\",\"pattern\":\" \",\"content\":\" \"}"), PF_ERROR_FORMAT, "pattern"},
        {TT_N("{\"type\":\"Replace\",\"pattern\":{\"String\":\" \"}}"), PF_ERROR_FORMAT, "content"},
        {TT_N("{\"type\":\"Prepend\"}"), PF_ERROR_FORMAT, "prepend"},
        {TT_N("{\"type\":\"BertNormalizer\",\"lowercase\":\"yes\"}"), PF_ERROR_FORMAT, "BertNormalizer"},
        {TT_N("{\"type\":\"Strip\",\"strip_left\":1}"), PF_ERROR_FORMAT, "Strip"},
        {TT_N("{\"type\":\"Precompiled\",\"precompiled_charsmap\":\"\"}"), PF_ERROR_FORMAT, "precompiled_charsmap"},
        {TT_N("{\"type\":\"Precompiled\",\"precompiled_charsmap\":null}"), PF_ERROR_FORMAT, "precompiled_charsmap"},
        {TT_N("{\"type\":\"Precompiled\",\"precompiled_charsmap\":\"EAAAAAAAAAAAAAAA\"}"), PF_ERROR_FORMAT, "charsmap"},
        {TT_N("{\"type\":\"Precompiled\",\"precompiled_charsmap\":\"BAAAAAAAAAA*\"}"), PF_ERROR_FORMAT, "charsmap"},
        {TT_N("{\"type\":\"Precompiled\",\"precompiled_charsmap\":\"BAAAAAAAAAB=\"}"), PF_ERROR_FORMAT, "charsmap"},
        {TT_N("{\"type\":\"Precompiled\",\"precompiled_charsmap\":\"BAAAAAAAAAA\"}"), PF_ERROR_FORMAT, "charsmap"},
        {TT_N("{\"type\":\"Precompiled\",\"precompiled_charsmap\":\"BAAAAAAAAAD/\"}"), PF_ERROR_FORMAT, "UTF-8"},
        {TT_N("{\"type\":\"Replace\",\"pattern\":{\"Regex\":\" {3,}\"},\"content\":\" \"}"), PF_ERROR_UNSUPPORTED, " {3,}"},
        {TT_N("{\"type\":\"Sequence\",\"normalizers\":[{\"type\":\"Sequence\",\"normalizers\":[{\"type\":\"Sequence\","
              "\"normalizers\":[{\"type\":\"Sequence\",\"normalizers\":[{\"type\":\"Sequence\",\"normalizers\":[{\"type\":"
              "\"Sequence\",\"normalizers\":[]}]}]}]}]}]}"), PF_ERROR_FORMAT, "Sequence"},
        {TT_N("{\"type\":\"Sequence\",\"normalizers\":[{\"type\":\"NFC\"},{\"type\":\"NFC\"},{\"type\":\"NFC\"},{\"type\":"
              "\"NFC\"},{\"type\":\"NFC\"},{\"type\":\"NFC\"},{\"type\":\"NFC\"},{\"type\":\"NFC\"},{\"type\":\"NFC\"},{\"type\":"
              "\"NFC\"},{\"type\":\"NFC\"},{\"type\":\"NFC\"},{\"type\":\"NFC\"},{\"type\":\"NFC\"},{\"type\":\"NFC\"},{\"type\":"
              "\"NFC\"},{\"type\":\"NFC\"}]}"), PF_ERROR_UNSUPPORTED, "more than 16"},
        {TT_P("{\"type\":\"Split\",\"pattern\":{\"Regex\":\"\\\\p{L}+\"},\"behavior\":\"Isolated\",\"invert\":false}"),
         PF_ERROR_UNSUPPORTED, "Split pattern"},
        {TT_P("{\"type\":\"Split\",\"pattern\":{\"Regex\":\"\\\\s+\"},\"invert\":false}"), PF_ERROR_FORMAT, "behavior"},
        {TT_P("{\"type\":\"Split\",\"pattern\":{\"String\":\" \"},\"behavior\":\"Sideways\",\"invert\":false}"),
         PF_ERROR_FORMAT, "behavior"},
        {TT_P("{\"type\":\"Split\",\"pattern\":{\"String\":\" \"},\"behavior\":\"Removed\",\"invert\":\"no\"}"),
         PF_ERROR_FORMAT, "invert"},
        {TT_P("{\"type\":\"Split\",\"pattern\":[\" \"],\"behavior\":\"Removed\",\"invert\":false}"), PF_ERROR_FORMAT,
         "pattern"},
        {TT_P("{\"type\":\"Split\",\"pattern\":{\"String\":\"\"},\"behavior\":\"Removed\",\"invert\":false}"),
         PF_ERROR_UNSUPPORTED, "empty"},
        {TT_P("{\"type\":\"Metaspace\",\"replacement\":\"ab\"}"), PF_ERROR_FORMAT, "replacement"},
        {TT_P("{\"type\":\"Metaspace\"}"), PF_ERROR_FORMAT, "replacement"},
        {TT_P("{\"type\":\"Metaspace\",\"replacement\":\"_\",\"prepend_scheme\":\"sometimes\"}"), PF_ERROR_FORMAT,
         "prepend_scheme"},
        {TT_P("{\"type\":\"Metaspace\",\"replacement\":\"_\",\"add_prefix_space\":false}"), PF_ERROR_FORMAT,
         "add_prefix_space"},
        {TT_P("{\"type\":\"Sequence\",\"pretokenizers\":[{\"type\":\"ByteLevel\"},{\"type\":\"Metaspace\",\"replacement\":"
              "\"_\"}]}"), PF_ERROR_UNSUPPORTED, "after ByteLevel"},
        {TT_P("{\"type\":\"Punctuation\",\"behavior\":\"Sideways\"}"), PF_ERROR_FORMAT, "behavior"},
        {TT_P("{\"type\":\"Digits\",\"individual_digits\":3}"), PF_ERROR_FORMAT, "Digits"},
        {TT_D("{\"type\":\"Strip\",\"content\":\"ab\",\"start\":1,\"stop\":0}"), PF_ERROR_FORMAT, "content"},
        {TT_D("{\"type\":\"Strip\",\"content\":\" \",\"start\":-1,\"stop\":0}"), PF_ERROR_FORMAT, "start"},
        {TT_D("{\"type\":\"Replace\",\"pattern\":{\"Regex\":\"a|b\"},\"content\":\"b\"}"), PF_ERROR_UNSUPPORTED, "Regex"},
        {TT_D("{\"type\":\"Replace\",\"pattern\":{\"Regex\":\"\\\\s\"},\"content\":\"b\"}"), PF_ERROR_UNSUPPORTED, "Regex"},
        {TT_D("{\"type\":\"Replace\",\"pattern\":{\"Regex\":\"\"},\"content\":\"b\"}"), PF_ERROR_UNSUPPORTED, "Regex"},
        {TT_D("{\"type\":\"BPEDecoder\",\"suffix\":3}"), PF_ERROR_FORMAT, "suffix"},
        {TT_D("{\"type\":\"Metaspace\",\"replacement\":\"\"}"), PF_ERROR_FORMAT, "replacement"},
        {TT_D("{\"type\":\"CTC\"}"), PF_ERROR_UNSUPPORTED, "CTC"},
        {TT_D("{\"type\":\"Sequence\",\"decoders\":[\"Fuse\"]}"), PF_ERROR_FORMAT, "not an object"},
        {TT_Q("{\"type\":\"TemplateProcessing\",\"single\":[{\"SpecialToken\":{\"id\":\"<s>\",\"type_id\":0}},{\"Sequence\":"
              "{\"id\":\"A\",\"type_id\":0}}],\"special_tokens\":{}}"), PF_ERROR_FORMAT, "<s>"},
        {TT_Q("{\"type\":\"TemplateProcessing\",\"single\":[{\"Sequence\":{\"id\":\"B\",\"type_id\":0}}],"
              "\"special_tokens\":{}}"), PF_ERROR_FORMAT, "single"},
        {TT_Q("{\"type\":\"TemplateProcessing\",\"single\":\"$A\",\"special_tokens\":{}}"), PF_ERROR_FORMAT, "single"},
        {TT_Q("{\"type\":\"TemplateProcessing\",\"single\":[{\"SpecialToken\":{\"id\":\"<s>\",\"type_id\":0}}],"
              "\"special_tokens\":{\"<s>\":{\"id\":\"<s>\",\"ids\":[-1],\"tokens\":[\"<s>\"]}}}"), PF_ERROR_FORMAT, "bad id"},
        {TT_Q("{\"type\":\"BertProcessing\",\"cls\":[\"[CLS]\",1]}"), PF_ERROR_FORMAT, "sep"},
        {TT_Q("{\"type\":\"Sequence\",\"processors\":[{\"type\":\"Weird\"}]}"), PF_ERROR_UNSUPPORTED, "Weird"},
        {TT_Q("{\"type\":\"Sequence\",\"processors\":[{\"type\":\"BertProcessing\",\"cls\":[\"a\",0],\"sep\":[\"b\",1]},"
              "{\"type\":\"ByteLevel\"},{\"type\":\"RobertaProcessing\",\"cls\":[\"a\",0],\"sep\":[\"b\",1]}]}"),
         PF_ERROR_UNSUPPORTED, "two processors"},
        {TT_Q("{\"type\":\"TemplateProcessing\",\"single\":[],\"pair\":[{\"Sequence\":{\"id\":\"C\",\"type_id\":0}}],"
              "\"special_tokens\":{}}"), PF_ERROR_FORMAT, "pair"},
        {TT_Q("{\"type\":\"TemplateProcessing\",\"single\":[{\"Sequence\":{\"id\":\"A\",\"type_id\":-1}}],"
              "\"special_tokens\":{}}"), PF_ERROR_FORMAT, "single"},
        {"{\"model\":{\"type\":\"BPE\",\"continuing_subword_prefix\":5," TT_VOCAB ",\"merges\":[]}}", PF_ERROR_FORMAT,
         "BPE option"},
        {"{\"model\":{\"type\":\"BPE\",\"continuing_subword_prefix\":\"##\"," TT_VOCAB ",\"merges\":[\"a b\"]}}",
         PF_ERROR_FORMAT, "continuing_subword_prefix"},
        {"{\"model\":{\"type\":\"BPE\",\"byte_fallback\":\"yes\"," TT_VOCAB ",\"merges\":[]}}", PF_ERROR_FORMAT,
         "BPE option"},
    };
    size_t i;
    char dir[256], err[512];
    pf_tokenizer *t;
    pf_result r;
    for (i = 0; i < sizeof bad / sizeof bad[0]; i++) tt_expect_json_error(bad[i].json, bad[i].want, bad[i].needle);

    /* a tokenizer without pre-tokenizer or decoder loads: BPE on the characters, ids joined by
       spaces when decoded; a malformed tokenizer_config.json next to a tokenizer.json is an error */
    if (tt_mkdtemp(dir, sizeof dir) == 0) {
        static const char json[] = "{\"pre_tokenizer\":null,\"model\":{\"type\":\"BPE\"," TT_VOCAB ",\"merges\":[\"a b\"]}}";
        int32_t ids[4];
        size_t n = 0;
        char text[16];
        CHECK(tt_write(dir, "tokenizer.json", json, sizeof json - 1) == 0);
        if ((t = tt_load(dir)) != NULL) {
            r = pf_tokenize(t, "abba", 4, ids, 4, &n);
            CHECK_MSG(r == PF_OK && n == 3 && ids[0] == 2 && ids[1] == 1 && ids[2] == 0, "\"abba\": %s, %zu ids",
                      pf_result_string(r), n);
            r = pf_detokenize(t, ids, n, text, sizeof text, &n);
            CHECK_MSG(r == PF_OK && n == 6 && !memcmp(text, "ab b a", 6), "decode without a decoder: %s \"%.*s\"",
                      pf_result_string(r), (int)n, text);
            pf_tokenizer_free(t);
        }
        CHECK(tt_write(dir, "tokenizer_config.json", "{\"bos_token\": ", 14) == 0);
        t = (pf_tokenizer *)&t;
        r = pf_tokenizer_load(dir, &t, err, sizeof err);
        CHECK_MSG(r == PF_ERROR_FORMAT && t == NULL && strstr(err, "tokenizer_config.json"), "bad config: %s (%s)",
                  pf_result_string(r), err);
        tt_rmdir(dir);
    }
#undef TT_M
#undef TT_N
#undef TT_P
#undef TT_D
#undef TT_Q
}

/* vocab.json + merges.txt are read as a byte-level BPE; a tokenizer_class that is not one (CLIP's,
   Qwen2's own split pattern) or merges that end words with </w> are refused with the way to write a
   tokenizer.json, not read into wrong ids; CPM's jieba segmentation is refused by name. GPT-2's files still load, with or without its class named. */
static void tt_test_not_byte_level_files(void) {
    static const struct { const char *config, *merges, *said; pf_result want; } cases[] = {
        {"{\"tokenizer_class\": \"CpmTokenizer\"}", NULL, "jieba", PF_ERROR_UNSUPPORTED},
        {"{\"tokenizer_class\": \"CLIPTokenizerFast\"}", NULL, "save_pretrained", PF_ERROR_UNSUPPORTED},
        {"{\"tokenizer_class\": \"Qwen2Tokenizer\"}", NULL, "Qwen2Tokenizer", PF_ERROR_UNSUPPORTED},
        {NULL, "#version: 0.2\na b</w>\nc d</w>\ne f\n", "</w>", PF_ERROR_UNSUPPORTED},
        {"{\"tokenizer_class\": \"GPT2TokenizerFast\"}", NULL, NULL, PF_OK},
        {"{\"tokenizer_class\": \"RobertaTokenizer\"}", NULL, NULL, PF_OK},
        {NULL, NULL, NULL, PF_OK},
    };
    char source[512], dir[256], err[1024];
    snprintf(source, sizeof source, "%s/gpt2-hub", test_fixtures);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        if (tt_mkdtemp(dir, sizeof dir)) {
            CHECK_MSG(0, "mkdtemp failed");
            return;
        }
        int ok = tt_copy(source, "vocab.json", dir) == 0 &&
                 (cases[i].merges ? tt_write(dir, "merges.txt", cases[i].merges, strlen(cases[i].merges))
                                  : tt_copy(source, "merges.txt", dir)) == 0 &&
                 (!cases[i].config || tt_write(dir, "tokenizer_config.json", cases[i].config, strlen(cases[i].config)) == 0);
        pf_tokenizer *t = NULL;
        err[0] = 0;
        pf_result r = ok ? pf_tokenizer_load(dir, &t, err, sizeof err) : PF_ERROR_IO;
        CHECK_MSG(ok && r == cases[i].want && (!cases[i].said || strstr(err, cases[i].said)),
                  "case %zu: %s (%s)", i, pf_result_string(r), err);
        pf_tokenizer_free(t);
        tt_rmdir(dir);
    }
}

/* The BPE files without tokenizer.json (pf__tok_from_bpe_files): a fastBPE pair whose bpe.codes
   lacks the last line end (PhoBERT drops that line, as Python's split("\n")[:-1]) and lookups with
   "@@"; then files that lie and config keys not implemented: a clear error naming them. */
static void tt_test_bpe_files(void) {
    static const struct {
        const char *vocab_name, *vocab, *merges_name, *merges, *config, *said;
        pf_result want;
    } cases[] = {
        {"vocab.txt", "h@@ 3\ne@@ 2\nhe@@ 1\nllo 1\n", "bpe.codes", "h e 9\nl l 8\nll o</w> 7",
         "{\"tokenizer_class\": \"PhobertTokenizer\"}", NULL, PF_OK},
        {"vocab.txt", "a 1\nb\n", "bpe.codes", "", "{\"tokenizer_class\": \"PhobertTokenizer\"}", "line 2", PF_ERROR_FORMAT},
        {"vocab.txt", "a 1\na 2\n", "bpe.codes", "", "{\"tokenizer_class\": \"PhobertTokenizer\"}", "twice", PF_ERROR_FORMAT},
        {"vocab.txt", "<s> 5\n", "bpe.codes", "", "{\"tokenizer_class\": \"BertweetTokenizer\"}", "twice", PF_ERROR_FORMAT},
        {"vocab.txt", "a 1\n", "bpe.codes", "", "{\"tokenizer_class\": \"PhobertTokenizer\", \"bos_token\": null}",
         "bos_token", PF_ERROR_FORMAT},
        {"vocab.txt", "a 1\n", "bpe.codes", "", "{\"tokenizer_class\": \"BertweetTokenizer\", \"normalization\": true}",
         "normalization", PF_ERROR_UNSUPPORTED},
        {"vocab.json", "{\"a\": 0}", "merges.txt", "#version: 0.2\n",
         "{\"tokenizer_class\": \"CTRLTokenizer\", \"split_special_tokens\": true}", "split_special_tokens",
         PF_ERROR_UNSUPPORTED},
        {"vocab.json", "{\"a\": 0}", "merges.txt", "#version: 0.2\n",
         "{\"tokenizer_class\": \"OpenAIGPTTokenizerFast\", \"add_bos_token\": true}", "add_bos_token",
         PF_ERROR_UNSUPPORTED},
        {"vocab.json", "{\"a\": 0}", "merges.txt", "#version: 0.2\n",
         "{\"tokenizer_class\": \"BlenderbotSmallTokenizer\", \"do_lower_case\": true}", "do_lower_case",
         PF_ERROR_UNSUPPORTED},
        {"vocab.json", "{\"a\": 0}", "merges.txt", "#version: 0.2\na b</w>\n", "{\"tokenizer_class\": \"HerbertTokenizer\"}",
         "not in the vocab", PF_ERROR_FORMAT},
        {"vocab.json", "{\"a\": 0}", "nothing", "", "{\"tokenizer_class\": \"CTRLTokenizer\"}", "merges.txt", PF_ERROR_IO},
        {"vocab.json", "[1]", "merges.txt", "", "{\"tokenizer_class\": \"CTRLTokenizer\"}", "vocab.json", PF_ERROR_FORMAT},
        {"vocab.json", "{\"<s>\": 0, \"</s>\": 1, \"<unk>\": 2, \"hello</w>\": 3, \"caf\": 4, \"e</w>\": 5}", "merges.txt",
         "h e 9\nhe l 8 x\nhel\nhel l\nhell o</w> 7\nc a\nca f\n", "{\"tokenizer_class\": \"XLMTokenizer\"}", NULL, PF_OK},
        {"vocab.json", "{\"<s>\": 0, \"</s>\": 1}", "merges.txt", "",
         "{\"tokenizer_class\": \"XLMTokenizer\", \"do_lowercase_and_remove_accent\": \"yes\"}",
         "do_lowercase_and_remove_accent", PF_ERROR_FORMAT},
        {"vocab.json", "{\"</s>\": 1}", "merges.txt", "", "{\"tokenizer_class\": \"FlaubertTokenizer\", \"bos_token\": null}",
         "bos_token", PF_ERROR_FORMAT},
        {"vocab.txt", "[CLS]\n[SEP]\n[UNK]\n", "bpe.codes", "", "%s, \"word_tokenizer_type\": \"mecab\"}", "MeCab",
         PF_ERROR_UNSUPPORTED},
        {"vocab.txt", "[CLS]\n[SEP]\n[UNK]\n", "bpe.codes", "", "%s, \"word_tokenizer_type\": \"sudachi\"}", "Sudachi",
         PF_ERROR_UNSUPPORTED},
        {"vocab.txt", "[CLS]\n[SEP]\n[UNK]\n", "bpe.codes", "", "%s, \"word_tokenizer_type\": \"jumanpp\"}", "Juman++",
         PF_ERROR_UNSUPPORTED},
        {"vocab.txt", "[CLS]\n[SEP]\n[UNK]\n", "bpe.codes", "", "%s, \"subword_tokenizer_type\": \"sentencepiece\"}",
         "sentencepiece", PF_ERROR_UNSUPPORTED},
        {"vocab.txt", "[CLS]\n[SEP]\n[UNK]\n", "bpe.codes", "", "%s, \"never_split\": [\"x\"]}", "never_split",
         PF_ERROR_UNSUPPORTED},
        {"vocab.txt", "[CLS]\n[SEP]\n[UNK]\n", "bpe.codes", "", "%s, \"do_word_tokenize\": false}", "do_word_tokenize",
         PF_ERROR_UNSUPPORTED},
        {"vocab.txt", "[CLS]\n[SEP]\n[UNK]\n[SEP]\n", "bpe.codes", "", "%s}", "twice", PF_ERROR_FORMAT},
        {"vocab.txt", "[CLS]\n[SEP]\n[UNK]\n", "bpe.codes", "", "%s, \"word_tokenizer_type\": \"nope\"}", "nope",
         PF_ERROR_FORMAT},
        {"vocab.txt", "[CLS]\r\n[SEP]\r[UNK]\nx\n##y\n\xE3\x81\x82", "bpe.codes", "", "%s, \"do_lower_case\": true}",
         NULL, PF_OK},
        {"vocab.txt", "[CLS]\n[SEP]\n[UNK]\nx\n\xE3\x81\x82\n", "bpe.codes", "",
         "%s, \"subword_tokenizer_type\": \"character\"}", NULL, PF_OK},
    };
    char dir[256], err[1024], config[256];
    size_t n_ids = 0;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        pf_tokenizer *t = NULL;
        snprintf(config, sizeof config, cases[i].config, "{\"tokenizer_class\": \"BertJapaneseTokenizer\"");
        if (tt_mkdtemp(dir, sizeof dir)) {
            CHECK_MSG(0, "mkdtemp failed");
            return;
        }
        int ok = tt_write(dir, cases[i].vocab_name, cases[i].vocab, strlen(cases[i].vocab)) == 0 &&
                 tt_write(dir, cases[i].merges_name, cases[i].merges, strlen(cases[i].merges)) == 0 &&
                 tt_write(dir, "tokenizer_config.json", config, strlen(config)) == 0;
        err[0] = 0;
        pf_result r = ok ? pf_tokenizer_load(dir, &t, err, sizeof err) : PF_ERROR_IO;
        CHECK_MSG(ok && r == cases[i].want && (!cases[i].said || strstr(err, cases[i].said)) && (r == PF_OK) == (t != NULL),
                  "case %zu: %s (%s)", i, pf_result_string(r), err);
        if (t && i == 23) { /* BertJapanese, WordPiece, lowered (vocab lines ending \r\n, \r, \n, none): "xy" is x ##y,
                               "Y" [UNK] (only ##y); "X\xE3\x81\x82" one [UNK] (no "##\xE3\x81\x82" after "x") */
            int32_t ids[16];
            static const int32_t want[] = {0, 3, 4, 5, 2, 1}, want2[] = {0, 2, 2, 1};
            CHECK(pf_tokenize_special(t, "xy \xE3\x81\x82 Y", 8, ids, 16, &n_ids) == PF_OK && n_ids == 6 &&
                  !memcmp(ids, want, sizeof want));
            CHECK(pf_tokenize_special(t, "X\xE3\x81\x82 Y", 6, ids, 16, &n_ids) == PF_OK && n_ids == 4 &&
                  !memcmp(ids, want2, sizeof want2));
        }
        if (t && i == 24) { /* BertJapanese, characters: NFKC (full-width x), each its id or [UNK] */
            int32_t ids[16];
            static const int32_t want[] = {0, 3, 4, 2, 1};
            CHECK(pf_tokenize_special(t, "\xEF\xBD\x98\xE3\x81\x82z", 7, ids, 16, &n_ids) == PF_OK && n_ids == 5 &&
                  !memcmp(ids, want, sizeof want));
        }
        if (t && i == 12) { /* XLM: "Hello" lowercased, its merges' first two fields ("hel" alone is a
                               rank without a merge); "Café." the period split off, the accent dropped */
            int32_t ids[16];
            static const int32_t want[] = {0, 3, 4, 5, 2, 1};
            char text[32];
            size_t n = 0, len = 0;
            CHECK(pf_tokenize_special(t, "Hello Caf\xC3\xA9.", 12, ids, 16, &n) == PF_OK && n == 6 &&
                  !memcmp(ids, want, sizeof want));
            CHECK(pf_detokenize(t, want + 1, 3, text, sizeof text, &len) == PF_OK && len == 10 && !memcmp(text, "hello cafe", 10));
        }
        if (t && i == 0) { /* <s> <pad> </s> <unk>, then h@@ e@@ he@@ llo: "hello" is he@@ ll@@ o, the last two unknown */
            int32_t ids[8];
            static const int32_t want[] = {0, 6, 3, 3, 2}, pieces[] = {6, 3};
            char text[32];
            size_t n = 0, len = 0;
            CHECK(pf_tokenize(t, "hello", 5, ids, 8, &n) == PF_OK && n == 3 && !memcmp(ids, want + 1, 3 * sizeof *ids));
            CHECK(pf_tokenize_special(t, "hello", 5, ids, 8, &n) == PF_OK && n == 5 && !memcmp(ids, want, sizeof want));
            CHECK(pf_detokenize(t, pieces, 2, text, sizeof text, &len) == PF_OK && len == 7 && !memcmp(text, "he<unk>", 7));
        }
        pf_tokenizer_free(t);
        snprintf(err, sizeof err, "%s/nothing", dir); /* the case without merges.txt wrote this instead */
        unlink(err);
        tt_rmdir(dir);
    }
}

/* The Python classes' word splits on hostile text (bytes that are not UTF-8, NUL, long runs of
   periods and spaces, sacremoses' own markers, a long word): an encoding and its decode, no crash
   (the ASan build runs this too). */
static void tt_test_word_split_hostile(void) {
    static const char *const dirs[] = {"tokenizer-xlm-files", "tokenizer-flaubert-lower", "tokenizer-bert-japanese-char",
                                       "tokenizer-bert-japanese-wp"};
    static const char hostile0[] = "a\xff\xc3 \x80\xe2\x82 .\xf0\x9f. '\xfe'", hostile1[] = "x\0y. \0'\0.";
    size_t big = 20000, i, k, n, len;
    char *text = (char *)malloc(big + 64);
    if (!text) {
        CHECK_MSG(0, "out of memory");
        return;
    }
    for (i = 0; i < sizeof dirs / sizeof dirs[0]; i++) {
        pf_tokenizer *t = tt_load_fixture(dirs[i]);
        for (k = 0; t && k < 6; k++) {
            int32_t *ids;
            char *dec;
            switch (k) {
            case 0: memcpy(text, hostile0, n = sizeof hostile0 - 1); break;
            case 1: memcpy(text, hostile1, n = sizeof hostile1 - 1); break;
            case 2: memset(text, '.', n = big); break;
            case 3: for (n = 0; n + 11 <= big; n += 11) memcpy(text + n, "DOTDOTMULTI", 11); break;
            case 4: memset(text, ' ', n = big); text[n / 2] = 'x'; break;
            default: for (n = 0; n + 4 <= big; n += 4) memcpy(text + n, "a'-,", 4); break;
            }
            ids = tt_encode_with(t, text, n, &len, 1);
            CHECK_MSG(ids != NULL, "%s: hostile text %zu does not encode", dirs[i], k);
            dec = ids ? tt_decode(t, ids, len, &n) : NULL;
            CHECK_MSG(!ids || dec != NULL, "%s: hostile text %zu does not decode", dirs[i], k);
            free(dec);
            free(ids);
        }
        pf_tokenizer_free(t);
    }
    free(text);
}

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
    tt_expect_json_error(TT_PRE "\"model\":{\"type\":\"WordLevel\"," TT_VOCAB "}}", PF_ERROR_UNSUPPORTED, "WordLevel");
    tt_expect_json_error(TT_PRE "\"model\":{\"type\":\"WordPiece\",\"max_input_chars_per_word\":-1," TT_VOCAB "}}",
                         PF_ERROR_FORMAT, "WordPiece option");
    tt_expect_json_error(TT_PRE "\"model\":{\"type\":\"WordPiece\",\"continuing_subword_prefix\":[]," TT_VOCAB "}}",
                         PF_ERROR_FORMAT, "WordPiece option");
    tt_expect_json_error(TT_PRE "\"model\":{\"type\":\"WordPiece\",\"vocab\":[]}}", PF_ERROR_FORMAT, "model.vocab");
    tt_expect_json_error(TT_PRE "\"model\":{\"type\":\"Unigram\",\"vocab\":{\"a\":0}}}", PF_ERROR_FORMAT, "Unigram");
    tt_expect_json_error(TT_PRE "\"model\":{\"type\":\"Unigram\",\"vocab\":[[\"a\",-1],[\"b\"]]}}", PF_ERROR_FORMAT,
                         "vocab entry 1");
    tt_expect_json_error(TT_PRE "\"model\":{\"type\":\"Unigram\",\"vocab\":[[\"a\",\"-1\"]]}}", PF_ERROR_FORMAT,
                         "vocab entry 0");
    tt_expect_json_error(TT_PRE "\"model\":{\"type\":\"Unigram\",\"unk_id\":1,\"vocab\":[[\"a\",-1]]}}", PF_ERROR_FORMAT,
                         "unk_id 1");
    tt_expect_json_error(TT_PRE "\"model\":{\"type\":\"Unigram\",\"unk_id\":-1,\"vocab\":[[\"a\",-1]]}}", PF_ERROR_FORMAT,
                         "unk_id");
    tt_expect_json_error(TT_PRE "\"model\":{\"type\":\"Unigram\",\"byte_fallback\":1,\"vocab\":[[\"a\",-1]]}}",
                         PF_ERROR_FORMAT, "byte_fallback");
    tt_expect_json_error(TT_PRE "\"model\":{\"type\":\"BPE\",\"byte_fallback\":true," TT_VOCAB ",\"merges\":[]}}",
                         PF_ERROR_FORMAT, "byte_fallback");
    tt_expect_json_error("{\"pre_tokenizer\":{\"type\":\"Whitespace\"},\"model\":{\"type\":\"BPE\"," TT_VOCAB ",\"merges\":[]}}",
                         PF_ERROR_UNSUPPORTED, "Whitespace");
    tt_expect_json_error("{\"pre_tokenizer\":{\"type\":\"Split\",\"pattern\":{\"Regex\":\"\\\\d+\"},\"behavior\":\"Isolated\","
                         "\"invert\":false},\"model\":{\"type\":\"BPE\"," TT_VOCAB ",\"merges\":[]}}",
                         PF_ERROR_UNSUPPORTED, "Split");
    tt_expect_json_error(TT_PRE "\"normalizer\":{\"type\":\"Nmt\"},\"model\":{\"type\":\"BPE\"," TT_VOCAB ",\"merges\":[]}}",
                         PF_ERROR_UNSUPPORTED, "Nmt");
    tt_test_bad_components();
    tt_expect_json_error("{\"pre_tokenizer\":{\"type\":\"ByteLevel\"},\"decoder\":{\"type\":\"WordPiece\",\"cleanup\":1},"
                         "\"model\":{\"type\":\"BPE\"," TT_VOCAB ",\"merges\":[]}}",
                         PF_ERROR_FORMAT, "WordPiece");

    tt_expect_files_error("{\"a\": 0, \"b\": 1", "a b\n", PF_ERROR_FORMAT, "vocab.json");
    tt_expect_files_error("[\"a\", \"b\"]", "a b\n", PF_ERROR_FORMAT, "vocab.json");
    tt_expect_files_error("{\"a\": 0, \"b\": 1, \"ab\": 2}", "#version: 0.2\na b\nab\n", PF_ERROR_FORMAT,
                          "merges.txt: line 3");
    tt_expect_files_error("{\"a\": 0, \"b\": 1, \"ab\": 2}", "a b\n\nb a\n", PF_ERROR_FORMAT, "\"ba\"");
    tt_expect_files_error("{\"a\": 0, \"b\": 1, \"ab\": 2}", NULL, PF_ERROR_IO, "merges.txt");
}

/* bos / eos ids as transformers' AutoTokenizer gives them for every fixture with a tokenizer
   (test/fixtures/special_ids.txt, from make_special_ids.py): tokenizer.json with and without a
   tokenizer_config.json, and vocab.json + merges.txt (gpt2-hub) where GPT-2's defaults apply. */
static void tt_test_special_ids(void) {
    char path[1100], name[256];
    int bos, eos, lines = 0;
    snprintf(path, sizeof path, "%s/special_ids.txt", test_fixtures);
    FILE *f = fopen(path, "r");
    CHECK_MSG(f, "%s: cannot open", path);
    if (!f) return;
    while (fscanf(f, "%255s %d %d", name, &bos, &eos) == 3) {
        pf_tokenizer *t = tt_load_fixture(name);
        lines++;
        if (!t) continue;
        CHECK_MSG(pf_tokenizer_bos_id(t) == bos && pf_tokenizer_eos_id(t) == eos, "%s: bos %d eos %d, want %d %d", name,
                  (int)pf_tokenizer_bos_id(t), (int)pf_tokenizer_eos_id(t), bos, eos);
        pf_tokenizer_free(t);
    }
    fclose(f);
    CHECK_MSG(lines >= 20, "%s: %d lines", path, lines);
    CHECK(pf_tokenizer_bos_id(NULL) == -1 && pf_tokenizer_eos_id(NULL) == -1);
}

/* The ids transformers' decode(skip_special_tokens=True) leaves out, for every fixture with a
   tokenizer (test/fixtures/skipped_special_ids.txt, from make_special_ids.py), are the ids
   pf_tokenizer_is_special names, and no others. */
static void tt_test_skipped_special(void) {
    static char list[16384];
    char path[1100], name[256];
    int lines = 0;
    snprintf(path, sizeof path, "%s/skipped_special_ids.txt", test_fixtures);
    FILE *f = fopen(path, "r");
    CHECK_MSG(f, "%s: cannot open", path);
    if (!f) return;
    while (fscanf(f, "%255s %16383s", name, list) == 2) {
        pf_tokenizer *t = tt_load_fixture(name);
        int32_t want[2048];
        long num_want = tt_parse_ids(list, want, 2048);
        int wrong = -1, count = 0;
        lines++;
        if (!t) continue;
        CHECK_MSG(num_want > 0, "%s: \"%s\"", path, list);
        for (int32_t id = -1; id <= pf_tokenizer_vocab_size(t); id++) {
            int is_wanted = 0;
            for (long i = 0; i < num_want; i++) is_wanted |= want[i] == id;
            count += pf_tokenizer_is_special(t, id);
            if (pf_tokenizer_is_special(t, id) != is_wanted && wrong < 0) wrong = id;
        }
        CHECK_MSG(wrong < 0 && count == num_want, "%s: id %d is%s special; transformers skips %.300s", name, wrong,
                  wrong >= 0 && pf_tokenizer_is_special(t, wrong) ? "" : " not", list);
        pf_tokenizer_free(t);
    }
    fclose(f);
    CHECK_MSG(lines >= 20, "%s: %d lines", path, lines);
    CHECK(pf_tokenizer_is_special(NULL, 0) == 0);
}

/* ---- encoder-decoder tokenizers (test/make_seq2seq_tokenizers.py) ---- */

/* Reads a fixture file of tab-separated lines; the lines (NUL-terminated in place) and their
   count; NULL when the file is missing. */
static char **tt_read_lines(const char *dir, const char *name, char **data, size_t *num) {
    char path[1100], **lines = NULL, *line, *next;
    size_t len, n = 0, cap = 0;
    snprintf(path, sizeof path, "%s/%s/%s", test_fixtures, dir, name);
    *num = 0;
    if (access(path, R_OK) != 0 || !(*data = test_read_file(path, &len))) return NULL;
    for (line = *data; line < *data + len; line = next) {
        char *end = strchr(line, '\n');
        if (!end) end = *data + len;
        next = end + 1;
        *end = 0;
        if (line == end) continue;
        if (n == cap) {
            char **q = (char **)realloc(lines, (cap = 2 * cap + 64) * sizeof *q);
            if (!q) break;
            lines = q;
        }
        lines[n++] = line;
    }
    *num = n;
    return lines;
}

/* Decodes ids as transformers' decode(ids, skip_special_tokens=skip): pf_tokenizer_is_special's
   ids left out, then pf_detokenize. */
static char *tt_decode_skipping(const pf_tokenizer *t, const int32_t *ids, size_t n, int skip, size_t *len) {
    int32_t kept[2048];
    size_t i, m = 0;
    for (i = 0; i < n && m < 2048; i++)
        if (!skip || !pf_tokenizer_is_special(t, ids[i])) kept[m++] = ids[i];
    return tt_decode(t, kept, m, len);
}

/* decode_skip.txt: the skip-special decode of every cases_special.txt case; decode_random.txt:
   random ids decoded with and without the special tokens; token_ids.txt: pf_tokenizer_token_id
   as transformers' convert_tokens_to_ids. */
static void tt_check_seq2seq_dir(const char *name) {
    char *skip_data = NULL, *random_data = NULL, *token_data = NULL, **skip, **random, **tokens;
    size_t n = 0, nskip, nrandom, ntokens, i, len;
    tt_case *cases = tt_read_fixture_cases(name, "cases_special.txt", &n);
    pf_tokenizer *t = tt_load_fixture(name);
    skip = tt_read_lines(name, "decode_skip.txt", &skip_data, &nskip);
    random = tt_read_lines(name, "decode_random.txt", &random_data, &nrandom);
    tokens = tt_read_lines(name, "token_ids.txt", &token_data, &ntokens);
    CHECK_MSG(t && cases && skip && nskip == n && random && nrandom >= 50 && tokens && ntokens > 0,
              "%s: the tokenizer, cases_special.txt (%zu), decode_skip.txt (%zu), decode_random.txt (%zu), "
              "token_ids.txt (%zu)", name, n, nskip, nrandom, ntokens);
    for (i = 0; t && cases && skip && i < n && i < nskip; i++) {
        size_t want_len = 0;
        char *want = !strcmp(skip[i], "=") ? NULL : tt_unhex(skip[i], strcmp(skip[i], "-") ? strlen(skip[i]) : 0,
                                                              &want_len);
        const char *w = want ? want : cases[i].text;
        char *got = tt_decode_skipping(t, cases[i].ids, cases[i].num_ids, 1, &len), hex[400];
        if (!want) want_len = cases[i].len;
        tt_format_hex(hex, sizeof hex, cases[i].text, cases[i].len);
        CHECK_MSG(got && len == want_len && !memcmp(got, w, len),
                  "%s: skip-special decode of case %zu (%s) differs from transformers'", name, i, hex);
        free(want);
        free(got);
    }
    for (i = 0; t && random && i < nrandom; i++) {
        char *f1 = strchr(random[i], '\t'), *f2 = f1 ? strchr(f1 + 1, '\t') : NULL;
        int32_t ids[64];
        long nid;
        int skip_special;
        if (!f2) {
            CHECK_MSG(0, "%s/decode_random.txt: line %zu is malformed", name, i + 1);
            break;
        }
        *f1++ = 0;
        *f2++ = 0;
        nid = tt_parse_ids(random[i], ids, 64);
        for (skip_special = 0; skip_special < 2 && nid > 0; skip_special++) {
            const char *h = skip_special ? f2 : f1;
            size_t want_len = 0;
            char *want = tt_unhex(h, strcmp(h, "-") ? strlen(h) : 0, &want_len);
            char *got = tt_decode_skipping(t, ids, (size_t)nid, skip_special, &len);
            CHECK_MSG(want && got && len == want_len && !memcmp(got, want, len),
                      "%s: decode%s of [%s] differs from transformers'", name, skip_special ? " (skipping specials)" : "",
                      random[i]);
            free(want);
            free(got);
        }
    }
    for (i = 0; t && tokens && i < ntokens; i++) {
        char *tab = strchr(tokens[i], '\t'), *text;
        size_t text_len;
        if (!tab || !(text = tt_unhex(tokens[i], (size_t)(tab - tokens[i]), &text_len))) {
            CHECK_MSG(0, "%s/token_ids.txt: line %zu is malformed", name, i + 1);
            break;
        }
        CHECK_MSG(pf_tokenizer_token_id(t, text) == atoi(tab + 1), "%s: pf_tokenizer_token_id(\"%s\") = %d, "
                  "transformers: %s", name, text, (int)pf_tokenizer_token_id(t, text), tab + 1);
        free(text);
    }
    CHECK(pf_tokenizer_token_id(t, "no such token, surely") == -1 && pf_tokenizer_token_id(t, "") == -1 &&
          pf_tokenizer_token_id(t, NULL) == -1 && pf_tokenizer_token_id(NULL, "</s>") == -1);
    free(skip);
    free(random);
    free(tokens);
    free(skip_data);
    free(random_data);
    free(token_data);
    tt_free_cases(cases, n);
    pf_tokenizer_free(t);
}

/* Encoder-decoder tokenizers: their ids and decodes are checked with every fixture's
   (tt_test_families, tt_test_pairs); here what only they have. */
static void tt_test_seq2seq(void) {
    static const char *const dirs[] = {"tokenizer-t5s", "tokenizer-mbart", "tokenizer-mbart50", "tokenizer-pegasus",
                                       "tokenizer-bart", "tokenizer-blenderbot", "tokenizer-byt5", "tokenizer-byt5-old",
                                       "tokenizer-marian", "tokenizer-m2m100", "tokenizer-m2m100-listed",
                                       "tokenizer-openai-gpt-files", "tokenizer-herbert-files", "tokenizer-ctrl-files",
                                       "tokenizer-blenderbot-small", "tokenizer-blenderbot-small-cleanup",
                                       "tokenizer-phobert-files", "tokenizer-bertweet-files", "tokenizer-xlm-files",
                                       "tokenizer-xlm-cased", "tokenizer-flaubert-files", "tokenizer-flaubert-lower",
                                       "tokenizer-bert-japanese-char", "tokenizer-bert-japanese-lower",
                                       "tokenizer-bert-japanese-wp"};
    static const struct {
        const char *dir, *tokenizer_class;
    } refused[] = {{"tokenizer-cpm-refused", "CpmTokenizer"}};
    size_t i;
    for (i = 0; i < sizeof dirs / sizeof dirs[0]; i++) tt_check_seq2seq_dir(dirs[i]);
    /* the language codes are addressable, and mBART's post-processor appends </s> then the source
       language; mBART-50's puts the language first */
    {
        pf_tokenizer *mbart = tt_load_fixture("tokenizer-mbart"), *mbart50 = tt_load_fixture("tokenizer-mbart50");
        int32_t ids[16];
        size_t n = 0;
        if (mbart && mbart50) {
            int32_t ro = pf_tokenizer_token_id(mbart, "ro_RO"), en = pf_tokenizer_token_id(mbart50, "en_XX");
            CHECK(ro > 0 && en > 0 && pf_tokenizer_is_special(mbart, ro) && pf_tokenizer_is_special(mbart50, en));
            CHECK(pf_tokenize_special(mbart, "a", 1, ids, 16, &n) == PF_OK && n >= 3 && ids[n - 1] == ro &&
                  ids[n - 2] == pf_tokenizer_eos_id(mbart));
            CHECK(pf_tokenize_special(mbart50, "a", 1, ids, 16, &n) == PF_OK && n >= 3 && ids[0] == en &&
                  ids[n - 1] == pf_tokenizer_eos_id(mbart50));
        }
        pf_tokenizer_free(mbart);
        pf_tokenizer_free(mbart50);
    }
    /* ByT5: a text ending with </s> gets no second one; bytes that are not UTF-8 are dropped */
    {
        pf_tokenizer *t = tt_load_fixture("tokenizer-byt5");
        int32_t ids[16];
        size_t n = 0, len = 0;
        char text[16];
        static const int32_t bad[] = {0xE6 + 3, 0x97 + 3, 'a' + 3, 0xFF + 3, 0xC3 + 3, 0xA9 + 3, 0xA9 + 3};
        if (t) {
            CHECK(pf_tokenize_special(t, "a</s>", 5, ids, 16, &n) == PF_OK && n == 2 && ids[0] == 'a' + 3 && ids[1] == 1);
            CHECK(pf_detokenize(t, bad, sizeof bad / sizeof bad[0], text, sizeof text, &len) == PF_OK && len == 3 &&
                  !memcmp(text, "a\xC3\xA9", 3));
        }
        pf_tokenizer_free(t);
    }
    { /* bad ByT5 configs: a clear PF_ERROR_FORMAT */
        static const char *const bad_configs[] = {
            "{\"tokenizer_class\":\"ByT5Tokenizer\",\"extra_ids\":-1}",
            "{\"tokenizer_class\":\"ByT5Tokenizer\",\"eos_token\":\"<nope>\"}",
            "{\"tokenizer_class\":\"ByT5Tokenizer\",\"additional_special_tokens\":[1]}",
            "{\"tokenizer_class\":\"ByT5Tokenizer\",\"added_tokens_decoder\":{\"x\":{\"content\":\"a\"}}}",
        };
        char dir[256], err[512];
        for (i = 0; i < sizeof bad_configs / sizeof bad_configs[0] && tt_mkdtemp(dir, sizeof dir) == 0; i++) {
            pf_tokenizer *t = NULL;
            pf_result r;
            CHECK(tt_write(dir, "tokenizer_config.json", bad_configs[i], strlen(bad_configs[i])) == 0);
            err[0] = 0;
            r = pf_tokenizer_load(dir, &t, err, sizeof err);
            CHECK_MSG(r == PF_ERROR_FORMAT && t == NULL && strstr(err, "tokenizer_config.json"), "%s: %s, \"%s\"",
                      bad_configs[i], pf_result_string(r), err);
            pf_tokenizer_free(t);
            tt_rmdir(dir);
        }
    }
    for (i = 0; i < sizeof refused / sizeof refused[0]; i++) {
        char path[1100], err[512] = "";
        pf_tokenizer *t = NULL;
        pf_result r;
        snprintf(path, sizeof path, "%s/%s", test_fixtures, refused[i].dir);
        r = pf_tokenizer_load(path, &t, err, sizeof err);
        CHECK_MSG(r == PF_ERROR_UNSUPPORTED && t == NULL && strstr(err, refused[i].tokenizer_class) &&
                  strstr(err, "tokenizer.json"), "%s: %s, \"%s\"", refused[i].dir, pf_result_string(r), err);
        pf_tokenizer_free(t);
    }
}

/* Marian's source.spm cut short at many lengths and with a byte changed, and SentencePiece models
   that lie or ask for what is not implemented: a clear error naming the file (or a tokenizer that
   works), never a crash; separate_vocabs refused by name. */
#define TT_PROTO(bytes) bytes, sizeof bytes - 1
static void tt_test_spm_bad(void) {
    static const struct {
        const char *proto;
        size_t len;
        pf_result want;
        const char *says;
    } cases[] = {
        {TT_PROTO("\x0A\x09\x0A\x05<unk>\x18\x02\x12\x02\x18\x03"), PF_ERROR_UNSUPPORTED, "model_type"},
        {TT_PROTO("\x0A\x09\x0A\x05<unk>\x18\x02\x12\x03\x98\x02\x01"), PF_ERROR_UNSUPPORTED, "byte_fallback"},
        {TT_PROTO("\x0A\x09\x0A\x05<unk>\x18\x02\x0A\x05\x0A\x01x\x18\x04"), PF_ERROR_UNSUPPORTED, "USER_DEFINED"},
        {TT_PROTO("\x0A\x09\x0A\x05<unk>\x18\x02\x2A\x04\x12\x02\x01\x02"), PF_ERROR_UNSUPPORTED, "denormalizer"},
        {TT_PROTO("\x0A\x03\x0A\x01" "a"), PF_ERROR_FORMAT, "UNKNOWN"},
        {TT_PROTO("\x0A\x09\x0A\x05<unk>\x18\x02\x0A\x09\x0A\x05<unk>\x18\x02"), PF_ERROR_FORMAT, "twice"},
        {TT_PROTO("\x0A\x02\x18\x02"), PF_ERROR_FORMAT, "empty"},
        {TT_PROTO("\x0A\xFF\x01\x0A"), PF_ERROR_FORMAT, "malformed"},
        {TT_PROTO("\x0A\x09\x0A\x05<unk>\x18\x02\x1A\x03\x12\x01\x00"), PF_ERROR_FORMAT, "charsmap"},
        {TT_PROTO("\x0B\x0C"), PF_ERROR_FORMAT, "malformed"},
        {TT_PROTO("\x0A\x09\x0A\x05<unk>\x15\x02"), PF_ERROR_FORMAT, "malformed"},
    };
    static const char config[] = "{\"tokenizer_class\": \"MarianTokenizer\"}";
    static const char separate[] = "{\"tokenizer_class\": \"MarianTokenizer\", \"separate_vocabs\": true}";
    char fixture[1100], path[1200], dir[256], err[512];
    size_t len = 0, cut, i, loaded = 0;
    char *spm;
    snprintf(fixture, sizeof fixture, "%s/tokenizer-marian", test_fixtures);
    snprintf(path, sizeof path, "%s/source.spm", fixture);
    spm = test_read_file(path, &len);
    if (!spm || tt_mkdtemp(dir, sizeof dir) || tt_copy(fixture, "vocab.json", dir) ||
        tt_write(dir, "tokenizer_config.json", config, sizeof config - 1)) {
        CHECK_MSG(0, "setting up the SentencePiece bad-input directory");
        free(spm);
        return;
    }
    for (cut = 0; cut <= len + 1; cut += cut < 96 ? 1 : 37) { /* cut short; then the whole with a byte changed */
        pf_tokenizer *t = NULL;
        pf_result r;
        size_t n = cut <= len ? cut : len;
        char saved = 0;
        if (cut > len) {
            saved = spm[len / 3];
            spm[len / 3] = (char)0xFF;
        }
        if (cut == len + 1) n = len;
        CHECK(tt_write(dir, "source.spm", spm, n) == 0);
        err[0] = 0;
        r = pf_tokenizer_load(dir, &t, err, sizeof err);
        if (cut > len) spm[len / 3] = saved;
        if (r == PF_OK) {
            int32_t ids[64];
            size_t m = 0, out_len = 0;
            char text[256];
            loaded++;
            static const char sample[] = "Hello w\xC3\xB6rld \xF0\x9F\x98\x80 \xFF";
            CHECK(pf_tokenize_special(t, sample, sizeof sample - 1, ids, 64, &m) == PF_OK &&
                  pf_detokenize(t, ids, m, text, sizeof text, &out_len) == PF_OK);
        } else {
            CHECK_MSG((r == PF_ERROR_FORMAT || r == PF_ERROR_UNSUPPORTED) && t == NULL && strstr(err, "source.spm"),
                      "source.spm cut to %zu of %zu bytes: %s, \"%s\"", n, len, pf_result_string(r), err);
        }
        pf_tokenizer_free(t);
    }
    CHECK_MSG(loaded >= 1, "the whole source.spm loads");
    for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        pf_tokenizer *t = NULL;
        pf_result r;
        CHECK(tt_write(dir, "source.spm", cases[i].proto, cases[i].len) == 0);
        err[0] = 0;
        r = pf_tokenizer_load(dir, &t, err, sizeof err);
        CHECK_MSG(r == cases[i].want && t == NULL && strstr(err, "source.spm") && strstr(err, cases[i].says),
                  "SentencePiece case %zu: %s, \"%s\" (want %s naming %s)", i, pf_result_string(r), err,
                  pf_result_string(cases[i].want), cases[i].says);
        pf_tokenizer_free(t);
    }
    {
        pf_tokenizer *t = NULL;
        pf_result r;
        CHECK(tt_write(dir, "source.spm", spm, len) == 0 &&
              tt_write(dir, "tokenizer_config.json", separate, sizeof separate - 1) == 0);
        r = pf_tokenizer_load(dir, &t, err, sizeof err);
        CHECK_MSG(r == PF_ERROR_UNSUPPORTED && !t && strstr(err, "separate_vocabs"), "separate_vocabs: %s, \"%s\"",
                  pf_result_string(r), err);
        pf_tokenizer_free(t);
    }
    free(spm);
    tt_rmdir(dir);
}

/* Marian's ">>xx<<" at the start of a text is its own token (unk when vocab.json lacks it), and
   M2M100's language codes are addressable, first in a text's ids with specials, special only
   where the config lists them. */
static void tt_test_spm_specials(void) {
    pf_tokenizer *marian = tt_load_fixture("tokenizer-marian"), *m2m = tt_load_fixture("tokenizer-m2m100"),
                 *listed = tt_load_fixture("tokenizer-m2m100-listed");
    int32_t ids[32];
    size_t n = 0;
    if (marian) {
        int32_t fr = pf_tokenizer_token_id(marian, ">>fr<<");
        CHECK(fr > 2 && pf_tokenize(marian, ">>fr<< a", 8, ids, 32, &n) == PF_OK && n >= 2 && ids[0] == fr);
        CHECK(pf_tokenize(marian, ">>de<< a", 8, ids, 32, &n) == PF_OK && n >= 2 && ids[0] == pf_tokenizer_token_id(marian, "<unk>"));
        CHECK(pf_tokenize_special(marian, "a", 1, ids, 32, &n) == PF_OK && n >= 2 && ids[n - 1] == pf_tokenizer_eos_id(marian));
    }
    if (m2m && listed) {
        int32_t en = pf_tokenizer_token_id(m2m, "__en__"), fr = pf_tokenizer_token_id(listed, "__fr__");
        CHECK(en > 0 && !pf_tokenizer_is_special(m2m, en) && fr > 0 && pf_tokenizer_is_special(listed, fr));
        CHECK(pf_tokenize_special(m2m, "a", 1, ids, 32, &n) == PF_OK && n >= 3 && ids[0] == en &&
              ids[n - 1] == pf_tokenizer_eos_id(m2m));
        CHECK(pf_tokenize(listed, "__fr__", 6, ids, 32, &n) == PF_OK && n == 1 && ids[0] == fr);
        CHECK(pf_tokenize(m2m, "__fr__", 6, ids, 32, &n) == PF_OK && n > 1);
    }
    pf_tokenizer_free(marian);
    pf_tokenizer_free(m2m);
    pf_tokenizer_free(listed);
}

void test_tokenizer(void) {
    tt_test_spm_bad();
    tt_test_spm_specials();
    tt_test_special_ids();
    tt_test_skipped_special();
    tt_test_gpt2();
    tt_test_tiny();
    tt_test_rules();
    tt_test_added_matching();
    tt_test_families();
    tt_test_prompts();
    tt_test_pairs();
    tt_test_pair_api();
    tt_test_styles();
    tt_test_components();
    tt_test_bad_input();
    tt_test_not_byte_level_files();
    tt_test_bpe_files();
    tt_test_word_split_hostile();
    tt_test_hostile_charsmap();
    tt_test_seq2seq();
}
