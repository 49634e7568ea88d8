/* Ranks across processes (make MPI=1; run under mpirun by make test-mpi): every process runs this
   program, SPMD. Each fixture is split over the world (P processes x L ranks, across_processes)
   and, in every process alone, over the same number of ranks in one process; the two must give
   the same bits (the all-reduce sums every rank's partial in world rank order either way), and
   transformers' outputs within the suite's tolerances. Then a rank failing in the last process
   must fail the request on every process, and the next request must succeed.
   With --driven the models across processes are split with process_0_drives: process 0 alone
   makes the calls and compares, the others follow (pf_follow) each model in the same order. With
   --stages S the processes form S pipeline stages (decoders: each stage its layers, tensor
   parallel over its P / S x L ranks), compared with P / S x L ranks in one process; with both,
   process 0's threads also make concurrent requests, whose decode steps run as micro-batches.
     mpirun -np P build/mpi/test_mpi test/fixtures L [--driven] [--stages S]
     mpirun -np P build/mpi/test_mpi test/fixtures L --kill-after-ms MS [--stop] [--timeout-ms T] [--driven]
       [--stages S]  (test/test_mpi_kill.sh)
   With --cuda (build/mpi/standin/test_mpi: the CUDA backend over test/cuda_standin.c built with
   MOCK_MPI, its NCCL communicators across processes) the ranks are CUDA ranks in fp32, each on a
   GPU of its own (MOCK_GPUS at least the world's ranks, for the one-process side): a decoder and an
   encoder across processes against the same world in one process, bit for bit, and transformers;
   a rank failing in the last process, which fails the request everywhere with its message and
   breaks the communicators until pf_parallelize makes new ones; and test_mpi_kill.sh's cases. */
#include <mpi.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "test.h"
#include "testing_hooks.h"

#define TOLERANCE_HF 1e-4f /* fp32 outputs against transformers, as test_models.c and test_seq2seq.c */

static int process, processes, local_ranks, world, driven, stages = 1;
static int cuda; /* --cuda: CUDA ranks (the stand-in) */
static int process_timeout_ms; /* --timeout-ms: pf_parallel_options.process_timeout_ms */
static int tp_ranks; /* a stage's ranks: world / stages */
static int prefill_chunk; /* nonzero: prompts run in chunks of this many positions, one sequence a step */

/* The fixture split over the world (across) or over `world` ranks in this process alone. */
static pf_model *load_split(const char *name, int across) {
    char dir[1024];
    snprintf(dir, sizeof dir, "%s/%s", test_fixtures, name);
    pf_model *m = NULL;
    pf_result r = pf_load(dir, NULL, &m);
    CHECK_MSG(r == PF_OK, "loading %s: %s", name, pf_error_message(m));
    if (r) {
        pf_free(m);
        return NULL;
    }
    pf_parallel_options o = pf_parallel_options_init();
    o.device = cuda ? PF_DEVICE_CUDA : PF_DEVICE_CPU;
    if (cuda) o.dtype = PF_DTYPE_F32;
    o.max_batch = 16; /* the generation cases' prompts x beams */
    o.across_processes = across;
    o.process_0_drives = across && driven;
    o.pipeline_stages = across ? stages : 0;
    o.process_timeout_ms = process_timeout_ms;
    if (prefill_chunk) o.prefill_chunk = prefill_chunk, o.max_batch = 1;
    r = pf_parallelize(m, across ? local_ranks : tp_ranks, &o);
    CHECK_MSG(r == PF_OK, "%s: pf_parallelize (%s): %s", name, across ? "across processes" : "one process",
              pf_error_message(m));
    if (r) {
        pf_free(m);
        return NULL;
    }
    return m;
}

static void check_same_bits(const char *what, const float *across, const float *alone, size_t n) {
    CHECK_MSG(memcmp(across, alone, n * sizeof(float)) == 0,
              "%s: %d processes x %d ranks (%d stages) differ from %d ranks in one process (largest difference %g)", what,
              processes, local_ranks, stages, tp_ranks, test_max_abs_diff(across, alone, n));
}

static void check_reference(const char *what, const char *name, const char *file, const float *got, size_t n) {
    char path[1100];
    size_t count = 0;
    snprintf(path, sizeof path, "%s/%s/%s", test_fixtures, name, file);
    float *want = test_read_floats(path, &count);
    CHECK_MSG(want && count == n, "%s: %s holds %zu floats, the output %zu", what, file, want ? count : 0, n);
    if (want && count == n) {
        float diff = test_max_abs_diff(got, want, n);
        CHECK_MSG(diff <= TOLERANCE_HF, "%s: %s differs from transformers by %g", what, file, diff);
    }
    free(want);
}

/* Every generation case (greedy, beams, sampling: transformers' sequences) on the split model. */
static void check_generation_cases(pf_model *m, const char *name) {
    static test_gen_case cases[TEST_MAX_GEN_CASES];
    int n = test_read_gen_cases(name, cases, TEST_MAX_GEN_CASES);
    CHECK_MSG(n > 0, "%s: generation_cases.txt", name);
    test_gen_cases_with_model_defaults(m, cases, n);
    char what[128];
    snprintf(what, sizeof what, "%s across %d processes x %d ranks", name, processes, local_ranks);
    for (int i = 0; i < n; i++) test_check_gen_case(m, what, &cases[i]);
}

