#include "internal.h"
/* =============================================================================================== */
/* ranks in several processes (MPI builds): the world, the ranks' buffers exchanged, jobs ended   */
/* =============================================================================================== */

/* A group across processes (pf_parallel_options.across_processes, built with PF_MPI) runs SPMD:
   every process of MPI_COMM_WORLD makes the same calls with the same arguments, and holds the same
   number of rank threads; process p's ranks are world ranks p x num_ranks on. One thread of a
   process talks to the others at a time (its rank 0 inside a job, the caller between jobs), so
   MPI_THREAD_SERIALIZED is enough: rank threads calling MPI at once (MPI_THREAD_MULTIPLE) would
   send the same bytes with a lock per call, and Open MPI's support for it is a build option.

   Inside a job the processes talk point to point, never through a collective, so that a process
   whose ranks fail can stop at any point: it sends END (its verdict) where the others expect its
   DATA, and as one process's messages to another arrive in order, every process waiting on it
   sees END, fails its own ranks, and ends the job too. Each process then receives every other's
   END (draining DATA sent before it), so no message outlives the job, and all of them return the
   same error: the first failing process's. Between jobs, after all agreed, outputs are broadcast.

   With process_0_drives, process 0 alone makes the calls: before each job it sends every other
   process a CALL (the job's kind, sizes and input arrays), and they, in pf_follow, run that job as
   if their program had made the call, into output arrays of their own. The host code around the
   jobs (sampling, beams, batching, tokenizing, callbacks) runs on process 0 alone, which is why the
   job, not the public call, is what is sent: a stream callback's or a sampler's decision is made
   once, and every entry that runs the ranks works without a message of its own. QUIT (a CALL of
   kind PF__JOB_QUIT) ends following when process 0's group ends. */

#ifdef PF_TESTING
/* Test hook: nonzero makes a follower's next step fail before its ranks start (as when it has no
   memory for the step's outputs); reset once used. */
int pf_testing_follower_refuses = 0;
/* Test hook, on process 0 of a driven group: {process, rank, countdown} with process > 0 sets
   that follower's pf_testing_fail_rank and pf_testing_fail_countdown with the next step it gets
   (a failure at a point process 0 chooses, e.g. once micro-batches run); reset once sent. */
int pf_testing_follower_fail[3] = {0, -1, 0};
#endif

#ifdef PF_MPI
#include <mpi.h>

enum { PF__TAG_DATA = 1, PF__TAG_END = 2, PF__TAG_CALL = 3, PF__TAG_OUTPUTS = 4, PF__TAG_LOST = 5 };

/* A job as process 0 sends it to its followers (process_0_drives): the kind and sizes, which of
   the job's host arrays it has (present: a bit each, inputs then outputs), then the input arrays
   in PF__CALL_INPUTS's order, each from an 8-byte boundary. Outputs are not sent: a follower
   writes its ranks' share of them into room of its own. */
typedef struct pf__mpi_call {
    int kind; /* pf__job_kind; PF__JOB_QUIT: process 0's group ended */
    int batch, seq_len, past, cross_len, segment_before;
    int all_positions, encoder_pass, reorder_count, reorder_cross;
    int chunk_positions;
    int check_device_choices; /* test builds: process 0's pf_testing_check_device_choices */
    int fail_process, fail_rank, fail_countdown; /* test builds: pf_testing_follower_fail, once */
    unsigned present;
    uint64_t candidates_per_row;
} pf__mpi_call;

#define PF__CALL_INPUTS(X)                                                                                           \
    X(0, step.ids, const int32_t *) X(1, step.inv_freq, const float *) X(2, step.pad, const int *)                    \
    X(3, step.type_ids, const int32_t *) X(4, step.cross_pad, const int *) X(5, step.features, const float *)         \
    X(6, step.patches, const float *) X(7, step.cache_rows, const int *) X(8, pool_at, const int *)                   \
    X(9, reorder_dst, const int *) X(10, reorder_src, const int *) X(11, step.box_rows, const int32_t *)               \
    X(12, step.global_tokens, const int32_t *) X(13, step.regions, const float *) X(14, step.num_regions, const int *) \
    X(15, stage_rows, const int *) X(16, step.table_rows, const int32_t *)
#define PF__CALL_NUM_INPUTS 17
#define PF__CALL_OUTPUT_FIELDS(X)                                                                                    \
    X(0, logits, float *) X(1, hidden, float *) X(2, pooled, float *) X(3, embeds, float *) X(4, tokens, int32_t *)   \
    X(5, candidates, pf__choice *)
#define PF__CALL_OUTPUTS 6

/* The bytes of each host array of a call's job: the inputs exactly, the outputs at most (what any
   head's ranks may write for those sizes). */
static void pf__call_sizes(const pf__group *g, const pf__mpi_call *c, size_t in[PF__CALL_NUM_INPUTS],
                           size_t out[PF__CALL_OUTPUTS]) {
    const pf_model *m = g->model;
    const pf__config *cf = &m->config;
    size_t B = (size_t)c->batch, S = (size_t)c->seq_len, N = B * S, d = (size_t)cf->hidden_size;
    /* a step in chunks (pipeline stages) writes each row's last logits, or a single row's every one */
    size_t rows = c->chunk_positions && !c->all_positions ? B : N > B ? N : B;
    size_t prefix = 1 + (size_t)cf->distillation, patches = S > prefix ? S - prefix : 0;
    size_t i4 = sizeof(int32_t), f = sizeof(float), count = (size_t)c->reorder_count;
    size_t widest = (size_t)cf->vocab_size;
    if ((size_t)cf->num_labels > widest) widest = (size_t)cf->num_labels;
    if (widest < 2) widest = 2;
    size_t sizes_in[PF__CALL_NUM_INPUTS] = {N * i4, pf__rope_floats(cf) * f, B * sizeof(int), N * i4, B * sizeof(int),
                                            N * d * f, B * patches * m->sources[PF__SLOT_PATCH_WEIGHT].cols * f,
                                            B * sizeof(int), B * sizeof(int), count * sizeof(int), count * sizeof(int),
                                            PF__BOX_LOOKUPS * N * i4, N * i4, N * (size_t)pf__region_floats(cf) * f,
                                            B * sizeof(int), (size_t)g->stages * 2 * sizeof(int),
                                            PF__TABLE_TYPES * N * i4};
    size_t sizes_out[PF__CALL_OUTPUTS] = {rows * widest * f, rows * d * f, B * d * f, B * (size_t)cf->projection_dim * f,
                                          rows * i4, (size_t)g->world_ranks * rows * c->candidates_per_row * sizeof(pf__choice)};
    memcpy(in, sizes_in, sizeof sizes_in);
    memcpy(out, sizes_out, sizeof sizes_out);
}

#define PF__ALIGN8(n) (((n) + 7) & ~(size_t)7)

/* A process's last message of a job. */
typedef struct pf__mpi_verdict {
    int code;       /* pf_result */
    int propagated; /* it failed because another process did */
    int lost;       /* a process it gave up on (the group is lost: pf__mpi_lose), or -1 */
    unsigned long long stage_sent; /* hidden states it sent the next stage across jobs so far */
    int micro_batches; /* the job was a step of micro-batches (job.stage_rows) */
    char message[PF__MESSAGE_SIZE];
} pf__mpi_verdict;

/* pf_parallel_options.process_timeout_ms when it is 0 */
#define PF__PROCESS_TIMEOUT_MS 30000

/* How many timeouts each wait allows. A process that waits on another that itself waits on a lost
   one must wait longer, so that the one it waits on gives the lost one up first and names it to
   everyone (pf__mpi_lose's notice): inside a job the processes wait on peers at the same point; at
   a job's end on every process's verdict (peers may still be inside the job, waiting); for the
   outputs on a process that may still be at the job's end. */
enum { PF__PATIENCE_IN_JOB = 1, PF__PATIENCE_JOB_END = 2, PF__PATIENCE_OUTPUTS = 3 };

