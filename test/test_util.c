/* The helpers of test.h, shared by test_parallelformers (test_main.c and the test files) and
   test_cuda: the counters, the fixtures' reference files, and generation_cases.txt. */
#include <dirent.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "test.h"

int test_passed, test_failed;
const char *test_fixtures = "test/fixtures";
const char *test_generate_binary = "build/generate";

int test_register_fixture_policies(void) {
    DIR *d = opendir(test_fixtures);
    struct dirent *e;
    int registered = 0;
    while (d && (e = readdir(d))) {
        char path[1200], err[512];
        if (e->d_name[0] == '.') continue;
        snprintf(path, sizeof path, "%s/%s/policy.json", test_fixtures, e->d_name);
        FILE *f = fopen(path, "r");
        if (!f) continue;
        fclose(f);
        pf_result r = pf_register_policy_file(path, err, sizeof err);
        CHECK_MSG(r == PF_OK, "%s", err);
        registered += r == PF_OK;
    }
    if (d) closedir(d);
    return registered;
}

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
        else if (!strcmp(line, "prompt_ids")) ref->num_prompt_ids = test_parse_ids(value, ref->prompt_ids, TEST_MAX_IDS), fields++;
        else if (!strcmp(line, "greedy_ids")) ref->num_greedy_ids = test_parse_ids(value, ref->greedy_ids, TEST_MAX_IDS), fields++;
        else if (!strcmp(line, "max_new_tokens")) ref->max_new_tokens = atoi(value), fields++;
        else if (!strcmp(line, "vocab_size")) ref->vocab_size = atoi(value), fields++;
    }
    fclose(f);
    return fields == 5 && ref->num_prompt_ids > 0 && ref->num_greedy_ids > 0 ? 0 : -1;
}

char *test_read_file(const char *path, size_t *size) {
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
    *size = n;
    return buf;
}

int test_write_file(const char *path, const void *data, size_t size) {
    FILE *f = fopen(path, "wb");
    if (!f) return -1;
    if (fwrite(data, 1, size, f) != size) {
        fclose(f);
        return -1;
    }
    return fclose(f);
}

float *test_read_floats(const char *path, size_t *count) {
    size_t size = 0;
    char *data = test_read_file(path, &size);
    if (data && size == 0) {
        free(data);
        data = NULL;
    }
    if (data) *count = size / sizeof(float);
    return (float *)data;
}

float test_max_abs_diff(const float *a, const float *b, size_t n) {
    float worst = 0;
    for (size_t i = 0; i < n; i++) {
        float d = fabsf(a[i] - b[i]);
        if (!(d <= worst)) worst = d; /* NaN counts as the worst */
    }
    return worst;
}

float test_round_to_format(float x, int bits, int lowest) {
    int e;
    if (x == 0.0f || !isfinite(x)) return x;
    frexpf(x, &e); /* the leading bit is 2^(e - 1) */
    int last = e - 1 - bits < lowest ? lowest : e - 1 - bits;
    return ldexpf(nearbyintf(ldexpf(x, -last)), last);
}

/* ---- generation_cases.txt: the one-line JSON of generate kwargs ---- */

static const char *skip_spaces(const char *p) {
    while (*p == ' ') p++;
    return p;
}

/* [1, 2, 3] into out; returns the count, p moved past the ']'. */
static int read_int_list(const char **p, int32_t *out, int cap) {
    int n = 0;
    *p = skip_spaces(*p + 1);
    while (**p && **p != ']') {
        char *end;
        long v = strtol(*p, &end, 10);
        if (end == *p) return -1;
        if (n < cap) out[n] = (int32_t)v;
        n++;
        *p = skip_spaces(end);
        if (**p == ',') *p = skip_spaces(*p + 1);
    }
    if (**p == ']') (*p)++;
    return n <= cap ? n : -1;
}