static void test_decoder(const char *name, int cases) {
    pf_model *across = load_split(name, 1), *alone = load_split(name, 0);
    char dir[1024];
    snprintf(dir, sizeof dir, "%s/%s", test_fixtures, name);
    test_reference ref;
    int ok = test_read_reference(dir, &ref) == 0;
    CHECK_MSG(ok, "%s: reference.txt", name);
    if (across && alone && ok) {
        size_t n = (size_t)ref.num_prompt_ids * ref.vocab_size;
        float *a = (float *)malloc(n * sizeof(float)), *b = (float *)malloc(n * sizeof(float));
        int32_t ids[TEST_MAX_IDS], out_a[TEST_MAX_IDS], out_b[TEST_MAX_IDS];
        for (int i = 0; i < ref.num_prompt_ids; i++) ids[i] = ref.prompt_ids[i];
        pf_result ra = pf_forward(across, ids, 1, ref.num_prompt_ids, a);
        pf_result rb = pf_forward(alone, ids, 1, ref.num_prompt_ids, b);
        CHECK_MSG(ra == PF_OK && rb == PF_OK, "%s: pf_forward: %s / %s", name, pf_error_message(across), pf_error_message(alone));
        if (!ra && !rb) {
            check_same_bits(name, a, b, n);
            check_reference(name, name, "reference_logits.bin", a, n);
        }
        pf_generate_options o = pf_generate_options_init();
        o.max_new_tokens = ref.max_new_tokens;
        int na = 0, nb = 0;
        ra = pf_generate(across, ids, ref.num_prompt_ids, &o, out_a, TEST_MAX_IDS, &na);
        rb = pf_generate(alone, ids, ref.num_prompt_ids, &o, out_b, TEST_MAX_IDS, &nb);
        CHECK_MSG(ra == PF_OK && rb == PF_OK, "%s: pf_generate: %s", name, pf_error_message(across));
        int same = na == ref.num_greedy_ids && nb == na;
        for (int i = 0; same && i < na; i++) same = out_a[i] == ref.greedy_ids[i] && out_b[i] == out_a[i];
        CHECK_MSG(same, "%s: greedy tokens across processes differ from transformers or one process", name);
        free(a);
        free(b);
    }
    if (across && cases) check_generation_cases(across, name);
    pf_free(across);
    pf_free(alone);
}

/* The reference's rows through pf_encode, or pf_encode_regions with VisualBERT's regions, or
   pf_encode_region_boxes with LXMERT's regions and boxes. */
static pf_result encode_rows(pf_model *m, const test_encoder_reference *ref, const int32_t *const *ids,
                             const int32_t *const *types, pf_encoding **e) {
    const float *regions[TEST_ENCODER_ROWS], *boxes[TEST_ENCODER_ROWS];
    const int32_t *table[TEST_ENCODER_ROWS];
    for (int b = 0; b < ref->rows; b++) regions[b] = ref->regions[b], boxes[b] = ref->region_boxes[b], table[b] = ref->table[b];
    if (ref->has_table) return pf_encode_table(m, ids, table, ref->lengths, ref->rows, e);
    if (ref->has_region_boxes)
        return pf_encode_region_boxes(m, ids, types, regions, boxes, ref->num_regions, ref->region_dim,
                                      ref->region_box_dim, ref->lengths, ref->rows, e);
    return ref->has_regions ? pf_encode_regions(m, ids, types, regions, ref->num_regions, ref->region_dim, ref->lengths,
                                                ref->rows, e)
                            : pf_encode(m, ids, types, ref->lengths, ref->rows, e);
}

/* An encoder's hidden states, pooled output and head logits (the masked LM's are split by
   vocabulary) on the reference's rows. */
static void test_encoder(const char *name, const char *hidden_file) {
    pf_model *across = load_split(name, 1), *alone = load_split(name, 0);
    char dir[1024];
    snprintf(dir, sizeof dir, "%s/%s", test_fixtures, name);
    test_encoder_reference ref;
    int ok = test_read_encoder_reference(dir, &ref) == 0;
    CHECK_MSG(ok, "%s: reference.txt", name);
    if (across && alone && ok) {
        const int32_t *ids[TEST_ENCODER_ROWS], *types[TEST_ENCODER_ROWS];
        for (int b = 0; b < ref.rows; b++) ids[b] = ref.ids[b], types[b] = ref.has_types ? ref.types[b] : NULL;
        pf_encoding *a = NULL, *b = NULL;
        pf_result ra = encode_rows(across, &ref, ids, types, &a);
        pf_result rb = encode_rows(alone, &ref, ids, types, &b);
        CHECK_MSG(ra == PF_OK && rb == PF_OK, "%s: pf_encode: %s / %s", name, pf_error_message(across), pf_error_message(alone));
        if (!ra && !rb) {
            size_t tokens = (size_t)a->offsets[a->batch], d = (size_t)a->hidden_size;
            check_same_bits(name, a->last_hidden_state, b->last_hidden_state, tokens * d);
            if (hidden_file) check_reference(name, name, hidden_file, a->last_hidden_state, tokens * d);
            CHECK_MSG(!a->pooled == !b->pooled, "%s: pooled output on one side only", name);
            if (a->pooled && b->pooled) check_same_bits(name, a->pooled, b->pooled, (size_t)a->batch * d);
            CHECK_MSG(!a->logits == !b->logits && a->num_logits == b->num_logits, "%s: logits differ in shape", name);
            if (a->logits && b->logits)
                check_same_bits(name, a->logits, b->logits,
                                (a->logits_per_token ? tokens : (size_t)a->batch) * (size_t)a->num_logits);
            CHECK_MSG(!a->aggregation_logits == !b->aggregation_logits, "%s: aggregation logits on one side only", name);
            if (a->aggregation_logits && b->aggregation_logits)
                check_same_bits(name, a->aggregation_logits, b->aggregation_logits,
                                (size_t)a->batch * (size_t)a->num_aggregation_logits);
        }
        pf_encoding_free(a);
        pf_encoding_free(b);
    }
    pf_free(across);
    pf_free(alone);
}