struct pf__mpi {
    MPI_Comm comm;                /* a duplicate of MPI_COMM_WORLD: the library's messages alone */
    int process, processes;
    float *gathered;              /* [world_ranks][count]: the other processes' ranks' buffers */
    size_t gathered_floats;
    const float **world_in;       /* [world_ranks]: every rank's buffer, in world rank order */
    MPI_Request *requests;        /* [processes x num_ranks] */
    int *request_peer;            /* [processes x num_ranks]: the other process of each request */
    pf__mpi_verdict *verdicts;    /* [processes]: this job's ENDs */
    unsigned char *ended;         /* [processes]: END already received in this job */
    int peer_failed;              /* this process failed because another did */
    char *drain;                  /* room for DATA that arrives after a failure */
    size_t drain_bytes;
    int stage_processes;          /* processes in each pipeline stage (all of them with one stage) */
    int stage_first_process;      /* this process's stage's first */
    int last_stage_first_process; /* the last stage's first: the outputs' roots */
    /* Micro-batches (job.stage_rows): a hidden state sent to the next stage in one job and received
       there in the next, on a communicator of its own, which the job's end does not drain. A
       failed job drops those in flight (pf__mpi_drop_stage_states). */
    MPI_Comm stage_comm;
    float *stage_out;             /* the last one sent, until it is received */
    size_t stage_out_floats;
    MPI_Request stage_request;    /* its send; MPI_REQUEST_NULL when none waits */
    unsigned long long stage_sent, stage_received; /* so far, to the next stage and from the one before */
    int process_0_drives;         /* asked (every process alike) */
    int driven;                   /* process_0_drives, once the group is set up: CALLs flow */
    int following;                /* a follower inside pf_follow */
    char *call;                   /* the last CALL sent or received */
    size_t call_bytes;
    void *outputs[PF__CALL_OUTPUTS]; /* a follower's room for a job's host outputs */
    size_t output_bytes[PF__CALL_OUTPUTS];
    double timeout_s;             /* the longest wait on another process in a job; 0: none */
    int bounded;                  /* this job's waits end after timeout_s (every job's but the setup's) */
    int lost;                     /* a process given up on (pf__mpi_lose), or -1 */
    char lost_message[PF__MESSAGE_SIZE]; /* why, naming it: every later call's error */
    pf__mpi_verdict lost_notice;  /* what this process told the others when it gave one up */
};

/* An MPI call's failure as a message; 0 when it succeeded. */
static int pf__mpi_failed(int status, char *error, size_t size, const char *what) {
    if (status == MPI_SUCCESS) return 0;
    char text[MPI_MAX_ERROR_STRING];
    int length = 0;
    if (MPI_Error_string(status, text, &length) != MPI_SUCCESS) snprintf(text, sizeof text, "error %d", status);
    pf__format(error, size, PF_ERROR_DEVICE, "MPI: %s: %s", what, text);
    return 1;
}

PF_PRIVATE pf_result pf__mpi_group_begin(pf__group *g, char *error, size_t error_size) {
    int initialized = 0, finalized = 0, level = 0;
    MPI_Initialized(&initialized);
    MPI_Finalized(&finalized);
    if (!initialized || finalized)
        return pf__format(error, error_size, PF_ERROR_INVALID_ARGUMENT,
                          "across_processes: MPI is not running: call MPI_Init_thread (MPI_THREAD_SERIALIZED) first, "
                          "and run the program with mpirun");
    MPI_Query_thread(&level);
    if (level < MPI_THREAD_SERIALIZED)
        return pf__format(error, error_size, PF_ERROR_INVALID_ARGUMENT,
                          "across_processes: MPI gives this process thread level %d: rank threads need "
                          "MPI_THREAD_SERIALIZED (MPI_Init_thread)", level);
    struct pf__mpi *p = (struct pf__mpi *)calloc(1, sizeof *p);
    if (!p) return pf__format(error, error_size, PF_ERROR_OUT_OF_MEMORY, "out of memory");
    if (pf__mpi_failed(MPI_Comm_dup(MPI_COMM_WORLD, &p->comm), error, error_size, "MPI_Comm_dup")) {
        free(p);
        return PF_ERROR_DEVICE;
    }
    g->mpi = p;
    p->stage_comm = MPI_COMM_NULL;
    p->stage_request = MPI_REQUEST_NULL;
    MPI_Comm_set_errhandler(p->comm, MPI_ERRORS_RETURN); /* a failed call is an error, not an abort */
    MPI_Comm_rank(p->comm, &p->process);
    MPI_Comm_size(p->comm, &p->processes);
    p->process_0_drives = g->options.process_0_drives != 0;
    int stages = g->options.pipeline_stages > 1 ? g->options.pipeline_stages : 1;
    int *counts = (int *)calloc((size_t)p->processes * 3, sizeof(int));
    p->requests = (MPI_Request *)calloc((size_t)p->processes * g->num_ranks, sizeof *p->requests);
    p->verdicts = (pf__mpi_verdict *)calloc((size_t)p->processes, sizeof *p->verdicts);
    p->request_peer = (int *)calloc((size_t)p->processes * g->num_ranks, sizeof *p->request_peer);
    p->ended = (unsigned char *)calloc((size_t)p->processes, 1);
    p->lost = -1;
    int timeout_ms = g->options.process_timeout_ms ? g->options.process_timeout_ms : PF__PROCESS_TIMEOUT_MS;
    p->timeout_s = timeout_ms > 0 ? timeout_ms / 1000.0 : 0.0;
    if (!counts || !p->requests || !p->request_peer || !p->verdicts || !p->ended) {
        free(counts);
        return pf__format(error, error_size, PF_ERROR_OUT_OF_MEMORY, "out of memory");
    }
    int mine[3] = {g->num_ranks, p->process_0_drives, stages};
    pf_result res = pf__mpi_failed(MPI_Allgather(mine, 3, MPI_INT, counts, 3, MPI_INT, p->comm), error, error_size,
                                   "MPI_Allgather")
                        ? PF_ERROR_DEVICE
                        : PF_OK;
    for (int q = 0; !res && q < p->processes; q++)
        if (counts[3 * q] != g->num_ranks)
            res = pf__format(error, error_size, PF_ERROR_INVALID_ARGUMENT,
                             "across_processes: process %d asks for %d ranks and process %d for %d: every process "
                             "holds the same number", q, counts[3 * q], p->process, g->num_ranks);
        else if (counts[3 * q + 1] != p->process_0_drives)
            res = pf__format(error, error_size, PF_ERROR_INVALID_ARGUMENT,
                             "across_processes: process %d sets process_0_drives %d and process %d %d: every "
                             "process sets it alike", q, counts[3 * q + 1], p->process, p->process_0_drives);
        else if (counts[3 * q + 2] != stages)
            res = pf__format(error, error_size, PF_ERROR_INVALID_ARGUMENT,
                             "across_processes: process %d asks for %d pipeline stages and process %d for %d: every "
                             "process asks alike", q, counts[3 * q + 2], p->process, stages);
    if (!res && p->processes % stages)
        res = pf__format(error, error_size, PF_ERROR_INVALID_ARGUMENT,
                         "pipeline_stages %d does not divide the %d processes (every stage has as many)", stages,
                         p->processes);
    free(counts);
    if (!res && stages > 1 && pf__mpi_failed(MPI_Comm_dup(p->comm, &p->stage_comm), error, error_size, "MPI_Comm_dup"))
        res = PF_ERROR_DEVICE;
    if (res) return res;
    /* stage s: processes s x stage_processes on, layers s x layers / stages on; its ranks are the
       world of the collectives */
    int layers = g->model->config.num_layers;
    p->stage_processes = p->processes / stages;
    g->stages = stages;
    g->stage = p->process / p->stage_processes;
    g->stage_first_layer = (int)((long long)g->stage * layers / stages);
    g->stage_end_layer = (int)((long long)(g->stage + 1) * layers / stages);
    p->stage_first_process = g->stage * p->stage_processes;
    p->last_stage_first_process = (stages - 1) * p->stage_processes;
    g->world_ranks = p->stage_processes * g->num_ranks;
    g->first_rank = (p->process - p->stage_first_process) * g->num_ranks;
    p->world_in = (const float **)calloc((size_t)g->world_ranks, sizeof *p->world_in);
    if (!p->world_in) return pf__format(error, error_size, PF_ERROR_OUT_OF_MEMORY, "out of memory");
    return PF_OK;
}