static int parse_options(const char *json, test_gen_case *c) {
    pf_generate_options *o = &c->options;
    *o = pf_generate_options_init();
    const char *p = skip_spaces(json);
    if (*p++ != '{') return -1;
    while (*(p = skip_spaces(p)) && *p != '}') {
        char key[64];
        const char *q = strchr(p + 1, '"');
        if (*p != '"' || !q || q - p - 1 >= (long)sizeof key) return -1;
        memcpy(key, p + 1, (size_t)(q - p - 1));
        key[q - p - 1] = 0;
        p = skip_spaces(q + 1);
        if (*p++ != ':') return -1;
        p = skip_spaces(p);
        if (!strcmp(key, "bad_words_ids")) {
            p = skip_spaces(p + 1);
            while (*p == '[') {
                int n = o->num_bad_words;
                if (n >= 8) return -1;
                c->bad[n].length = read_int_list(&p, c->bad_ids[n], 4);
                if (c->bad[n].length < 0) return -1;
                c->bad[n].ids = c->bad_ids[n];
                o->num_bad_words++;
                p = skip_spaces(p);
                if (*p == ',') p = skip_spaces(p + 1);
            }
            if (*p++ != ']') return -1;
        } else if (!strcmp(key, "suppress_tokens") || !strcmp(key, "begin_suppress_tokens")) {
            int begin = key[0] == 'b', n = read_int_list(&p, begin ? c->begin_suppress : c->suppress, 16);
            if (n < 0) return -1;
            if (begin) o->begin_suppress_tokens = c->begin_suppress, o->num_begin_suppress_tokens = n;
            else o->suppress_tokens = c->suppress, o->num_suppress_tokens = n;
        } else if (!strcmp(key, "eos_token_id")) {
            if (*p == '[') {
                o->num_eos_token_ids = read_int_list(&p, c->eos, 4);
            } else {
                char *end;
                c->eos[0] = (int32_t)strtol(p, &end, 10);
                p = end;
                o->num_eos_token_ids = 1;
            }
            if (o->num_eos_token_ids < 0) return -1;
            o->eos_token_ids = c->eos;
        } else if (!strncmp(p, "true", 4) || !strncmp(p, "false", 5)) {
            int v = *p == 't';
            p += v ? 4 : 5;
            if (!strcmp(key, "early_stopping")) o->early_stopping = v ? PF_EARLY_STOPPING_ON : PF_EARLY_STOPPING_HEURISTIC;
            else if (!strcmp(key, "do_sample")) o->do_sample = v;
            else return -1;
        } else if (*p == '"') {
            if (strcmp(key, "early_stopping") || strncmp(p, "\"never\"", 7)) return -1;
            o->early_stopping = PF_EARLY_STOPPING_NEVER;
            p += 7;
        } else {
            char *end;
            double v = strtod(p, &end);
            if (end == p) return -1;
            p = end;
            if (!strcmp(key, "max_new_tokens")) o->max_new_tokens = (int)v;
            else if (!strcmp(key, "max_length")) o->max_length = (int)v;
            else if (!strcmp(key, "min_new_tokens")) o->min_new_tokens = (int)v;
            else if (!strcmp(key, "min_length")) o->min_length = (int)v;
            else if (!strcmp(key, "num_beams")) o->num_beams = (int)v;
            else if (!strcmp(key, "num_return_sequences")) o->num_return_sequences = (int)v;
            else if (!strcmp(key, "no_repeat_ngram_size")) o->no_repeat_ngram_size = (int)v;
            else if (!strcmp(key, "length_penalty")) o->length_penalty = (float)v;
            else if (!strcmp(key, "repetition_penalty")) o->repetition_penalty = (float)v;
            else if (!strcmp(key, "pad_token_id")) o->pad_token_id = (int)v;
            else if (!strcmp(key, "forced_bos_token_id")) o->forced_bos_token_id = (int)v;
            else if (!strcmp(key, "forced_eos_token_id")) o->forced_eos_token_id = (int)v;
            else if (!strcmp(key, "decoder_start_token_id")) o->decoder_start_token_id = (int)v;
            else if (!strcmp(key, "encoder_no_repeat_ngram_size")) o->encoder_no_repeat_ngram_size = (int)v;
            else return -1;
        }
        p = skip_spaces(p);
        if (*p == ',') p++;
    }
    o->bad_words = c->bad;
    return 0;
}