/* An encoder-decoder: the decoder's logits on reference.txt's rows, then every generation case. */
static void test_encoder_decoder(const char *name) {
    pf_model *across = load_split(name, 1), *alone = load_split(name, 0);
    char path[1100], line[4096];
    snprintf(path, sizeof path, "%s/%s/reference.txt", test_fixtures, name);
    static int32_t src[4][TEST_MAX_IDS], dec[4][TEST_MAX_IDS];
    int src_len[4] = {0}, dec_len[4] = {0}, rows = 0;
    FILE *f = fopen(path, "r");
    CHECK_MSG(f != NULL, "%s: reference.txt", name);
    while (f && fgets(line, sizeof line, f)) {
        int row, values[TEST_MAX_IDS], n;
        char *eq = strchr(line, '=');
        if (!eq) continue;
        int is_src = sscanf(line, "src%d=", &row) == 1, is_dec = !is_src && sscanf(line, "dec%d=", &row) == 1;
        if (!strncmp(line, "rows=", 5)) rows = atoi(line + 5);
        else if ((is_src || is_dec) && row >= 0 && row < 4 && (n = test_parse_ids(eq + 1, values, TEST_MAX_IDS)) > 0) {
            for (int i = 0; i < n; i++) (is_src ? src : dec)[row][i] = values[i];
            (is_src ? src_len : dec_len)[row] = n;
        }
    }
    if (f) fclose(f);
    if (across && alone && rows > 0 && rows <= 4) {
        const int32_t *s[4], *t[4];
        size_t tokens = 0, vocab = (size_t)pf_get_info(across).vocab_size;
        for (int b = 0; b < rows; b++) s[b] = src[b], t[b] = dec[b], tokens += (size_t)dec_len[b];
        float *a = (float *)malloc(tokens * vocab * sizeof(float)), *b = (float *)malloc(tokens * vocab * sizeof(float));
        pf_result ra = pf_forward_seq2seq(across, s, src_len, t, dec_len, rows, a);
        pf_result rb = pf_forward_seq2seq(alone, s, src_len, t, dec_len, rows, b);
        CHECK_MSG(ra == PF_OK && rb == PF_OK, "%s: pf_forward_seq2seq: %s / %s", name, pf_error_message(across),
                  pf_error_message(alone));
        if (!ra && !rb) {
            check_same_bits(name, a, b, tokens * vocab);
            check_reference(name, name, "decoder_logits.bin", a, tokens * vocab);
        }
        free(a);
        free(b);
    }
    if (across) check_generation_cases(across, name);
    pf_free(across);
    pf_free(alone);
}

/* A follower's side of load_split(name, 1) with --driven: the model split over the world, then
   process 0's requests run until process 0 frees it. Before following, a call of its own is
   refused (it would wait for partners that run none), and afterwards the model is freed as
   process 0's was. */
static void follow_fixture(const char *name) {
    pf_model *m = load_split(name, 1);
    if (!m) return;
    pf_result r;
    if (!strcmp(name, "gpt2-tiny")) { /* a decoder: pf_forward would run it */
        int32_t ids[2] = {1, 2};
        float *logits = (float *)malloc(2 * (size_t)pf_get_info(m).vocab_size * sizeof(float));
        r = pf_forward(m, ids, 1, 2, logits);
        CHECK_MSG(r == PF_ERROR_INVALID_ARGUMENT && strstr(pf_error_message(m), "pf_follow"),
                  "process %d: a follower's own request gives %d, \"%s\"", process, (int)r, pf_error_message(m));
        free(logits);
    }
    r = pf_follow(m);
    CHECK_MSG(r == PF_OK, "process %d: pf_follow (%s): %s", process, name, pf_error_message(m));
    pf_free(m);
}

/* pf_to_cpu of a model split across processes is refused (each process would have to take every
   other one's slices, often another host's memory), naming what to call instead, and the model
   runs on as it was, across processes. */
static void test_to_cpu_refused(void) {
    pf_model *m = load_split("gpt2-tiny", 1);
    if (!m) return;
    pf_result r = pf_to_cpu(m);
    CHECK_MSG(r == PF_ERROR_UNSUPPORTED && strstr(pf_error_message(m), "without across_processes"),
              "process %d: pf_to_cpu across processes gives %d, \"%s\"", process, (int)r, pf_error_message(m));
    int32_t ids[4] = {1, 2, 3, 4};
    float *logits = (float *)malloc(4 * (size_t)pf_get_info(m).vocab_size * sizeof(float));
    r = pf_forward(m, ids, 1, 4, logits);
    CHECK_MSG(r == PF_OK && pf_num_ranks(m) == local_ranks, "process %d: the request after pf_to_cpu was refused: %s",
              process, pf_error_message(m));
    free(logits);
    pf_free(m);
}

/* --driven, process 0: pf_follow is the other processes' call. */
static void test_driver_cannot_follow(void) {
    pf_model *m = load_split("gpt2-tiny", 1);
    if (!m) return;
    pf_result r = pf_follow(m);
    CHECK_MSG(r == PF_ERROR_INVALID_ARGUMENT && strstr(pf_error_message(m), "process 0 drives"),
              "pf_follow on process 0 gives %d, \"%s\"", (int)r, pf_error_message(m));
    pf_free(m); /* the followers, following it, return */
}

/* --driven: the last follower cannot take part in process 0's first request (a step it fails to
   set up), and the last world rank (a follower's) fails its fourth matmul of the second: each fails
   on process 0 with the follower's message, none waits forever, and the next one succeeds. */
