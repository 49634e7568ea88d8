/* table: a table model (TAPAS) on token ids and their table token types, on N ranks.

   build/table MODEL_DIR [--gpus N] [--device cpu|cuda|auto] [--hidden OUT] [--logits OUT]
               [--aggregation OUT] FILE

   FILE ("-": standard input) holds a token a line, "ID SEGMENT COLUMN ROW PREV_LABEL COLUMN_RANK
   INV_COLUMN_RANK NUMERIC_RELATION": TapasTokenizer's input_ids and its 7 token_type_ids (the
   question and the flattened table, special tokens included); a blank line ends a row, and each row
   is one input (pf_encode_table).

   Prints, by the model's head: table question answering, each row's selected cells, "R C" a line
   (0-based in the table's body, as transformers' convert_logits_to_predictions gives
   predicted_answer_coordinates: a cell whose probability, the sigmoid of its logit, is above 0.5),
   then "aggregation K" (the best operator) where the model has aggregation; sequence
   classification, each row's "score label" lines, best first (softmax). --hidden writes the last
   hidden state [tokens of all rows][hidden], --logits the head's logits (per token or per row),
   --aggregation the aggregation logits [rows][operators], float32 little-endian. Errors go to
   stderr (exit 1; 2 for the command line). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../parallelformers.h"

#define MAX_ROWS 64
#define MAX_TOKENS 4096 /* tokens of one row */
#define MAX_LINE 1024
#define TYPES 7         /* the table token types a token has */

typedef struct table_row {
    int32_t ids[MAX_TOKENS], types[TYPES * MAX_TOKENS];
    int length;
} table_row;

static int usage(FILE *out) {
    fprintf(out,
            "usage: table MODEL_DIR [options] FILE\n"
            "  FILE            a token a line, \"ID SEGMENT COLUMN ROW PREV_LABEL COLUMN_RANK INV_COLUMN_RANK\n"
            "                  NUMERIC_RELATION\"; a blank line ends a row (-: stdin)\n"
            "  --gpus N        ranks (GPUs, or CPU threads without CUDA); default 0: every GPU, or every core\n"
            "  --device D      cpu, cuda or auto (default auto)\n"
            "  --hidden OUT    write the last hidden state as float32 little-endian [tokens][hidden]\n"
            "  --logits OUT    write the head's logits as float32 little-endian\n"
            "  --aggregation OUT  write the aggregation logits as float32 little-endian [rows][operators]\n"
            "  --help          this text\n");
    return out == stdout ? 0 : 2;
}

/* Reads FILE into rows; the count, or -1 (a line that is not 8 integers, too many rows or tokens). */
static int read_rows(FILE *f, table_row *rows, int max) {
    char line[MAX_LINE];
    int count = 0;
    while (fgets(line, sizeof line, f)) {
        if (line[strspn(line, " \t\r\n")] == 0) {
            if (count < max && rows[count].length) count++;
            continue;
        }
        if (count == max || rows[count].length == MAX_TOKENS) return -1;
        table_row *row = &rows[count];
        long values[1 + TYPES];
        char *p = line;
        for (int k = 0; k < 1 + TYPES; k++) {
            char *end;
            values[k] = strtol(p, &end, 10);
            if (end == p || values[k] < 0 || values[k] > 2147483647L) return -1;
            p = end;
        }
        if (p[strspn(p, " \t\r\n")] != 0) return -1;
        row->ids[row->length] = (int32_t)values[0];
        for (int k = 0; k < TYPES; k++) row->types[TYPES * row->length + k] = (int32_t)values[1 + k];
        row->length++;
    }
    if (count < max && rows[count].length) count++;
    return count;
}

static int write_floats(const char *path, const float *x, size_t n) {
    FILE *f = fopen(path, "wb");
    int ok = f && fwrite(x, sizeof(float), n, f) == n;
    if (f && fclose(f)) ok = 0;
    if (!ok) fprintf(stderr, "table: cannot write %s\n", path);
    return ok ? 0 : -1;
}