PF_PRIVATE void pf__mpi_group_end(pf__group *g) {
    struct pf__mpi *p = g->mpi;
    if (!p) return;
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (p->lost >= 0) finalized = 1; /* a lost group's MPI may wait forever: the job is ending (MPI_Abort) */
    if (!finalized && p->driven && p->process == 0) { /* the followers stop following */
        pf__mpi_call quit;
        memset(&quit, 0, sizeof quit);
        quit.kind = PF__JOB_QUIT;
        for (int q = 1; q < p->processes; q++) MPI_Send(&quit, (int)sizeof quit, MPI_BYTE, q, PF__TAG_CALL, p->comm);
    }
    if (!finalized && p->stage_request != MPI_REQUEST_NULL) { /* received by now, unless a failure dropped it */
        int done = 0;
        MPI_Test(&p->stage_request, &done, MPI_STATUS_IGNORE);
        if (!done) {
            MPI_Cancel(&p->stage_request);
            MPI_Request_free(&p->stage_request);
        }
    }
    if (!finalized && p->stage_comm != MPI_COMM_NULL) MPI_Comm_free(&p->stage_comm);
    if (!finalized) MPI_Comm_free(&p->comm);
    free(p->stage_out);
    free(p->call);
    for (int i = 0; i < PF__CALL_OUTPUTS; i++) free(p->outputs[i]);
    free(p->gathered);
    free(p->world_in);
    free(p->requests);
    free(p->request_peer);
    free(p->verdicts);
    free(p->ended);
    free(p->drain);
    free(p);
    g->mpi = NULL;
}

/* Whether every process says ok (outside jobs: a step of setup that one process may fail). */
PF_PRIVATE int pf__mpi_agree(pf__group *g, int ok) {
    int all = 0;
    if (g->mpi->lost >= 0) return 0;
    if (MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_LAND, g->mpi->comm) != MPI_SUCCESS) return 0;
    return all;
}

/* Takes a LOST notice (another process gave one up, pf__mpi_lose) that probed found: this group is
   lost too, for its reason. */
static int pf__mpi_receive_lost(struct pf__mpi *p, const MPI_Status *probed) {
    pf__mpi_verdict notice;
    int status = MPI_Recv(&notice, (int)sizeof notice, MPI_BYTE, probed->MPI_SOURCE, PF__TAG_LOST, p->comm,
                          MPI_STATUS_IGNORE);
    if (status == MPI_SUCCESS && p->lost < 0) {
        p->lost = notice.lost;
        snprintf(p->lost_message, sizeof p->lost_message, "%s", notice.message);
    }
    return status;
}

/* The pace of every wait on other processes: it spins first (a peer at the same all-reduce answers
   within microseconds), then naps in steps of 20 us (a blocking MPI call spins on a core for as long
   as a peer computes: a long prompt's layer, or a peer that is late to the request, which the ranks
   of this host's other processes need). Returns 1 when the wait is over: the group is lost (another
   process's LOST notice came), or `patience` timeouts have passed since start in a bounded job (the
   peer is then given up: pf__mpi_lose). */
static int pf__mpi_pause(struct pf__mpi *p, int spins, const struct timespec *start, int patience) {
    if (p->lost >= 0) return 1;
    if (spins < 1000) return 0;
    struct timespec nap = {0, 20000}, now;
    nanosleep(&nap, NULL);
    if (!p->bounded || p->timeout_s <= 0) return 0;
    int noticed = 0;
    MPI_Status probed;
    if (MPI_Iprobe(MPI_ANY_SOURCE, PF__TAG_LOST, p->comm, &noticed, &probed) == MPI_SUCCESS && noticed &&
        pf__mpi_receive_lost(p, &probed) == MPI_SUCCESS)
        return 1;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (double)(now.tv_sec - start->tv_sec) + (now.tv_nsec - start->tv_nsec) * 1e-9 > patience * p->timeout_s;
}

/* MPI_Probe of the next message on comm (the group's, or its stage_comm) from one of processes
   [first, end) (not this one, nor those skip marks), in bounded time: *late is then the process
   given up (the first of them, which sent nothing; or the one a LOST notice names), else -1. */
static int pf__mpi_probe(struct pf__mpi *p, MPI_Comm comm, int first, int end, const unsigned char *skip, int patience,
                         MPI_Status *probed, int *late) {
    struct timespec start;
    clock_gettime(CLOCK_MONOTONIC, &start);
    *late = -1;
    for (int spins = 0;; spins++) {
        int waited_for = -1;
        for (int q = first; q < end; q++) {
            if (q == p->process || (skip && skip[q])) continue;
            int found = 0, status = MPI_Iprobe(q, MPI_ANY_TAG, comm, &found, probed);
            if (status != MPI_SUCCESS) return status;
            if (found && probed->MPI_TAG == PF__TAG_LOST) {
                status = pf__mpi_receive_lost(p, probed);
                *late = p->lost;
                return status;
            }
            if (found) return status;
            if (waited_for < 0) waited_for = q;
        }
        if (waited_for < 0) return MPI_ERR_OTHER; /* nobody to hear from: a caller's bug */
        if (pf__mpi_pause(p, spins, &start, patience)) {
            *late = p->lost >= 0 ? p->lost : waited_for;
            return MPI_SUCCESS;
        }
    }
}

/* MPI_Waitall of the first n of p->requests, in bounded time: *late is then the process given up
   (the other process of the first that did not complete; or the one a LOST notice names), else -1. */
static int pf__mpi_wait_requests(struct pf__mpi *p, int n, int patience, int *late) {
    struct timespec start;
    clock_gettime(CLOCK_MONOTONIC, &start);
    *late = -1;
    for (int spins = 0; n; spins++) {
        int done = 0, status = MPI_Testall(n, p->requests, &done, MPI_STATUSES_IGNORE);
        if (status != MPI_SUCCESS || done) return status;
        if (pf__mpi_pause(p, spins, &start, patience)) {
            for (int i = 0; i < n && *late < 0; i++) {
                int complete = 1;
                if (p->requests[i] != MPI_REQUEST_NULL) MPI_Request_get_status(p->requests[i], &complete, MPI_STATUS_IGNORE);
                if (!complete) *late = p->request_peer[i];
            }
            if (p->lost >= 0) *late = p->lost;
            if (*late < 0) continue; /* they completed meanwhile */
            return MPI_SUCCESS;
        }
    }
    return MPI_SUCCESS;
}

/* Process q did not answer within the timeout while this one waited `what`: the group is lost (q's
   messages may come later, or never, and every exchange would wait for it again). This job fails
   with a message naming q, and so does every later call on the group, without MPI; the pending
   requests of the first n are cancelled, and every other process gets a LOST notice, which ends
   its waits with the same message at once (one waiting on this process, which waited on q, would
   otherwise name this one). The processes cannot free the group in step any more: the program ends
   the job (MPI_Abort). Nothing when the group is lost already (a notice came: its message stays). */
static void pf__mpi_lose(struct pf__mpi *p, int q, const char *what, int n) {
    for (int i = 0; i < n; i++)
        if (p->requests[i] != MPI_REQUEST_NULL) {
            MPI_Cancel(&p->requests[i]);
            MPI_Request_free(&p->requests[i]);
        }
    if (p->lost >= 0) return;
    p->lost = q;
    snprintf(p->lost_message, sizeof p->lost_message,
             "process %d did not answer within %g s while process %d waited %s: it died, stopped or lost its host "
             "(pf_parallel_options.process_timeout_ms); the processes cannot run this model together again: end the "
             "job", q, p->timeout_s, p->process, what);
    pf__mpi_verdict *notice = &p->lost_notice;
    notice->code = PF_ERROR_DEVICE;
    notice->propagated = 0;
    notice->lost = q;
    snprintf(notice->message, sizeof notice->message, "%s", p->lost_message);
    for (int r = 0; r < p->processes; r++) { /* not waited for: the notice stays as it is until the group's end */
        MPI_Request sent;
        if (r != p->process && r != q && MPI_Isend(notice, (int)sizeof *notice, MPI_BYTE, r, PF__TAG_LOST, p->comm, &sent) == MPI_SUCCESS)
            MPI_Request_free(&sent);
    }
}