static void test_driven_rank_failure(void) {
    if (process) {
        if (process == processes - 1)
            pf_testing_follower_refuses = 1, pf_testing_fail_rank = world - 1, pf_testing_fail_countdown = 4;
        follow_fixture("gpt2-tiny");
        pf_testing_fail_rank = -1;
        return;
    }
    pf_model *m = load_split("gpt2-tiny", 1);
    if (!m) return;
    int32_t ids[4] = {1, 2, 3, 4};
    float *logits = (float *)malloc(4 * (size_t)pf_get_info(m).vocab_size * sizeof(float));
    pf_result r = pf_forward(m, ids, 1, 4, logits);
    char want[64];
    snprintf(want, sizeof want, "process %d: injected follower failure", processes - 1);
    CHECK_MSG(r == PF_ERROR_OUT_OF_MEMORY && strstr(pf_error_message(m), want),
              "a follower failing a step gives %d, \"%s\" (want \"%s\")", (int)r, pf_error_message(m), want);
    r = pf_forward(m, ids, 1, 4, logits);
    snprintf(want, sizeof want, "process %d: rank %d", processes - 1, world - 1);
    CHECK_MSG(r == PF_ERROR_DEVICE && strstr(pf_error_message(m), want) && strstr(pf_error_message(m), "injected failure"),
              "a follower's failing rank gives %d, \"%s\" (want \"%s ... injected failure\")", (int)r,
              pf_error_message(m), want);
    r = pf_forward(m, ids, 1, 4, logits);
    CHECK_MSG(r == PF_OK, "the request after a follower's failure: %s", pf_error_message(m));
    free(logits);
    pf_free(m);
}

/* --stages: an encoder and an encoder-decoder refused with a message on every process that asks
   (only decoders' layers split into stages), before any MPI. */
static void test_stages_refused(void) {
    const char *names[2] = {"bert", "t5-s2s"};
    for (int i = 0; i < 2; i++) {
        char dir[1024];
        snprintf(dir, sizeof dir, "%s/%s", test_fixtures, names[i]);
        pf_model *m = NULL;
        pf_result r = pf_load(dir, NULL, &m);
        CHECK_MSG(r == PF_OK, "loading %s: %s", names[i], pf_error_message(m));
        pf_parallel_options o = pf_parallel_options_init();
        o.device = PF_DEVICE_CPU;
        o.across_processes = 1;
        o.pipeline_stages = stages;
        if (!r) r = pf_parallelize(m, local_ranks, &o);
        CHECK_MSG(r == PF_ERROR_UNSUPPORTED && strstr(pf_error_message(m), "not a decoder"),
                  "%s in %d stages gives %d, \"%s\"", names[i], stages, (int)r, pf_error_message(m));
        pf_free(m);
    }
}

/* --stages --driven: requests from several threads of process 0 at once (prompts of their own
   lengths; greedy, or seeded sampling of one or two sequences; some streamed, a callback stopping
   one early), whose decode steps run as micro-batches: groups of requests in different stages in
   the same job. Each must get the tokens it gets alone from one process with a stage's ranks, bit
   for bit. A round of as many requests at once, long enough that the groups fill the stages, must
   have run two or more stages at once (pf_testing_stages_overlapped), else the test proves nothing. */
#define MICRO_WORKERS 5
#define MICRO_CALLS 4
typedef struct micro_worker {
    pf_model *model;
    int index, round, failures;
    int32_t results[MICRO_CALLS][48];
    int lengths[MICRO_CALLS];
    pf_result errors[MICRO_CALLS];
    char message[256]; /* the first failure's */
} micro_worker;

static int stop_after_four(void *user, int row, int32_t token, const char *text, size_t text_len) {
    (void)row, (void)token, (void)text, (void)text_len;
    return ++*(int *)user >= 4;
}

/* Call `call` of worker w: in round 0 short and varied (admissions while others run), in round 1
   all long (the groups run without admissions once all arrived). */
static void micro_call(int w, int call, int round, int32_t *prompt, int *prompt_len, pf_generate_options *o, int *streamed) {
    *prompt_len = 2 + (w * 3 + call * 5) % 9;
    for (int i = 0; i < *prompt_len; i++) prompt[i] = (int32_t)(17 + w * 31 + call * 7 + i * 13) % 250;
    *o = pf_generate_options_init();
    o->max_new_tokens = round ? 12 + w : 3 + (w + call) % 8;
    o->ignore_eos = 1;
    o->do_sample = (w + call) % 2;
    o->temperature = 1.3f;
    o->seed = (uint64_t)(w * 100 + call + 1000 * round);
    o->num_return_sequences = o->do_sample && call % 3 == 0 ? 2 : 1;
    *streamed = 0;
    if (!round && w == 1 && o->num_return_sequences == 1) { /* a stream whose callback stops it after 4 tokens */
        o->stream = stop_after_four;
        o->stream_user = streamed;
    }
}

static void *micro_worker_main(void *arg) {
    micro_worker *w = (micro_worker *)arg;
    for (int call = 0; call < (w->round ? 1 : MICRO_CALLS); call++) {
        int32_t prompt[16];
        int len, streamed;
        pf_generate_options o;
        micro_call(w->index, call, w->round, prompt, &len, &o, &streamed);
        w->errors[call] = pf_generate(w->model, prompt, len, &o, w->results[call], 48, &w->lengths[call]);
        if (w->errors[call] && !w->failures++) snprintf(w->message, sizeof w->message, "%s", pf_error_message(w->model));
    }
    return NULL;
}

/* A round of requests on `across` from MICRO_WORKERS threads at once, each request that succeeded
   compared with the same request on `alone`. With fail_rank >= 0, once micro-batches run, the last
   process's rank fail_rank fails its next matmul (pf_testing_follower_fail). */