/* ---- generation_cases.txt: the cases ---- */

int test_read_gen_cases(const char *fixture, test_gen_case *cases, int cap) {
    char path[1200], line[4096];
    snprintf(path, sizeof path, "%s/%s/generation_cases.txt", test_fixtures, fixture);
    FILE *f = fopen(path, "r");
    if (!f) return -1;
    int n = -1, bad = 0;
    while (fgets(line, sizeof line, f)) {
        line[strcspn(line, "\r\n")] = 0;
        char *v = strchr(line, '=');
        if (line[0] == '#' || !v) continue;
        *v++ = 0;
        if (!strcmp(line, "case")) {
            if (++n >= cap) break;
            memset(&cases[n], 0, sizeof cases[n]);
            snprintf(cases[n].name, sizeof cases[n].name, "%s", v);
        } else if (n < 0) {
            bad = 1;
        } else if (!strcmp(line, "options")) {
            bad |= parse_options(v, &cases[n]) != 0;
        } else if (!strcmp(line, "prompt") && cases[n].num_prompts < TEST_MAX_ROWS) {
            test_gen_case *c = &cases[n];
            c->prompt_lengths[c->num_prompts] = test_parse_ids(v, c->prompts[c->num_prompts], TEST_MAX_IDS);
            bad |= c->prompt_lengths[c->num_prompts] < 1;
            c->num_prompts++;
        } else if (!strcmp(line, "global")) { /* after the prompts, one a prompt */
            test_gen_case *c = &cases[n];
            int values[TEST_MAX_IDS], k = c->num_global++;
            if (k >= c->num_prompts || test_parse_ids(v, values, TEST_MAX_IDS) != c->prompt_lengths[k]) {
                bad = 1;
                break;
            }
            for (int t = 0; t < c->prompt_lengths[k]; t++) c->global[k][t] = values[t];
            c->global_rows[k] = c->global[k];
            c->options.global_attention = c->global_rows;
        } else if (!strcmp(line, "output") && cases[n].num_outputs < TEST_MAX_ROWS * 4) {
            test_gen_case *c = &cases[n];
            c->output_lengths[c->num_outputs] = test_parse_ids(v, c->outputs[c->num_outputs], TEST_MAX_IDS);
            bad |= c->output_lengths[c->num_outputs] < 0;
            c->num_outputs++;
        } else if (!strcmp(line, "score") && cases[n].num_scores < TEST_MAX_ROWS * 4) {
            cases[n].scores[cases[n].num_scores++] = strtof(v, NULL);
        }
    }
    fclose(f);
    for (int k = 0; k <= n && k < cap; k++) bad |= cases[k].num_global && cases[k].num_global != cases[k].num_prompts;
    return bad ? -1 : (n >= cap ? cap : n + 1);
}

int test_check_gen_case(pf_model *m, const char *what, const test_gen_case *c) {
    const int32_t *prompts[TEST_MAX_ROWS];
    int32_t storage[TEST_MAX_ROWS][TEST_MAX_IDS];
    for (int b = 0; b < c->num_prompts; b++) {
        for (int t = 0; t < c->prompt_lengths[b]; t++) storage[b][t] = c->prompts[b][t];
        prompts[b] = storage[b];
    }
    pf_generation g;
    pf_result r = pf_generate_batch(m, prompts, c->prompt_lengths, c->num_prompts, &c->options, &g);
    CHECK_MSG(r == PF_OK, "%s: case %s: %s", what, c->name, pf_error_message(m));
    if (r) return 0;
    int matched = g.num_sequences == c->num_outputs;
    CHECK_MSG(g.num_sequences == c->num_outputs, "%s: case %s: %d sequences, want %d", what, c->name, g.num_sequences,
              c->num_outputs);
    for (int i = 0; i < g.num_sequences && i < c->num_outputs; i++) {
        int same = g.lengths[i] == c->output_lengths[i], first_diff = -1;
        for (int t = 0; t < g.lengths[i] && t < c->output_lengths[i] && first_diff < 0; t++)
            if (g.tokens[i][t] != c->outputs[i][t]) first_diff = t;
        same = same && first_diff < 0;
        CHECK_MSG(same,
                  "%s: case %s: sequence %d differs from transformers' (%d tokens, want %d; first difference at %d)",
                  what, c->name, i, g.lengths[i], c->output_lengths[i], first_diff);
        matched = matched && same;
        if (i < c->num_scores) {
            int close = fabsf(g.scores[i] - c->scores[i]) <= 1e-4f * (1 + fabsf(c->scores[i]));
            CHECK_MSG(close, "%s: case %s: score %d is %.9g, transformers' %.9g", what, c->name, i, g.scores[i],
                      c->scores[i]);
            matched = matched && close;
        }
    }
    pf_generation_free(&g);
    return matched;
}