/* Receives process q's END into its verdict (after pf__mpi_probe saw it). One that gave a process
   up makes this group lost too, for the same reason (the process would never answer here either). */
static int pf__mpi_receive_end(struct pf__mpi *p, int q) {
    p->ended[q] = 1;
    int status = MPI_Recv(&p->verdicts[q], (int)sizeof p->verdicts[q], MPI_BYTE, q, PF__TAG_END, p->comm, MPI_STATUS_IGNORE);
    const pf__mpi_verdict *v = &p->verdicts[q];
    if (status == MPI_SUCCESS && v->lost >= 0 && p->lost < 0) {
        p->lost = v->lost;
        snprintf(p->lost_message, sizeof p->lost_message, "%s", v->message);
    }
    return status;
}

/* A process that ends the job for another's reason (process q's END, received while this one
   waited for its data): the leader fails with q's verdict. */
static void pf__mpi_fail_from(pf__rank *leader, struct pf__mpi *p, int q, const char *waiting) {
    const pf__mpi_verdict *v = &p->verdicts[q];
    p->peer_failed = 1;
    if (v->code) pf__rank_fail(leader, (pf_result)v->code, "process %d failed: %s", q, v->message);
    else pf__rank_fail(leader, PF_ERROR_DEVICE, "process %d ended the job while this one waits %s: the processes ran "
                       "different requests", q, waiting);
}

/* On the leader (the process's rank 0), while the others wait in a barrier: sends the process's
   ranks' buffers (local[num_ranks], count floats each) to every other process and receives theirs.
   Returns every rank's buffer in world rank order, or NULL with the leader failed: another process
   ended the job (its verdict becomes this one's reason), or MPI failed. */
PF_PRIVATE const float *const *pf__mpi_exchange(pf__rank *leader, float *const *local, size_t count) {
    pf__group *g = leader->group;
    struct pf__mpi *p = g->mpi;
    int L = g->num_ranks, sends = 0, status = MPI_SUCCESS, ended = -1, count_differs = 0, late = -1;
    if (p->lost >= 0) {
        pf__rank_fail(leader, PF_ERROR_DEVICE, "%s", p->lost_message);
        return NULL;
    }
    if (count > INT_MAX) {
        pf__rank_fail(leader, PF_ERROR_UNSUPPORTED, "MPI: an all-reduce of %zu floats exceeds one message", count);
        return NULL;
    }
    size_t need = (size_t)g->world_ranks * count;
    if (need > p->gathered_floats) {
        float *grown = (float *)realloc(p->gathered, need * sizeof(float));
        if (!grown) {
            pf__rank_fail(leader, PF_ERROR_OUT_OF_MEMORY, "out of host memory for the processes' all-reduce");
            return NULL;
        }
        p->gathered = grown;
        p->gathered_floats = need;
    }
    int first = p->stage_first_process, end = first + p->stage_processes; /* this stage's processes */
    for (int k = 0; k < L; k++) p->world_in[g->first_rank + k] = local[k];
    for (int q = first; q < end && status == MPI_SUCCESS; q++)
        for (int k = 0; q != p->process && k < L && status == MPI_SUCCESS; k++) {
            p->request_peer[sends] = q;
            status = MPI_Isend(local[k], (int)count, MPI_FLOAT, q, PF__TAG_DATA, p->comm, &p->requests[sends++]);
        }
    /* every process that reached this exchange sent its buffers before waiting for ours; one that
       did not will send END (or is lost: it sends nothing within the timeout): so these receives end */
    for (int q = first; q < end && status == MPI_SUCCESS && late < 0; q++) {
        for (int k = 0; q != p->process && k < L && status == MPI_SUCCESS; k++) {
            MPI_Status probed;
            status = pf__mpi_probe(p, p->comm, q, q + 1, NULL, PF__PATIENCE_IN_JOB, &probed, &late);
            if (status != MPI_SUCCESS || late >= 0) break;
            if (probed.MPI_TAG == PF__TAG_END) {
                status = pf__mpi_receive_end(p, q);
                if (ended < 0) ended = q;
                break;
            }
            int sent = 0;
            MPI_Get_count(&probed, MPI_FLOAT, &sent);
            if (sent != (int)count) { /* different requests: an error on both sides, as the collective check's */
                pf__rank_fail(leader, PF_ERROR_INVALID_ARGUMENT, "process %d enters an all-reduce of %d floats where "
                              "this one enters %zu: every process must make the same calls with the same arguments",
                              q, sent, count);
                count_differs = 1;
                break;
            }
            int world = (q - first) * L + k;
            float *into = p->gathered + (size_t)world * count;
            status = MPI_Recv(into, (int)count, MPI_FLOAT, q, PF__TAG_DATA, p->comm, MPI_STATUS_IGNORE);
            p->world_in[world] = into;
        }
    }
    int waited = MPI_SUCCESS;
    if (late < 0) waited = pf__mpi_wait_requests(p, sends, PF__PATIENCE_IN_JOB, &late);
    if (status == MPI_SUCCESS) status = waited;
    if (late >= 0) {
        pf__mpi_lose(p, late, "in an all-reduce", sends);
        pf__rank_fail(leader, PF_ERROR_DEVICE, "%s", p->lost_message);
        return NULL;
    }
    if (count_differs) return NULL; /* its DATA stays queued: the job's end drains it */
    char message[PF__MESSAGE_SIZE];
    if (pf__mpi_failed(status, message, sizeof message, "the all-reduce's exchange")) {
        pf__rank_fail(leader, PF_ERROR_DEVICE, "%s (an all-reduce of %zu floats: do all processes run the same "
                      "request?)", message, count);
        return NULL;
    }
    if (ended >= 0) {
        pf__mpi_fail_from(leader, p, ended, "in an all-reduce");
        return NULL;
    }
    return p->world_in;
}

/* Waits, in bounded time, for the last hidden state sent across jobs to be received (the next stage
   takes it in the job after the one that sent it). Returns the MPI status; *late: as
   pf__mpi_wait_requests's. */
static int pf__mpi_wait_stage_out(struct pf__mpi *p, int patience, int *late) {
    *late = -1;
    if (p->stage_request == MPI_REQUEST_NULL) return MPI_SUCCESS;
    p->requests[0] = p->stage_request;
    p->request_peer[0] = p->process + p->stage_processes;
    int status = pf__mpi_wait_requests(p, 1, patience, late);
    p->stage_request = p->requests[0]; /* MPI_REQUEST_NULL once complete */
    return status;
}

/* Pipeline stages, on the leader (the process's rank 0): the hidden state x (count floats) to the
   process at this one's place in the next stage, waited for until sent: that process receives it
   (or, failed, drains it at the job's end; lost, it does neither within the timeout). across_jobs
   (micro-batches): that process takes it in the next job, so it is copied and left in flight, on
   the stage communicator, once the one sent before it was received. */
PF_PRIVATE void pf__mpi_stage_send(pf__rank *leader, const float *x, size_t count, int across_jobs) {
    struct pf__mpi *p = leader->group->mpi;
    char message[PF__MESSAGE_SIZE];
    if (count > INT_MAX) {
        pf__rank_fail(leader, PF_ERROR_UNSUPPORTED, "MPI: a hidden state of %zu floats exceeds one message", count);
        return;
    }
    int to = p->process + p->stage_processes, late = -1, status = MPI_SUCCESS;
    if (across_jobs) {
        status = pf__mpi_wait_stage_out(p, PF__PATIENCE_IN_JOB, &late);
        if (status == MPI_SUCCESS && late < 0 && count > p->stage_out_floats) {
            float *grown = (float *)realloc(p->stage_out, count * sizeof(float));
            if (!grown) {
                pf__rank_fail(leader, PF_ERROR_OUT_OF_MEMORY, "out of host memory for a hidden state");
                return;
            }
            p->stage_out = grown;
            p->stage_out_floats = count;
        }
        if (status == MPI_SUCCESS && late < 0) {
            memcpy(p->stage_out, x, count * sizeof(float));
            status = MPI_Isend(p->stage_out, (int)count, MPI_FLOAT, to, PF__TAG_DATA, p->stage_comm, &p->stage_request);
            if (status == MPI_SUCCESS) p->stage_sent++;
        }
    } else {
        p->request_peer[0] = to;
        status = MPI_Isend(x, (int)count, MPI_FLOAT, to, PF__TAG_DATA, p->comm, &p->requests[0]);
        if (status == MPI_SUCCESS) status = pf__mpi_wait_requests(p, 1, PF__PATIENCE_IN_JOB, &late);
    }
    if (late >= 0) {
        pf__mpi_lose(p, late, "to send it the hidden state", 1);
        pf__rank_fail(leader, PF_ERROR_DEVICE, "%s", p->lost_message);
    } else if (pf__mpi_failed(status, message, sizeof message, "sending the hidden state to the next stage"))
        pf__rank_fail(leader, PF_ERROR_DEVICE, "%s", message);
}