static void micro_round(pf_model *across, pf_model *alone, int round, int fail_rank, int *failures, int *mismatches,
                        char *message, size_t message_size) {
    static micro_worker workers[MICRO_WORKERS];
    pthread_t threads[MICRO_WORKERS];
    int overlapped = __atomic_load_n(&pf_testing_stages_overlapped, __ATOMIC_RELAXED);
    for (int i = 0; i < MICRO_WORKERS; i++) {
        memset(&workers[i], 0, sizeof workers[i]);
        workers[i].model = across, workers[i].index = i, workers[i].round = round;
        pthread_create(&threads[i], NULL, micro_worker_main, &workers[i]);
    }
    for (int waited = 0; fail_rank >= 0 && waited < 20000; waited++) { /* up to 20 s for the micro-batches */
        if (__atomic_load_n(&pf_testing_stages_overlapped, __ATOMIC_RELAXED) > overlapped) {
            pf_testing_follower_fail[1] = fail_rank, pf_testing_follower_fail[2] = 1;
            __atomic_store_n(&pf_testing_follower_fail[0], processes - 1, __ATOMIC_RELEASE);
            break;
        }
        struct timespec ms = {0, 1000000};
        nanosleep(&ms, NULL);
    }
    for (int i = 0; i < MICRO_WORKERS; i++) pthread_join(threads[i], NULL);
    *failures = 0, *mismatches = 0, message[0] = 0;
    for (int i = 0; i < MICRO_WORKERS; i++) {
        *failures += workers[i].failures;
        if (workers[i].failures && !message[0]) snprintf(message, message_size, "%s", workers[i].message);
        for (int call = 0; call < (round ? 1 : MICRO_CALLS); call++) {
            int32_t prompt[16], out[48];
            int len, n = 0, streamed;
            pf_generate_options o;
            if (workers[i].errors[call]) continue;
            micro_call(i, call, round, prompt, &len, &o, &streamed);
            pf_result r = pf_generate(alone, prompt, len, &o, out, 48, &n);
            *mismatches += r != PF_OK || n != workers[i].lengths[call] || memcmp(out, workers[i].results[call], (size_t)n * 4);
        }
    }
}

/* Rounds 0 and 1, then round 1 with the last stage's rank failing a step of micro-batches: the
   requests it ran fail with its message on process 0, the hidden states in the stages are dropped,
   and round 1 again runs as micro-batches with every token right (a state left in flight would be
   taken for the next group's). */
static void test_micro_batches(const char *name) {
    pf_model *across = load_split(name, 1), *alone = load_split(name, 0);
    static const int rounds[4] = {0, 1, 1, 1};
    for (int k = 0; across && alone && k < 4; k++) {
        int failures, mismatches, failing = k == 2;
        int overlapped = __atomic_load_n(&pf_testing_stages_overlapped, __ATOMIC_RELAXED);
        char message[256];
        micro_round(across, alone, rounds[k], failing ? tp_ranks - 1 : -1, &failures, &mismatches, message, sizeof message);
        if (failing)
            CHECK_MSG(failures > 0 && strstr(message, "injected failure"),
                      "%s: a rank failing in micro-batches fails %d requests (\"%s\")", name, failures, message);
        else
            CHECK_MSG(failures == 0, "%s, round %d: %d concurrent requests in %d stages failed (%s)", name, k, failures,
                      stages, message);
        CHECK_MSG(mismatches == 0, "%s, round %d: %d concurrent requests in %d stages differ from the same request "
                  "alone in one process", name, k, mismatches, stages);
        if (k == 1 || k == 3)
            CHECK_MSG(__atomic_load_n(&pf_testing_stages_overlapped, __ATOMIC_RELAXED) > overlapped,
                      "%s, round %d: no job ran micro-batches in two stages at once", name, k);
    }
    pf_free(across);
    pf_free(alone);
}

/* A follower's side of test_micro_batches: the injected failure is process 0's to set. */
static void follow_micro_batches(const char *name) {
    follow_fixture(name);
    pf_testing_fail_rank = -1;
}

/* --stages, SPMD: the last process's last rank (in the last stage) fails a matmul: the request fails
   on every process, the first stage's too, with its message; then the next request succeeds. And
   processes that make different calls (different prompt lengths: the hidden states sent between
   stages differ in size) fail with a message instead of waiting. */