/* One file of the regions' floats (VisualBERT's and LXMERT's regions.bin, LXMERT's boxes.bin), row
   after row, split by ref->num_regions into rows (*width: what the file's size gives a region); 0 on
   success. */
static int test_read_region_file(const char *path, const test_encoder_reference *ref, int *width,
                                 float rows[TEST_ENCODER_ROWS][TEST_MAX_REGION_FLOATS]) {
    size_t n = 0, regions = 0;
    for (int b = 0; b < ref->rows; b++) regions += (size_t)ref->num_regions[b];
    float *values = test_read_floats(path, &n);
    int ok = values && regions && n % regions == 0;
    if (ok) *width = (int)(n / regions);
    for (int b = 0, first = 0; ok && b < ref->rows; first += ref->num_regions[b++] * *width) {
        size_t count = (size_t)ref->num_regions[b] * *width;
        ok = ref->num_regions[b] >= 0 && count <= TEST_MAX_REGION_FLOATS;
        if (ok) memcpy(rows[b], values + first, count * sizeof(float));
    }
    free(values);
    return ok ? 0 : -1;
}

/* regions.bin, and LXMERT's boxes.bin where the fixture has one; 0 on success. */
static int test_read_regions(const char *dir, test_encoder_reference *ref) {
    char path[1100];
    snprintf(path, sizeof path, "%s/regions.bin", dir);
    if (test_read_region_file(path, ref, &ref->region_dim, ref->regions)) return -1;
    snprintf(path, sizeof path, "%s/boxes.bin", dir);
    FILE *f = fopen(path, "rb");
    if (!f) return 0;
    fclose(f);
    ref->has_region_boxes = 1;
    return test_read_region_file(path, ref, &ref->region_box_dim, ref->region_boxes);
}

/* LUKE's mentions<i>=: each entity's positions, entities apart by ';', into row's mention_length
   values each (-1 after the mention's last); 0 on success. */
static int test_read_mentions(const char *text, test_encoder_reference *ref, int row) {
    int e = 0;
    for (const char *p = text; *p && *p != '\n' && *p != '\r'; e++) {
        const char *end = strpbrk(p, ";\r\n");
        char part[256];
        size_t len = end ? (size_t)(end - p) : strlen(p);
        int values[TEST_MAX_MENTION], n;
        if (e >= TEST_MAX_ENTITIES || len >= sizeof part) return -1;
        memcpy(part, p, len);
        part[len] = 0;
        if ((n = test_parse_ids(part, values, TEST_MAX_MENTION)) < 1) return -1;
        for (int i = 0; i < TEST_MAX_MENTION; i++) ref->entity_positions[row][e * TEST_MAX_MENTION + i] = i < n ? values[i] : -1;
        p += len;
        if (*p == ';') p++;
    }
    return e == ref->num_entities[row] ? 0 : -1;
}

/* The entity positions, read TEST_MAX_MENTION wide, repacked mention_length wide. */
static int test_pack_mentions(test_encoder_reference *ref) {
    int width = ref->mention_length;
    if (width < 1 || width > TEST_MAX_MENTION) return -1;
    for (int b = 0; b < ref->rows; b++)
        for (int e = 0; e < ref->num_entities[b]; e++)
            for (int i = 0; i < TEST_MAX_MENTION; i++) {
                int32_t p = ref->entity_positions[b][e * TEST_MAX_MENTION + i];
                if (i >= width && p != -1) return -1;
                if (i < width) ref->entity_positions[b][e * width + i] = p;
            }
    return 0;
}