/* Micro-batches, on the leader of a stage before the last, as a job begins: waits until the next
   stage took the hidden state this one sent in the job before (it does so first thing). Without
   this the transfer of a state larger than MPI's eager limit could wait for this process's next
   MPI call, after its whole step, and the stages would run one after another again. */
PF_PRIVATE void pf__mpi_stage_sent(pf__rank *leader) {
    struct pf__mpi *p = leader->group->mpi;
    char message[PF__MESSAGE_SIZE];
    int late = -1, status = pf__mpi_wait_stage_out(p, PF__PATIENCE_IN_JOB, &late);
    if (late >= 0) {
        pf__mpi_lose(p, late, "for it to take the hidden state", 0);
        pf__rank_fail(leader, PF_ERROR_DEVICE, "%s", p->lost_message);
    } else if (pf__mpi_failed(status, message, sizeof message, "sending the hidden state to the next stage")) {
        pf__rank_fail(leader, PF_ERROR_DEVICE, "%s", message);
    }
}

/* Pipeline stages, on the leader: the hidden state x (count floats) from the process at this one's
   place in the stage before; the leader fails when that process ended the job instead (its
   verdict), sent another size (different requests) or MPI failed. across_jobs (micro-batches): the
   one it sent in the job before, on the stage communicator. */
PF_PRIVATE void pf__mpi_stage_receive(pf__rank *leader, float *x, size_t count, int across_jobs) {
    struct pf__mpi *p = leader->group->mpi;
    int from = p->process - p->stage_processes, sent = 0, late = -1;
    MPI_Comm comm = across_jobs ? p->stage_comm : p->comm;
    char message[PF__MESSAGE_SIZE];
    MPI_Status probed;
    int status = pf__mpi_probe(p, comm, from, from + 1, NULL, PF__PATIENCE_IN_JOB, &probed, &late);
    if (late >= 0) {
        pf__mpi_lose(p, late, "for its hidden state", 0);
        pf__rank_fail(leader, PF_ERROR_DEVICE, "%s", p->lost_message);
        return;
    }
    if (status == MPI_SUCCESS && probed.MPI_TAG == PF__TAG_END) {
        status = pf__mpi_receive_end(p, from);
        if (status == MPI_SUCCESS) {
            pf__mpi_fail_from(leader, p, from, "for its hidden state");
            return;
        }
    }
    if (status == MPI_SUCCESS) {
        MPI_Get_count(&probed, MPI_FLOAT, &sent);
        if (sent != (int)count) { /* its DATA stays queued: the job's end drains it */
            pf__rank_fail(leader, PF_ERROR_INVALID_ARGUMENT, "process %d sends a hidden state of %d floats where this "
                          "one expects %zu: every process must make the same calls with the same arguments", from, sent,
                          count);
            return;
        }
        status = MPI_Recv(x, (int)count, MPI_FLOAT, from, PF__TAG_DATA, comm, MPI_STATUS_IGNORE);
        if (status == MPI_SUCCESS && across_jobs) p->stage_received++;
    }
    if (pf__mpi_failed(status, message, sizeof message, "receiving the hidden state from the stage before"))
        pf__rank_fail(leader, PF_ERROR_DEVICE, "%s", message);
}

/* Room in the drain buffer (received messages nobody takes) for a message of `bytes`; -1 without memory. */
static int pf__mpi_drain_room(struct pf__mpi *p, size_t bytes) {
    if (bytes <= p->drain_bytes) return 0;
    char *grown = (char *)realloc(p->drain, bytes);
    if (!grown) return -1;
    p->drain = grown;
    p->drain_bytes = bytes;
    return 0;
}

/* Receives every other process's END, and what each sent before it (DATA of exchanges this process
   left), whichever comes first; stops early when the group is lost (an END or a notice says so). In
   bounded time: *late is then the process given up. */
static int pf__mpi_drain(struct pf__mpi *p, int *late) {
    int left = 0;
    for (int q = 0; q < p->processes; q++) left += q != p->process && !p->ended[q];
    for (; left > 0 && p->lost < 0; left--) {
        MPI_Status probed;
        int bytes = 0, status = MPI_SUCCESS;
        while (status == MPI_SUCCESS) { /* DATA, until END */
            status = pf__mpi_probe(p, p->comm, 0, p->processes, p->ended, PF__PATIENCE_JOB_END, &probed, late);
            if (status != MPI_SUCCESS || *late >= 0) return status;
            int q = probed.MPI_SOURCE;
            if (probed.MPI_TAG == PF__TAG_END) {
                status = pf__mpi_receive_end(p, q);
                break;
            }
            MPI_Get_count(&probed, MPI_BYTE, &bytes);
            if (pf__mpi_drain_room(p, (size_t)bytes)) return MPI_ERR_NO_MEM;
            status = MPI_Recv(p->drain, bytes, MPI_BYTE, q, probed.MPI_TAG, p->comm, MPI_STATUS_IGNORE);
        }
        if (status != MPI_SUCCESS) return status;
    }
    return MPI_SUCCESS;
}

/* After a step of micro-batches every process knows failed: the hidden states in flight across jobs
   are dropped, as the batcher ends the requests whose steps they carry. This process receives
   what the stage before sent that it did not take (that process's END counts them), then waits
   until the next stage took what this one sent. In bounded time: *late is then the process given up. */
static int pf__mpi_drop_stage_states(struct pf__mpi *p, int *late) {
    int from = p->process - p->stage_processes, status = MPI_SUCCESS;
    *late = -1;
    if (p->stage_comm == MPI_COMM_NULL) return MPI_SUCCESS;
    while (from >= 0 && p->stage_received < p->verdicts[from].stage_sent) {
        MPI_Status probed;
        int bytes = 0;
        status = pf__mpi_probe(p, p->stage_comm, from, from + 1, NULL, PF__PATIENCE_JOB_END, &probed, late);
        if (status != MPI_SUCCESS || *late >= 0) return status;
        MPI_Get_count(&probed, MPI_BYTE, &bytes);
        if (pf__mpi_drain_room(p, (size_t)bytes)) return MPI_ERR_NO_MEM;
        status = MPI_Recv(p->drain, bytes, MPI_BYTE, from, probed.MPI_TAG, p->stage_comm, MPI_STATUS_IGNORE);
        if (status != MPI_SUCCESS) return status;
        p->stage_received++;
    }
    return pf__mpi_wait_stage_out(p, PF__PATIENCE_JOB_END, late);
}

/* On the caller's thread, after this process's ranks ended the job (local: their first error, its
   text in message): sends END to every other process and receives theirs. Returns the job's result
   on every process alike: the first process's own failure (not one it took from another), with its
   message in message; PF_OK when none failed. A process given up (here, or by another process: its
   END says so) fails the job with the message naming it, on every process that still answers. */