/* What the head gives, printed (see the top of this file). */
static void print_results(const pf_model *model, const pf_encoding *e, const table_row *rows) {
    char fallback[32];
    for (int b = 0; b < e->batch; b++) {
        const float *logits = e->logits + (size_t)(e->logits_per_token ? e->offsets[b] : b) * e->num_logits;
        if (e->head == PF_HEAD_TABLE_QUESTION_ANSWERING) {
            const table_row *row = &rows[b];
            for (int t = 0; t < row->length; t++) { /* a cell once: at its first token */
                const int32_t *own = row->types + TYPES * t;
                int first = 1;
                for (int u = 0; u < t && first; u++)
                    first = row->types[TYPES * u + 1] != own[1] || row->types[TYPES * u + 2] != own[2];
                if (first && own[1] > 0 && own[2] > 0 && logits[t] > 0) printf("%d %d\n", (int)own[2] - 1, (int)own[1] - 1);
            }
            if (e->num_aggregation_logits) {
                const float *ops = e->aggregation_logits + (size_t)b * e->num_aggregation_logits;
                int best = 0;
                for (int k = 1; k < e->num_aggregation_logits; k++) best = ops[k] > ops[best] ? k : best;
                printf("aggregation %d\n", best);
            }
        } else if (e->head == PF_HEAD_SEQUENCE_CLASSIFICATION) {
            double max = logits[0], sum = 0;
            for (int i = 1; i < e->num_logits; i++) max = logits[i] > max ? logits[i] : max;
            for (int i = 0; i < e->num_logits; i++) sum += exp(logits[i] - max);
            unsigned char done[4096] = {0};
            for (int k = 0; k < e->num_logits && k < 4096; k++) { /* best first */
                int best = -1;
                for (int i = 0; i < e->num_logits && i < 4096; i++)
                    if (!done[i] && (best < 0 || logits[i] > logits[best])) best = i;
                done[best] = 1;
                snprintf(fallback, sizeof fallback, "LABEL_%d", best);
                printf("%.6f %s\n", exp(logits[best] - max) / sum, pf_label_name(model, best) ? pf_label_name(model, best) : fallback);
            }
        }
        if (e->batch > 1 && e->head != PF_HEAD_NONE && b + 1 < e->batch) printf("\n");
    }
}

int main(int argc, char **argv) {
    const char *dir = NULL, *file = NULL, *hidden_path = NULL, *logits_path = NULL, *aggregation_path = NULL;
    int ranks = 0 /* every device */;
    pf_parallel_options po = pf_parallel_options_init();
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) return usage(stdout);
        if (!strcmp(a, "--gpus") && v) ranks = atoi(argv[++i]);
        else if (!strcmp(a, "--hidden") && v) hidden_path = argv[++i];
        else if (!strcmp(a, "--logits") && v) logits_path = argv[++i];
        else if (!strcmp(a, "--aggregation") && v) aggregation_path = argv[++i];
        else if (!strcmp(a, "--device") && v) {
            po.device = !strcmp(v, "cpu") ? PF_DEVICE_CPU : !strcmp(v, "cuda") ? PF_DEVICE_CUDA : PF_DEVICE_AUTO;
            if (strcmp(v, "cpu") && strcmp(v, "cuda") && strcmp(v, "auto")) return usage(stderr);
            i++;
        } else if ((a[0] != '-' || !strcmp(a, "-")) && !dir) dir = a;
        else if ((a[0] != '-' || !strcmp(a, "-")) && !file) file = a;
        else return usage(stderr);
    }
    if (!dir || !file || ranks < 0) return usage(stderr);
    table_row *rows = (table_row *)calloc(MAX_ROWS, sizeof(table_row));
    FILE *f = !strcmp(file, "-") ? stdin : fopen(file, "r");
    int count = rows && f ? read_rows(f, rows, MAX_ROWS) : -1;
    if (f && f != stdin) fclose(f);
    pf_model *model = NULL;
    pf_result r = PF_OK;
    int status = 1;
    if (count < 1) {
        fprintf(stderr, "table: %s: %s\n", file, !f ? "cannot open" : "not lines of 8 integers, \"ID SEGMENT COLUMN ROW "
                "PREV_LABEL COLUMN_RANK INV_COLUMN_RANK NUMERIC_RELATION\" (at most 64 rows of 4096 tokens)");
    } else if ((r = pf_load(dir, NULL, &model))) {
        fprintf(stderr, "table: %s\n", pf_error_message(model));
    } else {
        const int32_t *ids[MAX_ROWS], *types[MAX_ROWS];
        int lengths[MAX_ROWS];
        for (int b = 0; b < count; b++) ids[b] = rows[b].ids, types[b] = rows[b].types, lengths[b] = rows[b].length;
        po.max_batch = count;
        pf_encoding *e = NULL;
        if ((r = pf_parallelize(model, ranks, &po)) || (r = pf_encode_table(model, ids, types, lengths, count, &e)))
            fprintf(stderr, "table: %s\n", pf_error_message(model));
        if (!r) {
            print_results(model, e, rows);
            size_t tokens = (size_t)e->offsets[e->batch];
            status = 0;
            if (hidden_path && write_floats(hidden_path, e->last_hidden_state, tokens * (size_t)e->hidden_size)) status = 1;
            if (logits_path && !e->logits) fprintf(stderr, "table: %s has no head: no logits\n", dir), status = 1;
            else if (logits_path &&
                     write_floats(logits_path, e->logits, (e->logits_per_token ? tokens : (size_t)e->batch) * e->num_logits))
                status = 1;
            if (aggregation_path && !e->aggregation_logits)
                fprintf(stderr, "table: %s has no aggregation head\n", dir), status = 1;
            else if (aggregation_path &&
                     write_floats(aggregation_path, e->aggregation_logits, (size_t)e->batch * e->num_aggregation_logits))
                status = 1;
        }
        pf_encoding_free(e);
    }
    free(rows);
    pf_free(model);
    return status;
}