int test_read_encoder_reference(const char *dir, test_encoder_reference *ref) {
    char path[1100], line[4096];
    snprintf(path, sizeof path, "%s/reference.txt", dir);
    FILE *f = fopen(path, "r");
    if (!f) return -1;
    memset(ref, 0, sizeof *ref);
    while (fgets(line, sizeof line, f)) {
        int row, values[4 * TEST_MAX_IDS], n;
        char *eq = strchr(line, '=');
        if (!eq) continue;
        if (!strncmp(line, "rows=", 5)) ref->rows = atoi(line + 5);
        else if (!strncmp(line, "output_lengths=", 15) && (n = test_parse_ids(eq + 1, values, TEST_ENCODER_ROWS)) > 0)
            for (int i = 0; i < n; i++) ref->output_lengths[i] = values[i];
        else if (sscanf(line, "ids%d=", &row) == 1 && row >= 0 && row < TEST_ENCODER_ROWS &&
                 (n = test_parse_ids(eq + 1, values, TEST_MAX_IDS)) > 0) {
            ref->lengths[row] = n;
            for (int i = 0; i < n; i++) ref->ids[row][i] = values[i];
        } else if (sscanf(line, "types%d=", &row) == 1 && row >= 0 && row < TEST_ENCODER_ROWS &&
                   (n = test_parse_ids(eq + 1, values, TEST_MAX_IDS)) > 0) {
            ref->has_types = 1;
            for (int i = 0; i < n; i++) ref->types[row][i] = values[i];
        } else if (sscanf(line, "boxes%d=", &row) == 1 && row >= 0 && row < TEST_ENCODER_ROWS &&
                   (n = test_parse_ids(eq + 1, values, 4 * TEST_MAX_IDS)) > 0) {
            ref->has_boxes = 1;
            for (int i = 0; i < n; i++) ref->boxes[row][i] = values[i];
        } else if (sscanf(line, "table%d=", &row) == 1 && row >= 0 && row < TEST_ENCODER_ROWS &&
                   (n = test_parse_ids(eq + 1, ref->table[row], 7 * TEST_MAX_IDS)) > 0) {
            ref->has_table = 1;
        } else if (sscanf(line, "global%d=", &row) == 1 && row >= 0 && row < TEST_ENCODER_ROWS &&
                   (n = test_parse_ids(eq + 1, values, TEST_MAX_IDS)) > 0) {
            ref->has_global = 1;
            for (int i = 0; i < n; i++) ref->global[row][i] = values[i];
        } else if (sscanf(line, "regions%d=", &row) == 1 && row >= 0 && row < TEST_ENCODER_ROWS) {
            ref->has_regions = 1;
            ref->num_regions[row] = atoi(eq + 1);
        } else if (!strncmp(line, "mention_length=", 15)) {
            ref->mention_length = atoi(eq + 1);
        } else if (sscanf(line, "entities%d=", &row) == 1 && row >= 0 && row < TEST_ENCODER_ROWS &&
                   (n = test_parse_ids(eq + 1, values, TEST_MAX_ENTITIES)) >= 0) {
            ref->has_entities = 1;
            ref->num_entities[row] = n;
            for (int i = 0; i < n; i++) ref->entity_ids[row][i] = values[i];
        } else if (sscanf(line, "mentions%d=", &row) == 1 && row >= 0 && row < TEST_ENCODER_ROWS) {
            if (test_read_mentions(eq + 1, ref, row)) {
                fclose(f);
                return -1;
            }
        }
    }
    fclose(f);
    for (int b = 0; b < TEST_ENCODER_ROWS; b++)
        if (!ref->output_lengths[b]) ref->output_lengths[b] = ref->lengths[b];
    if (ref->rows < 1 || ref->rows > TEST_ENCODER_ROWS) return -1;
    if (ref->has_entities && test_pack_mentions(ref)) return -1;
    return ref->has_regions ? test_read_regions(dir, ref) : 0;
}