PF_PRIVATE pf_result pf__mpi_end_job(pf__group *g, pf_result local, char *message, size_t message_size) {
    struct pf__mpi *p = g->mpi;
    pf__mpi_verdict *mine = &p->verdicts[p->process];
    mine->code = (int)local;
    mine->propagated = p->peer_failed;
    mine->lost = p->lost;
    mine->stage_sent = p->stage_sent;
    mine->micro_batches = g->job.kind == PF__JOB_FORWARD && g->job.stage_rows;
    snprintf(mine->message, sizeof mine->message, "%s", p->lost >= 0 ? p->lost_message : local ? message : "");
    int sends = 0, status = MPI_SUCCESS, late = -1;
    for (int q = 0; q < p->processes && status == MPI_SUCCESS; q++)
        if (q != p->process && q != p->lost) {
            p->request_peer[sends] = q;
            status = MPI_Isend(mine, (int)sizeof *mine, MPI_BYTE, q, PF__TAG_END, p->comm, &p->requests[sends++]);
        }
    if (status == MPI_SUCCESS) status = pf__mpi_drain(p, &late);
    if (late >= 0) pf__mpi_lose(p, late, "for the job's end", sends);
    int waited = MPI_SUCCESS;
    if (p->lost < 0) waited = pf__mpi_wait_requests(p, sends, PF__PATIENCE_JOB_END, &late);
    if (late >= 0 || p->lost >= 0) pf__mpi_lose(p, late, "for the job's end", sends);
    if (status == MPI_SUCCESS) status = waited;
    memset(p->ended, 0, (size_t)p->processes);
    p->peer_failed = 0;
    if (p->lost >= 0) return pf__format(message, message_size, PF_ERROR_DEVICE, "%s", p->lost_message);
    if (status != MPI_SUCCESS) {
        pf__mpi_failed(status, message, message_size, "ending a job");
        return PF_ERROR_DEVICE;
    }
    int first = -1;
    for (int q = 0; q < p->processes; q++) {
        const pf__mpi_verdict *v = &p->verdicts[q];
        if (v->code && (first < 0 || (p->verdicts[first].propagated && !v->propagated))) first = q;
    }
    if (first < 0) return PF_OK;
    /* a failed step of micro-batches ends the batcher's requests: the hidden states in the stages go
       too (process 0 knows the job: a follower that could not start it may not); after another job
       (a failed LOGITS job between micro-batches) they are kept for the next step */
    if (p->verdicts[0].micro_batches) status = pf__mpi_drop_stage_states(p, &late);
    if (late >= 0) {
        pf__mpi_lose(p, late, "for the hidden states a failed job left", 0);
        return pf__format(message, message_size, PF_ERROR_DEVICE, "%s", p->lost_message);
    }
    if (status != MPI_SUCCESS) {
        pf__mpi_failed(status, message, message_size, "dropping the hidden states a failed job left");
        return PF_ERROR_DEVICE;
    }
    const pf__mpi_verdict *v = &p->verdicts[first];
    char text[PF__MESSAGE_SIZE];
    snprintf(text, sizeof text, "%s", v->message);
    return pf__format(message, message_size, (pf_result)v->code, "process %d: %s", first, text);
}

/* Every process's copy of `rows` rows of row_bytes, stride_bytes apart from first, becomes world
   rank root_rank's process's. Outside jobs, after all processes agreed the job succeeded. Point to
   point from that process, not MPI_Bcast: each process then waits on the one it needs (a tree's
   inner process may be the lost one) and can stop waiting (a collective cannot be cancelled). */
PF_PRIVATE pf_result pf__mpi_broadcast_rows(pf__group *g, int root_rank, void *first, size_t rows, size_t row_bytes,
                                            size_t stride_bytes, char *error, size_t error_size) {
    struct pf__mpi *p = g->mpi;
    if (!rows || !row_bytes) return PF_OK;
    if (row_bytes > INT_MAX || stride_bytes > INT_MAX)
        return pf__format(error, error_size, PF_ERROR_UNSUPPORTED, "MPI: rows of %zu bytes exceed one message", row_bytes);
    if (p->lost >= 0) return pf__format(error, error_size, PF_ERROR_DEVICE, "%s", p->lost_message);
    int root = p->last_stage_first_process + root_rank / g->num_ranks; /* the outputs are the last stage's */
    for (size_t done = 0; done < rows;) { /* in pieces that an int counts */
        size_t n = rows - done;
        size_t most = (size_t)INT_MAX / (stride_bytes > row_bytes ? stride_bytes : row_bytes);
        if (n > most) n = most ? most : 1;
        MPI_Datatype type;
        int status = MPI_Type_vector((int)n, (int)row_bytes, (int)(rows > 1 ? stride_bytes : row_bytes), MPI_BYTE, &type);
        if (status == MPI_SUCCESS) status = MPI_Type_commit(&type);
        int late = -1, requests = 0;
        if (status == MPI_SUCCESS) {
            char *rows_at = (char *)first + done * stride_bytes;
            for (int q = 0; q < p->processes && p->process == root && status == MPI_SUCCESS; q++)
                if (q != root) {
                    p->request_peer[requests] = q;
                    status = MPI_Isend(rows_at, 1, type, q, PF__TAG_OUTPUTS, p->comm, &p->requests[requests++]);
                }
            if (p->process != root) {
                p->request_peer[requests] = root;
                status = MPI_Irecv(rows_at, 1, type, root, PF__TAG_OUTPUTS, p->comm, &p->requests[requests++]);
            }
            MPI_Type_free(&type);
            int waited = pf__mpi_wait_requests(p, requests, PF__PATIENCE_OUTPUTS, &late);
            if (status == MPI_SUCCESS) status = waited;
        }
        if (late >= 0) {
            pf__mpi_lose(p, late, "for a job's outputs", requests);
            return pf__format(error, error_size, PF_ERROR_DEVICE, "%s", p->lost_message);
        }
        if (pf__mpi_failed(status, error, error_size, "broadcasting a job's outputs")) return PF_ERROR_DEVICE;
        done += n;
    }
    return PF_OK;
}

/* ---- for backends whose collectives cross processes on their own (CUDA ranks over NCCL) ---- */
#ifdef PF_CUDA /* only the CUDA backend calls these */

PF_PRIVATE int pf__mpi_process(const pf__group *g) { return g->mpi ? g->mpi->process : 0; }

/* process_timeout_ms as it applies (0: no bound). */
PF_PRIVATE int pf__mpi_timeout_ms(const pf__group *g) {
    return g->mpi && g->mpi->timeout_s > 0 ? (int)(g->mpi->timeout_s * 1000.0 + 0.5) : 0;
}

/* The longest a rank may wait on other processes' ranks in this job (0: no bound, as in the setup). */
PF_PRIVATE double pf__mpi_job_timeout_s(const pf__group *g) {
    return g->mpi && g->mpi->bounded ? g->mpi->timeout_s : 0;
}

/* Setup, on the caller's thread (every process alike): process 0's `bytes` at data become every
   process's. */
PF_PRIVATE pf_result pf__mpi_share_setup(pf__group *g, void *data, size_t bytes, char *error, size_t error_size) {
    if (bytes > INT_MAX) return pf__format(error, error_size, PF_ERROR_UNSUPPORTED, "MPI: %zu bytes exceed one message", bytes);
    return pf__mpi_failed(MPI_Bcast(data, (int)bytes, MPI_BYTE, 0, g->mpi->comm), error, error_size, "MPI_Bcast")
               ? PF_ERROR_DEVICE
               : PF_OK;
}

/* A collective across processes failed because another process's did (NCCL's remote error): this
   process's verdict is then not the job's cause. Any rank thread. */
PF_PRIVATE void pf__mpi_note_peer_failed(pf__group *g) {
    if (g->mpi) g->mpi->peer_failed = 1;
}

/* On the leader (the process's rank 0), while its device waits on a collective across processes
   that the MPI side does not see (NCCL): whether another process ended the job with a failure (its
   END; the leader then fails with its verdict) or gave one up (a LOST notice), without waiting. An
   END of a process that succeeded is kept for the job's end. */