static void test_stage_failure(void) {
    pf_model *m = load_split("gpt2-hub", 1);
    if (!m) return;
    int32_t ids[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    float *logits = (float *)malloc(8 * (size_t)pf_get_info(m).vocab_size * sizeof(float));
    int last_tp = tp_ranks - 1; /* the failing rank's index in its stage */
    for (int countdown = 1; countdown <= 4; countdown += 3) { /* gpt2-hub's last stage: 5 products or more */
        if (process == processes - 1) pf_testing_fail_rank = last_tp, pf_testing_fail_countdown = countdown;
        pf_result r = pf_forward(m, ids, 1, 4, logits);
        pf_testing_fail_rank = -1;
        char want[64];
        snprintf(want, sizeof want, "process %d: rank %d", processes - 1, last_tp);
        CHECK_MSG(r == PF_ERROR_DEVICE && strstr(pf_error_message(m), want) && strstr(pf_error_message(m), "injected failure"),
                  "process %d: a failing rank in the last stage gives %d, \"%s\" (want \"%s ... injected failure\")",
                  process, (int)r, pf_error_message(m), want);
        r = pf_forward(m, ids, 1, 4, logits);
        CHECK_MSG(r == PF_OK, "process %d: the request after a failure: %s", process, pf_error_message(m));
    }
    pf_result r = pf_forward(m, ids, 1, 3 + process, logits); /* every process a different length */
    CHECK_MSG(r == PF_ERROR_INVALID_ARGUMENT && strstr(pf_error_message(m), "same calls"),
              "process %d: different requests in stages give %d, \"%s\"", process, (int)r, pf_error_message(m));
    r = pf_forward(m, ids, 1, 4, logits);
    CHECK_MSG(r == PF_OK, "process %d: the request after different ones: %s", process, pf_error_message(m));
    free(logits);
    pf_free(m);
}

/* The last world rank fails a matmul: every process's request fails with its message, none waits
   forever, and the group serves the next request. */
static void test_rank_failure(void) {
    pf_model *m = load_split("gpt2-tiny", 1);
    if (!m) return;
    int32_t ids[4] = {1, 2, 3, 4};
    size_t vocab = (size_t)pf_get_info(m).vocab_size;
    float *logits = (float *)malloc(4 * vocab * sizeof(float));
    for (int countdown = 1; countdown <= 7; countdown += 3) { /* the first matmul, and some later */
        pf_testing_fail_rank = world - 1;
        pf_testing_fail_countdown = countdown;
        pf_result r = pf_forward(m, ids, 1, 4, logits);
        pf_testing_fail_rank = -1;
        const char *message = pf_error_message(m);
        char want[64];
        snprintf(want, sizeof want, "process %d: rank %d", processes - 1, world - 1);
        CHECK_MSG(r == PF_ERROR_DEVICE && strstr(message, want) && strstr(message, "injected failure"),
                  "process %d: a failing rank gives %d, \"%s\" (want \"%s ... injected failure\")", process, (int)r, message,
                  want);
        r = pf_forward(m, ids, 1, 4, logits);
        CHECK_MSG(r == PF_OK, "process %d: the request after a failure: %s", process, pf_error_message(m));
    }
    free(logits);
    pf_free(m);
}

/* Processes that make different calls (a bad program): each request fails with a message on every
   process instead of waiting forever, and the next one, made alike, succeeds. */
static void test_different_requests(void) {
    pf_model *m = load_split("gpt2-tiny", 1);
    if (!m) return;
    int32_t ids[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    size_t vocab = (size_t)pf_get_info(m).vocab_size;
    float *logits = (float *)malloc(8 * vocab * sizeof(float));
    pf_result r = pf_forward(m, ids, 1, 3 + process, logits); /* every process a different length */
    CHECK_MSG(r == PF_ERROR_INVALID_ARGUMENT && strstr(pf_error_message(m), "same calls"),
              "process %d: different requests give %d, \"%s\"", process, (int)r, pf_error_message(m));
    r = pf_forward(m, ids, 1, 4, logits);
    CHECK_MSG(r == PF_OK, "process %d: the request after different ones: %s", process, pf_error_message(m));
    free(logits);
    pf_free(m);
}

/* Processes that ask for different rank counts: refused on every process, naming the counts. */
static void test_different_rank_counts(void) {
    char dir[1024];
    snprintf(dir, sizeof dir, "%s/gpt2-tiny", test_fixtures);
    pf_model *m = NULL;
    if (pf_load(dir, NULL, &m) != PF_OK) {
        CHECK_MSG(0, "loading gpt2-tiny: %s", pf_error_message(m));
        pf_free(m);
        return;
    }
    pf_parallel_options o = pf_parallel_options_init();
    o.device = PF_DEVICE_CPU;
    o.across_processes = 1;
    pf_result r = pf_parallelize(m, process == 0 ? 2 : 1, &o);
    CHECK_MSG(r == PF_ERROR_INVALID_ARGUMENT && strstr(pf_error_message(m), "same number"),
              "process %d: different rank counts give %d, \"%s\"", process, (int)r, pf_error_message(m));
    pf_free(m);
}

/* --cuda: the last world rank fails a matmul. Its process aborts its NCCL communicators, the other
   processes' ranks see NCCL's remote error instead of waiting for it, and every process's request
   fails with the failing rank's message (the others' failures are its consequence). The
   communicators are gone: the next request fails on every process asking for pf_parallelize, which
   makes new ones, and the request after it succeeds. */
static void test_cuda_rank_failure(void) {
    pf_model *m = load_split("gpt2-tiny", 1);
    if (!m) return;
    int32_t ids[4] = {1, 2, 3, 4};
    float *logits = (float *)malloc(4 * (size_t)pf_get_info(m).vocab_size * sizeof(float));
    for (int countdown = 1; countdown <= 4; countdown += 3) { /* the first matmul, and a later one */
        pf_testing_fail_rank = process == processes - 1 ? world - 1 : -1;
        pf_testing_fail_countdown = countdown;
        pf_result r = pf_forward(m, ids, 1, 4, logits);
        pf_testing_fail_rank = -1;
        char want[64];
        snprintf(want, sizeof want, "process %d: rank %d", processes - 1, world - 1);
        CHECK_MSG(r == PF_ERROR_DEVICE && strstr(pf_error_message(m), want) && strstr(pf_error_message(m), "injected failure"),
                  "process %d: a failing CUDA rank gives %d, \"%s\" (want \"%s ... injected failure\")", process, (int)r,
                  pf_error_message(m), want);
        r = pf_forward(m, ids, 1, 4, logits);
        CHECK_MSG(r == PF_ERROR_DEVICE && strstr(pf_error_message(m), "pf_parallelize again"),
                  "process %d: the request after a CUDA rank failed gives %d, \"%s\"", process, (int)r, pf_error_message(m));
        pf_parallel_options o = pf_parallel_options_init();
        o.device = PF_DEVICE_CUDA;
        o.dtype = PF_DTYPE_F32;
        o.across_processes = 1;
        r = pf_parallelize(m, local_ranks, &o);
        CHECK_MSG(r == PF_OK, "process %d: pf_parallelize after a CUDA rank failed: %s", process, pf_error_message(m));
        if (!r) r = pf_forward(m, ids, 1, 4, logits);
        CHECK_MSG(r == PF_OK, "process %d: the request on new communicators: %s", process, pf_error_message(m));
    }
    free(logits);
    pf_free(m);
}

/* --cuda: what CUDA ranks across processes refuse, on every process alike: pipeline stages (before
   any MPI), and, with 2 ranks a process, two of a process's ranks on one GPU (NCCL joins the
   processes and refuses that; every process agrees on the failure, so none waits). The model then
   parallelizes across processes as usual. */
static void test_cuda_refusals(void) {
    char dir[1024];
    snprintf(dir, sizeof dir, "%s/gpt2-tiny", test_fixtures);
    pf_model *m = NULL;
    pf_result r = pf_load(dir, NULL, &m);
    CHECK_MSG(r == PF_OK, "loading gpt2-tiny: %s", pf_error_message(m));
    pf_parallel_options o = pf_parallel_options_init();
    o.device = PF_DEVICE_CUDA;
    o.dtype = PF_DTYPE_F32;
    o.across_processes = 1;
    o.pipeline_stages = processes;
    if (!r) r = pf_parallelize(m, local_ranks, &o);
    CHECK_MSG(r == PF_ERROR_UNSUPPORTED && strstr(pf_error_message(m), "pipeline_stages run CPU ranks only"),
              "process %d: CUDA ranks in pipeline stages give %d, \"%s\"", process, (int)r, pf_error_message(m));
    o.pipeline_stages = 0;
    if (local_ranks == 2) {
        int shared[2] = {0, 0};
        o.device_ids = shared;
        o.num_device_ids = 2;
        r = pf_parallelize(m, local_ranks, &o);
        CHECK_MSG(r == PF_ERROR_INVALID_ARGUMENT && strstr(pf_error_message(m), "share GPUs"),
                  "process %d: CUDA ranks sharing a GPU across processes give %d, \"%s\"", process, (int)r,
                  pf_error_message(m));
        o.device_ids = NULL;
        o.num_device_ids = 0;
    }
    r = pf_parallelize(m, local_ranks, &o);
    CHECK_MSG(r == PF_OK, "process %d: pf_parallelize after the refusals: %s", process, pf_error_message(m));
    pf_free(m);
}

/* test/test_mpi_kill.sh: a long generation loop (--driven: on process 0, the others following);
   the last process gets `signal` after ms (SIGKILL: it dies; SIGSTOP: it stops answering, as a
   process whose host drops off). A survivor whose request fails prints the library's message (the
   script checks that it names the lost process), frees the model (which must not wait on it), gives
   the other survivors time to fail and print too, then ends the job. */
static void run_until_signalled(int ms, int signal) {
    if (process == processes - 1) {
        struct timespec wait = {ms / 1000, (long)(ms % 1000) * 1000000L};
        pid_t child = fork(); /* a helper that signals this process mid-request */
        if (child == 0) {
            pid_t parent = getppid();
            nanosleep(&wait, NULL);
            kill(parent, signal);
            _exit(0);
        }
    }
    pf_model *m = load_split("gpt2-tiny", 1);
    if (!m) return;
    pf_result r = PF_OK;
    const char *call = "pf_follow";
    if (driven && process) {
        r = pf_follow(m);
    } else {
        int32_t prompt[2] = {1, 2}, out[64];
        pf_generate_options o = pf_generate_options_init();
        o.max_new_tokens = 48;
        call = "pf_generate";
        for (int i = 0; i < 100000 && !r; i++) {
            int n = 0;
            r = pf_generate(m, prompt, 2, &o, out, 64, &n);
        }
    }
    if (r) printf("process %d: %s failed: %s\n", process, call, pf_error_message(m));
    else printf("process %d: %s returned\n", process, call);
    fflush(stdout);
    pf_free(m);
    if (r) {
        struct timespec others = {2, 0};
        nanosleep(&others, NULL);
        MPI_Abort(MPI_COMM_WORLD, 3);
    }
}

int main(int argc, char **argv) {
    int provided = 0;
    for (int i = 3; i < argc; i++) cuda |= !strcmp(argv[i], "--cuda");
    /* the stand-in's NCCL over MPI calls MPI from its rank threads; the library needs SERIALIZED */
    int level = cuda ? MPI_THREAD_MULTIPLE : MPI_THREAD_SERIALIZED;
    MPI_Init_thread(&argc, &argv, level, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &process);
    MPI_Comm_size(MPI_COMM_WORLD, &processes);
    if (argc < 3) {
        if (!process) fprintf(stderr, "usage: mpirun -np P %s FIXTURES LOCAL_RANKS [--kill-after-ms MS [--stop]]\n", argv[0]);
        MPI_Finalize();
        return 2;
    }
    test_fixtures = argv[1];
    local_ranks = atoi(argv[2]);
    world = processes * local_ranks;
    int kill_after_ms = -1, signal = SIGKILL;
    for (int i = 3; i < argc; i++) {
        if (!strcmp(argv[i], "--driven")) driven = 1;
        else if (!strcmp(argv[i], "--stages") && i + 1 < argc) stages = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--kill-after-ms") && i + 1 < argc) kill_after_ms = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--stop")) signal = SIGSTOP;
        else if (!strcmp(argv[i], "--timeout-ms") && i + 1 < argc) process_timeout_ms = atoi(argv[++i]);
    }
    tp_ranks = world / stages;
    if (provided < level) {
        if (!process) fprintf(stderr, "test_mpi: MPI gives thread level %d, %d needed\n", provided, level);
        MPI_Finalize();
        return 2;
    }
    if (kill_after_ms >= 0) {
        run_until_signalled(kill_after_ms, signal);
        MPI_Finalize();
        return 0;
    }
    test_register_fixture_policies();
    if (cuda) { /* SPMD, one stage: a decoder (its generation cases too) and an encoder, then a rank failing */
        test_decoder("gpt2-tiny", 1);
        test_decoder("llama", 0); /* grouped-query heads, rotary */
        test_encoder("bert", "hidden.bin");
        test_cuda_refusals();
        test_cuda_rank_failure();
        int counts[2] = {test_passed, test_failed}, totals[2] = {0, 0};
        MPI_Reduce(counts, totals, 2, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
        MPI_Bcast(totals, 2, MPI_INT, 0, MPI_COMM_WORLD);
        if (!process)
            printf("test_mpi --cuda (stand-in), %d processes x %d CUDA ranks: %d passed, %d failed\n", processes,
                   local_ranks, totals[0], totals[1]);
        MPI_Finalize();
        return totals[1] ? 1 : 0;
    }
    if (stages > 1) { /* decoders' layers in stages; the other kinds refused */
        if (!driven || !process) test_stages_refused();
#define RUN(name, call) (driven && process ? follow_fixture(name) : call)
        if (stages <= 2) { /* 2-layer fixtures */
            RUN("gpt2-tiny", test_decoder("gpt2-tiny", 1));
            RUN("llama", test_decoder("llama", 0));
            RUN("mixtral", test_decoder("mixtral", 0));
        }
        RUN("gpt2-hub", test_decoder("gpt2-hub", 1)); /* 3 layers, with generation cases (beams: cache reorders) */
        RUN("qwen3_moe", test_decoder("qwen3_moe", 0));
        RUN("gemma2", test_decoder("gemma2", 0)); /* sliding windows, softcaps */
        RUN("deepseek_v3-moe", test_decoder("deepseek_v3-moe", 0)); /* latent attention, dense then MoE layers */
        /* prompts past the scratch: their chunks through the stages in one job (each stage on the
           next chunk while the later stages work on this one), against one process's job a chunk */
        prefill_chunk = 3;
        RUN("gpt2-hub", test_decoder("gpt2-hub", 0));
        RUN("qwen3_moe", test_decoder("qwen3_moe", 0));
        prefill_chunk = 0;
        if (driven) { /* concurrent requests: their decode steps as micro-batches through the stages */
            for (int i = 0; i < 2; i++) {
                const char *name = i ? "qwen3_moe" : "gpt2-hub";
                if (process) follow_micro_batches(name);
                else test_micro_batches(name);
            }
        }
#undef RUN
        if (!driven) test_stage_failure();
        int counts[2] = {test_passed, test_failed}, totals[2] = {0, 0};
        MPI_Reduce(counts, totals, 2, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
        MPI_Bcast(totals, 2, MPI_INT, 0, MPI_COMM_WORLD);
        if (!process)
            printf("test_mpi, %d processes x %d ranks in %d pipeline stages%s: %d passed, %d failed\n", processes,
                   local_ranks, stages, driven ? ", process 0 driving" : "", totals[0], totals[1]);
        MPI_Finalize();
        return totals[1] ? 1 : 0;
    }
    /* driven: process 0 runs the case, the others follow its model across processes */
#define RUN(name, call) (driven && process ? follow_fixture(name) : call)
    RUN("gpt2-tiny", test_decoder("gpt2-tiny", 1)); /* with its generation cases: greedy, beams, sampling */
    RUN("llama", test_decoder("llama", 0));
    RUN("qwen3", test_decoder("qwen3", 0));
    RUN("qwen3_moe", test_decoder("qwen3_moe", 0)); /* mixtures of experts: experts split over the world */
    RUN("olmoe", test_decoder("olmoe", 0));
    RUN("mixtral", test_decoder("mixtral", 0));
    RUN("bert", test_encoder("bert", "hidden.bin"));
    RUN("bert-mlm", test_encoder("bert-mlm", NULL));
    RUN("bert-cls", test_encoder("bert-cls", NULL));
    RUN("layoutlm", test_encoder("layoutlm", NULL)); /* a step's box rows (all zero from pf_encode) */
    RUN("longformer-qa", test_encoder("longformer-qa", "hidden.bin")); /* the question's global tokens */
    RUN("tapas-qa", test_encoder("tapas-qa", "hidden.bin")); /* a step's table rows (positions and types 1 .. 6) */
    RUN("visual-bert-vqa", test_encoder("visual-bert-vqa", "hidden.bin")); /* a step's regions and their counts */
    RUN("lxmert-vqa", test_encoder("lxmert-vqa", "hidden.bin")); /* a step's regions with their boxes */
    RUN("bart-s2s", test_encoder_decoder("bart-s2s"));
    RUN("t5-s2s", test_encoder_decoder("t5-s2s"));
    RUN("gpt2-tiny", test_to_cpu_refused());
#undef RUN
    if (driven) {
        if (process) follow_fixture("gpt2-tiny");
        else test_driver_cannot_follow();
        test_driven_rank_failure();
    } else {
        test_rank_failure();
        test_different_requests();
        test_different_rank_counts();
    }
    int counts[2] = {test_passed, test_failed}, totals[2] = {0, 0};
    MPI_Reduce(counts, totals, 2, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
    MPI_Bcast(totals, 2, MPI_INT, 0, MPI_COMM_WORLD);
    if (!process)
        printf("test_mpi, %d processes x %d ranks: %d passed, %d failed\n", processes, local_ranks, totals[0], totals[1]);
    MPI_Finalize();
    return totals[1] ? 1 : 0;
}