/* generate() takes what its kwargs leave unset from generation_config.json: the forced tokens
   (mBART's forced_eos_token_id, say) and the start token, as pf_model_generate_options has them. */
void test_gen_cases_with_model_defaults(const pf_model *m, test_gen_case *cases, int count) {
    pf_generate_options d = pf_model_generate_options(m);
    for (int k = 0; k < count; k++) {
        pf_generate_options *o = &cases[k].options;
        if (o->forced_bos_token_id < 0) o->forced_bos_token_id = d.forced_bos_token_id;
        if (o->forced_eos_token_id < 0) o->forced_eos_token_id = d.forced_eos_token_id;
        if (o->decoder_start_token_id < 0) o->decoder_start_token_id = d.decoder_start_token_id;
        if (!o->encoder_no_repeat_ngram_size) o->encoder_no_repeat_ngram_size = d.encoder_no_repeat_ngram_size;
        if (!o->suppress_tokens)
            o->suppress_tokens = d.suppress_tokens, o->num_suppress_tokens = d.num_suppress_tokens;
        if (!o->begin_suppress_tokens)
            o->begin_suppress_tokens = d.begin_suppress_tokens, o->num_begin_suppress_tokens = d.num_begin_suppress_tokens;
    }
}

void test_example_path(const char *name, char *path, size_t size) {
    const char *slash = strrchr(test_generate_binary, '/');
    snprintf(path, size, "%.*s%s", slash ? (int)(slash - test_generate_binary + 1) : 0, test_generate_binary, name);
}

int test_run_output(const char *command, char *out, size_t size) {
    FILE *p = popen(command, "r");
    size_t n = 0, got;
    out[0] = 0;
    if (!p) return -1;
    while (n + 1 < size && (got = fread(out + n, 1, size - 1 - n, p)) > 0) n += got;
    out[n] = 0;
    char rest[256];
    while (fread(rest, 1, sizeof rest, p) > 0) {} /* the command must not die of a closed pipe */
    int status = pclose(p);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* The reference's rows through pf_encode, pf_encode_layout with a layout model's boxes,
   pf_encode_global with a Longformer's given global tokens, pf_encode_regions with VisualBERT's
   regions, or pf_encode_entities with LUKE's entities. */
pf_result test_encode_reference(pf_model *m, const test_encoder_reference *ref, const int32_t *const *ids,
                             const int32_t *const *types, const int32_t *const *boxes,
                                const int32_t *const *global, pf_encoding **e) {
    const float *regions[TEST_ENCODER_ROWS], *region_boxes[TEST_ENCODER_ROWS];
    const int32_t *entity_ids[TEST_ENCODER_ROWS], *entity_positions[TEST_ENCODER_ROWS];
    for (int b = 0; b < ref->rows; b++) {
        regions[b] = ref->regions[b];
        region_boxes[b] = ref->region_boxes[b];
        entity_ids[b] = ref->entity_ids[b];
        entity_positions[b] = ref->entity_positions[b];
    }
    const int32_t *table[TEST_ENCODER_ROWS];
    for (int b = 0; b < ref->rows; b++) table[b] = ref->table[b];
    if (ref->has_table) return pf_encode_table(m, ids, table, ref->lengths, ref->rows, e);
    if (ref->has_entities)
        return pf_encode_entities(m, ids, types, entity_ids, entity_positions, ref->num_entities, ref->mention_length,
                                  ref->lengths, ref->rows, e);
    if (ref->has_region_boxes)
        return pf_encode_region_boxes(m, ids, types, regions, region_boxes, ref->num_regions, ref->region_dim,
                                      ref->region_box_dim, ref->lengths, ref->rows, e);
    return ref->has_boxes     ? pf_encode_layout(m, ids, types, boxes, ref->lengths, ref->rows, e)
           : ref->has_global  ? pf_encode_global(m, ids, types, global, ref->lengths, ref->rows, e)
           : ref->has_regions ? pf_encode_regions(m, ids, types, regions, ref->num_regions, ref->region_dim, ref->lengths,
                                                  ref->rows, e)
                              : pf_encode(m, ids, types, ref->lengths, ref->rows, e);
}