PF_PRIVATE int pf__mpi_peer_failed(pf__rank *leader) {
    struct pf__mpi *p = leader->group->mpi;
    for (int q = 0; p && q < p->processes && p->lost < 0; q++) {
        int found = 0;
        MPI_Status probed;
        if (q == p->process) continue;
        if (MPI_Iprobe(q, PF__TAG_LOST, p->comm, &found, &probed) == MPI_SUCCESS && found) {
            pf__mpi_receive_lost(p, &probed);
            break;
        }
        if (p->ended[q] || MPI_Iprobe(q, PF__TAG_END, p->comm, &found, &probed) != MPI_SUCCESS || !found) continue;
        if (pf__mpi_receive_end(p, q) != MPI_SUCCESS || p->lost >= 0) break;
        if (p->verdicts[q].code) {
            pf__mpi_fail_from(leader, p, q, "in a collective");
            return 1;
        }
    }
    if (!p || p->lost < 0) return 0;
    pf__rank_fail(leader, PF_ERROR_DEVICE, "%s", p->lost_message);
    return 1;
}
#endif

/* Process 0 of a driven group: the job, sent to every follower before its ranks start it. */
static pf_result pf__mpi_send_call(pf__group *g, pf__job_kind kind, const pf__job *job, char *error, size_t error_size) {
    struct pf__mpi *p = g->mpi;
    pf__mpi_call c;
    memset(&c, 0, sizeof c);
    c.kind = (int)kind;
#ifdef PF_TESTING
    c.check_device_choices = pf_testing_check_device_choices;
    c.fail_process = __atomic_exchange_n(&pf_testing_follower_fail[0], 0, __ATOMIC_ACQ_REL); /* set by a test's thread */
    c.fail_rank = pf_testing_follower_fail[1], c.fail_countdown = pf_testing_follower_fail[2];
#endif
    if (job) {
        c.batch = job->step.batch, c.seq_len = job->step.seq_len, c.past = job->step.past, c.cross_len = job->step.cross_len;
        c.segment_before = job->step.segment_before;
        c.all_positions = job->all_positions, c.encoder_pass = job->encoder_pass;
        c.reorder_count = job->reorder_count, c.reorder_cross = job->reorder_cross;
        c.candidates_per_row = job->candidates_per_row;
        c.chunk_positions = job->chunk_positions;
#define PF__PRESENT(i, field, type) if (job->field) c.present |= 1u << (i);
        PF__CALL_INPUTS(PF__PRESENT)
#undef PF__PRESENT
#define PF__PRESENT(i, field, type) if (job->field) c.present |= 1u << (PF__CALL_NUM_INPUTS + (i));
        PF__CALL_OUTPUT_FIELDS(PF__PRESENT)
#undef PF__PRESENT
    }
    size_t in[PF__CALL_NUM_INPUTS], out[PF__CALL_OUTPUTS], total = PF__ALIGN8(sizeof c);
    pf__call_sizes(g, &c, in, out);
    for (int i = 0; i < PF__CALL_NUM_INPUTS; i++)
        if (c.present >> i & 1) total += PF__ALIGN8(in[i]);
    if (total > INT_MAX)
        return pf__format(error, error_size, PF_ERROR_UNSUPPORTED, "MPI: a step's inputs of %zu bytes exceed one message",
                          total);
    if (total > p->call_bytes) {
        char *grown = (char *)realloc(p->call, total);
        if (!grown) return pf__format(error, error_size, PF_ERROR_OUT_OF_MEMORY, "out of memory");
        p->call = grown;
        p->call_bytes = total;
    }
    memcpy(p->call, &c, sizeof c);
    size_t at = PF__ALIGN8(sizeof c);
#define PF__PACK(i, field, type)                                                                                     \
    if (c.present >> (i) & 1) {                                                                                      \
        memcpy(p->call + at, job->field, in[i]);                                                                     \
        at += PF__ALIGN8(in[i]);                                                                                     \
    }
    if (job) PF__CALL_INPUTS(PF__PACK)
#undef PF__PACK
    int sends = 0, status = MPI_SUCCESS, late = -1;
    for (int q = 1; q < p->processes && status == MPI_SUCCESS; q++) {
        p->request_peer[sends] = q;
        status = MPI_Isend(p->call, (int)total, MPI_BYTE, q, PF__TAG_CALL, p->comm, &p->requests[sends++]);
    }
    int waited = pf__mpi_wait_requests(p, sends, PF__PATIENCE_IN_JOB, &late);
    if (late >= 0) {
        pf__mpi_lose(p, late, "to send it a step", sends);
        return pf__format(error, error_size, PF_ERROR_DEVICE, "%s", p->lost_message);
    }
    if (status == MPI_SUCCESS) status = waited;
    return pf__mpi_failed(status, error, error_size, "sending a step to the followers") ? PF_ERROR_DEVICE : PF_OK;
}

/* Before a job of a group across processes: process 0 of a driven group sends it to the followers;
   a follower outside pf_follow is refused (its job would wait for partners that run none). */
PF_PRIVATE pf_result pf__mpi_begin_job(pf__group *g, pf__job_kind kind, const pf__job *job, char *error, size_t error_size) {
    struct pf__mpi *p = g->mpi;
    if (p->lost >= 0) return pf__format(error, error_size, PF_ERROR_DEVICE, "%s", p->lost_message);
    p->bounded = kind != PF__JOB_SETUP; /* loading weights takes what each host's disks take */
    if (!p->driven) return PF_OK;
    if (p->process == 0) return pf__mpi_send_call(g, kind, job, error, error_size);
    if (!p->following)
        return pf__format(error, error_size, PF_ERROR_INVALID_ARGUMENT,
                          "process %d follows process 0 (process_0_drives): it runs process 0's requests in "
                          "pf_follow and makes none of its own", p->process);
    return PF_OK;
}

/* The end of pf__group_create: a driven group's CALLs flow from now on (its setup ran SPMD). */
PF_PRIVATE void pf__mpi_group_ready(pf__group *g) { g->mpi->driven = g->mpi->process_0_drives; }

/* Waits for a CALL from process 0 on any of the groups (those not yet ended); returns which, or -1
   with the MPI status in *status. Spins briefly, then naps longer and longer up to a millisecond:
   a follower of an idle server waits for hours. */
static int pf__mpi_await_call(pf__group *const *groups, const unsigned char *ended, int n, int *status) {
    long nap_ns = 20000;
    for (int spins = 0;; spins++) {
        for (int i = 0; i < n; i++) {
            int found = 0;
            if (ended[i]) continue;
            *status = MPI_Iprobe(0, PF__TAG_CALL, groups[i]->mpi->comm, &found, MPI_STATUS_IGNORE);
            if (*status != MPI_SUCCESS) return -1;
            if (found) return i;
        }
        if (spins >= 100) {
            struct timespec nap = {0, nap_ns};
            nanosleep(&nap, NULL);
            if (nap_ns < 1000000) nap_ns += nap_ns / 4;
        }
    }
}

/* pf_follow's wait on the groups of a model (one, or a dual model's two towers'): the next job
   process 0 sends, *which its group (which runs it with its follower's room for outputs), or
   *which -1 once every group got QUIT (ended[] notes those that did). An error when MPI fails. */
PF_PRIVATE pf_result pf__mpi_next_call(pf__group *const *groups, int n, unsigned char *ended, int *which, pf__job *job,
                                       char *error, size_t error_size) {
    *which = -1;
    for (int i = 0; i < n; i++) {
        struct pf__mpi *p = groups[i] ? groups[i]->mpi : NULL;
        if (!p || !p->process_0_drives)
            return pf__format(error, error_size, PF_ERROR_INVALID_ARGUMENT,
                              "pf_follow: the model is not split across processes with process_0_drives");
        if (p->process == 0)
            return pf__format(error, error_size, PF_ERROR_INVALID_ARGUMENT,
                              "pf_follow: process 0 drives (it makes the calls); the other processes follow");
        if (p->lost >= 0) return pf__format(error, error_size, PF_ERROR_DEVICE, "pf_follow: %s", p->lost_message);
        p->following = 0; /* the last job ended */
    }
    for (;;) {
        int active = 0;
        for (int i = 0; i < n; i++) active += !ended[i];
        if (!active) return PF_OK;
        int status = MPI_SUCCESS, i = pf__mpi_await_call(groups, ended, n, &status);
        if (i < 0) {
            pf__mpi_failed(status, error, error_size, "waiting for process 0's next step");
            return PF_ERROR_DEVICE;
        }
        pf__group *g = groups[i];
        struct pf__mpi *p = g->mpi;
        MPI_Status probed;
        int bytes = 0;
        status = MPI_Probe(0, PF__TAG_CALL, p->comm, &probed);
        if (status == MPI_SUCCESS) status = MPI_Get_count(&probed, MPI_BYTE, &bytes);
        if (status == MPI_SUCCESS && (size_t)bytes > p->call_bytes) {
            char *grown = (char *)realloc(p->call, (size_t)bytes);
            if (!grown) return pf__format(error, error_size, PF_ERROR_OUT_OF_MEMORY, "out of memory for process 0's step");
            p->call = grown;
            p->call_bytes = (size_t)bytes;
        }
        if (status == MPI_SUCCESS) status = MPI_Recv(p->call, bytes, MPI_BYTE, 0, PF__TAG_CALL, p->comm, MPI_STATUS_IGNORE);
        if (pf__mpi_failed(status, error, error_size, "receiving process 0's step")) return PF_ERROR_DEVICE;
        pf__mpi_call c;
        if ((size_t)bytes < sizeof c)
            return pf__format(error, error_size, PF_ERROR_DEVICE, "MPI: process 0 sent a step of %d bytes", bytes);
        memcpy(&c, p->call, sizeof c);
        if (c.kind == PF__JOB_QUIT) {
            ended[i] = 1;
            continue;
        }
        size_t in[PF__CALL_NUM_INPUTS], out[PF__CALL_OUTPUTS], at = PF__ALIGN8(sizeof c);
        pf__call_sizes(g, &c, in, out);
        memset(job, 0, sizeof *job);
        job->kind = (pf__job_kind)c.kind;
        job->step.batch = c.batch, job->step.seq_len = c.seq_len, job->step.past = c.past, job->step.cross_len = c.cross_len;
        job->step.segment_before = c.segment_before;
        job->all_positions = c.all_positions, job->encoder_pass = c.encoder_pass;
        job->reorder_count = c.reorder_count, job->reorder_cross = c.reorder_cross;
        job->candidates_per_row = (size_t)c.candidates_per_row;
        job->chunk_positions = c.chunk_positions;
        /* a step this process cannot take part in still ends with it: its END fails the request on
           every process (instead of leaving them waiting for its data), and following goes on */
        pf_result local = PF_OK;
        const char *why = "";
#ifdef PF_TESTING
        if (pf_testing_follower_refuses)
            pf_testing_follower_refuses = 0, local = PF_ERROR_OUT_OF_MEMORY, why = "injected follower failure (test)";
#endif
#define PF__UNPACK(i, field, type)                                                                                   \
    if (!local && (c.present >> (i) & 1)) {                                                                          \
        if (at + in[i] > (size_t)bytes) local = PF_ERROR_DEVICE, why = "process 0's step is shorter than its sizes";  \
        else job->field = (type)(void *)(p->call + at);                                                              \
        at += PF__ALIGN8(in[i]);                                                                                     \
    }
        PF__CALL_INPUTS(PF__UNPACK)
#undef PF__UNPACK
#define PF__ROOM(i, field, type)                                                                                     \
    if (!local && (c.present >> (PF__CALL_NUM_INPUTS + (i)) & 1)) {                                                  \
        if (out[i] > p->output_bytes[i]) {                                                                           \
            void *grown = realloc(p->outputs[i], out[i]);                                                            \
            if (grown) p->outputs[i] = grown, p->output_bytes[i] = out[i];                                           \
            else local = PF_ERROR_OUT_OF_MEMORY, why = "out of host memory for a step's outputs";                    \
        }                                                                                                            \
        job->field = (type)p->outputs[i];                                                                            \
    }
        PF__CALL_OUTPUT_FIELDS(PF__ROOM)
#undef PF__ROOM
        if (local) {
            char message[PF__MESSAGE_SIZE];
            snprintf(message, sizeof message, "%s", why);
            pf__mpi_end_job(g, local, message, sizeof message);
            continue;
        }
#ifdef PF_TESTING
        pf_testing_check_device_choices = c.check_device_choices;
        if (c.fail_process == p->process) pf_testing_fail_rank = c.fail_rank, pf_testing_fail_countdown = c.fail_countdown;
#endif
        p->following = 1;
        *which = i;
        return PF_OK;
    }
}

#else /* one process: pf_parallelize refuses across_processes, and nothing else is reached */

PF_PRIVATE pf_result pf__mpi_group_begin(pf__group *g, char *error, size_t error_size) {
    (void)g;
    return pf__format(error, error_size, PF_ERROR_UNSUPPORTED,
                      "across_processes: this build has no MPI (build with make MPI=1, which defines PF_MPI)");
}
PF_PRIVATE void pf__mpi_group_end(pf__group *g) { (void)g; }
PF_PRIVATE int pf__mpi_agree(pf__group *g, int ok) {
    (void)g;
    return ok;
}
PF_PRIVATE const float *const *pf__mpi_exchange(pf__rank *leader, float *const *local, size_t count) {
    (void)local, (void)count;
    pf__rank_fail(leader, PF_ERROR_UNSUPPORTED, "this build has no MPI");
    return NULL;
}
PF_PRIVATE pf_result pf__mpi_end_job(pf__group *g, pf_result local, char *message, size_t message_size) {
    (void)g, (void)message, (void)message_size;
    return local;
}
PF_PRIVATE pf_result pf__mpi_broadcast_rows(pf__group *g, int root_rank, void *first, size_t rows, size_t row_bytes,
                                            size_t stride_bytes, char *error, size_t error_size) {
    (void)g, (void)root_rank, (void)first, (void)rows, (void)row_bytes, (void)stride_bytes;
    return pf__format(error, error_size, PF_ERROR_UNSUPPORTED, "this build has no MPI");
}
PF_PRIVATE pf_result pf__mpi_begin_job(pf__group *g, pf__job_kind kind, const pf__job *job, char *error, size_t error_size) {
    (void)g, (void)kind, (void)job, (void)error, (void)error_size;
    return PF_OK;
}
PF_PRIVATE void pf__mpi_group_ready(pf__group *g) { (void)g; }
PF_PRIVATE void pf__mpi_stage_send(pf__rank *leader, const float *x, size_t count, int across_jobs) {
    (void)x, (void)count, (void)across_jobs;
    pf__rank_fail(leader, PF_ERROR_UNSUPPORTED, "this build has no MPI");
}
PF_PRIVATE void pf__mpi_stage_sent(pf__rank *leader) { pf__rank_fail(leader, PF_ERROR_UNSUPPORTED, "this build has no MPI"); }
PF_PRIVATE void pf__mpi_stage_receive(pf__rank *leader, float *x, size_t count, int across_jobs) {
    (void)x, (void)count, (void)across_jobs;
    pf__rank_fail(leader, PF_ERROR_UNSUPPORTED, "this build has no MPI");
}
#ifdef PF_CUDA
PF_PRIVATE int pf__mpi_process(const pf__group *g) {
    (void)g;
    return 0;
}
PF_PRIVATE int pf__mpi_timeout_ms(const pf__group *g) {
    (void)g;
    return 0;
}
PF_PRIVATE double pf__mpi_job_timeout_s(const pf__group *g) {
    (void)g;
    return 0;
}
PF_PRIVATE pf_result pf__mpi_share_setup(pf__group *g, void *data, size_t bytes, char *error, size_t error_size) {
    (void)g, (void)data, (void)bytes;
    return pf__format(error, error_size, PF_ERROR_UNSUPPORTED, "this build has no MPI");
}
PF_PRIVATE int pf__mpi_peer_failed(pf__rank *leader) {
    (void)leader;
    return 0;
}
PF_PRIVATE void pf__mpi_note_peer_failed(pf__group *g) { (void)g; }
#endif
PF_PRIVATE pf_result pf__mpi_next_call(pf__group *const *groups, int n, unsigned char *ended, int *which, pf__job *job,
                                       char *error, size_t error_size) {
    (void)groups, (void)n, (void)ended, (void)job;
    *which = -1;
    return pf__format(error, error_size, PF_ERROR_UNSUPPORTED, "pf_follow: this build has no MPI (build with make MPI=1)");
}
#endif
