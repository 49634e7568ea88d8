#include "internal.h"

/* The most ranks we start: far more than any machine has devices, small enough to catch typos. */
#define PF__MAX_RANKS 64
/* The longest KV cache we size without a position table to bound it. */
#define PF__MAX_SEQUENCE (1 << 22)

/* Ranks for num_ranks 0: a rank per online core on the CPU (a CPU rank is one thread), one per
   visible GPU on CUDA; never more than PF__MAX_RANKS. */
static int pf__every_device(const pf__backend *backend) {
    long n = backend == &pf__cpu_backend ? pf__online_cpus() : (long)pf__cuda_devices();
    return n < 1 ? 1 : n > PF__MAX_RANKS ? PF__MAX_RANKS : (int)n;
}

PF_PRIVATE pf_result pf__parallelize_locked(pf_model *m, int num_ranks, const pf_parallel_options *options) {
    if (!m->loaded) return PF__FAIL(m, PF_ERROR_INVALID_ARGUMENT, "the model did not load");
    pf_parallel_options o = options ? *options : pf_parallel_options_init();
    const pf__config *c = &m->config;
    const pf__backend *backend = NULL;
    switch (o.device) {
    case PF_DEVICE_CPU: backend = &pf__cpu_backend; break;
    case PF_DEVICE_AUTO: backend = pf__cuda_devices() ? pf__cuda_backend() : &pf__cpu_backend; break;
    case PF_DEVICE_CUDA:
        if (!pf__cuda_devices())
            return PF__FAIL(m, PF_ERROR_UNSUPPORTED, "no CUDA device: %s", pf__cuda_unavailable_reason());
        backend = pf__cuda_backend();
        break;
    default: return PF__FAIL(m, PF_ERROR_INVALID_ARGUMENT, "unknown device %d", (int)o.device);
    }
    if (num_ranks == 0) num_ranks = o.device_ids ? o.num_device_ids : pf__every_device(backend);
    if (num_ranks < 1 || num_ranks > PF__MAX_RANKS)
        return PF__FAIL(m, PF_ERROR_INVALID_ARGUMENT, "num_ranks %d is not in 1..%d (0: every device)", num_ranks,
                        PF__MAX_RANKS);
    if (o.max_queued_requests < 0)
        return PF__FAIL(m, PF_ERROR_INVALID_ARGUMENT, "max_queued_requests %d is negative", o.max_queued_requests);
    if (o.max_batch < 0 || o.max_batch > 4096)
        return PF__FAIL(m, PF_ERROR_INVALID_ARGUMENT, "max_batch %d is not in 0..4096", o.max_batch);
    /* A learned position table bounds the sequence; rotary and ALiBi positions do not. */
    int table = pf__archs[c->arch].positions == PF__POS_LEARNED || pf__archs[c->arch].positions == PF__POS_SINUSOIDAL;
    int longest = !table ? PF__MAX_SEQUENCE : c->encoder_max_positions > c->max_positions ? c->encoder_max_positions
                                                                                           : c->max_positions;
    if (o.max_sequence_length < 0 || o.max_sequence_length > longest)
        return PF__FAIL(m, PF_ERROR_INVALID_ARGUMENT, "max_sequence_length %d is not in 0..%d%s", o.max_sequence_length,
                        longest, table ? " (the model's position table)" : "");
    if (o.device_ids && o.num_device_ids != num_ranks)
        return PF__FAIL(m, PF_ERROR_INVALID_ARGUMENT, "%d device ids for %d ranks", o.num_device_ids, num_ranks);
    for (int i = 0; o.device_ids && i < num_ranks; i++)
        if (o.device_ids[i] < 0 || o.device_ids[i] > 1024)
            return PF__FAIL(m, PF_ERROR_INVALID_ARGUMENT, "device id %d is not a device", o.device_ids[i]);
    if (o.dtype < PF_DTYPE_AUTO || o.dtype > PF_DTYPE_Q4_0)
        return PF__FAIL(m, PF_ERROR_INVALID_ARGUMENT, "unknown dtype %d", (int)o.dtype);

    if (o.expert_split < PF_EXPERT_SPLIT_AUTO || o.expert_split > PF_EXPERT_SPLIT_COLUMNS)
        return PF__FAIL(m, PF_ERROR_INVALID_ARGUMENT, "unknown expert_split %d", (int)o.expert_split);
    if (c->num_experts > 0 && !backend->scatter_add_rows)
        return PF__FAIL(m, PF_ERROR_UNSUPPORTED, "the %s backend runs no mixture of experts yet (num_experts %d): use CPU ranks",
                        backend->name, c->num_experts);
    static const pf__dtype dtypes[] = {PF__DTYPE_F32, PF__DTYPE_F32, PF__DTYPE_F16, PF__DTYPE_BF16, PF__DTYPE_Q8,
                                       PF__DTYPE_Q4};
    pf__dtype dtype = o.dtype == PF_DTYPE_AUTO && backend != &pf__cpu_backend ? PF__DTYPE_F16 : dtypes[o.dtype];
    if (PF__QUANTIZED(dtype) && backend != &pf__cpu_backend)
        return PF__FAIL(m, PF_ERROR_UNSUPPORTED, "dtype %s runs on CPU ranks only (the CUDA backend has no integer kernels)",
                        dtype == PF__DTYPE_Q8 ? "q8_0" : "q4_0");
    if (o.bf16_products && dtype != PF__DTYPE_BF16)
        return PF__FAIL(m, PF_ERROR_INVALID_ARGUMENT, "bf16_products multiplies bf16 weights: it needs dtype PF_DTYPE_BF16");
    if (o.kv_cache_dtype != PF_DTYPE_AUTO && o.kv_cache_dtype != PF_DTYPE_F32 && o.kv_cache_dtype != PF_DTYPE_F16 &&
        o.kv_cache_dtype != PF_DTYPE_BF16)
        return PF__FAIL(m, PF_ERROR_INVALID_ARGUMENT, "kv_cache_dtype %d is not PF_DTYPE_AUTO, _F32, _F16 or _BF16",
                        (int)o.kv_cache_dtype);
    if (m->config.kv_lora_rank && !backend->latent_attend)
        return PF__FAIL(m, PF_ERROR_UNSUPPORTED, "model_type \"%s\": the %s backend has no latent attention yet "
                        "(kv_lora_rank): run it on CPU ranks", m->config.model_type, backend->name);
    if (m->config.swiglu_limit > 0 && !backend->clamped_swiglu)
        return PF__FAIL(m, PF_ERROR_UNSUPPORTED, "model_type \"%s\": the %s backend has no clamped SwiGLU yet "
                        "(swiglu_limit): run it on CPU ranks", m->config.model_type, backend->name);
    if (m->sources[pf__slot_index(PF__SLOT_ATTN_SINKS, 0)].data && !backend->attention_sinks)
        return PF__FAIL(m, PF_ERROR_UNSUPPORTED, "model_type \"%s\": the %s backend has no attention sinks yet "
                        "(self_attn.sinks): run it on CPU ranks", m->config.model_type, backend->name);
    if (backend->cache_in_weight_dtype && o.kv_cache_dtype != PF_DTYPE_AUTO && dtypes[o.kv_cache_dtype] != dtype)
        return PF__FAIL(m, PF_ERROR_UNSUPPORTED, "kv_cache_dtype: the %s backend keeps keys and values in the weights' dtype",
                        backend->name);
    if (o.pipeline_stages < 0 || o.pipeline_stages > PF__MAX_RANKS)
        return PF__FAIL(m, PF_ERROR_INVALID_ARGUMENT, "pipeline_stages %d is not in 0..%d", o.pipeline_stages, PF__MAX_RANKS);
    if (o.pipeline_stages > 1 && !o.across_processes)
        return PF__FAIL(m, PF_ERROR_INVALID_ARGUMENT, "pipeline_stages %d splits the layers over processes: it needs "
                        "across_processes", o.pipeline_stages);
    if (o.pipeline_stages > 1 && c->transfo_xl)
        return PF__FAIL(m, PF_ERROR_UNSUPPORTED, "pipeline_stages: Transformer-XL's layers run as one (its memory and "
                        "segments): it runs tensor parallel across processes");
    if (o.pipeline_stages > 1 && (pf__archs[c->arch].kind != PF__KIND_DECODER || m->towers[0]))
        return PF__FAIL(m, PF_ERROR_UNSUPPORTED, "pipeline_stages: model_type \"%s\" is not a decoder (stages split a "
                        "decoder's layers; encoders and encoder-decoders run tensor parallel across processes)",
                        c->model_type);
    if (o.pipeline_stages > c->num_layers)
        return PF__FAIL(m, PF_ERROR_INVALID_ARGUMENT, "pipeline_stages %d exceeds the model's %d layers", o.pipeline_stages,
                        c->num_layers);
    if (o.pipeline_stages > 1 && backend != &pf__cpu_backend) /* a stage's hidden state is sent from host memory */
        return PF__FAIL(m, PF_ERROR_UNSUPPORTED, "pipeline_stages run CPU ranks only (ranks on the %s backend in pipeline "
                        "stages are not implemented): set device PF_DEVICE_CPU, or tensor parallel across processes "
                        "alone", backend->name);
    if (backend == &pf__cpu_backend) o.device_ids = NULL; /* CPU ranks have no device to pick */
    pf__group_destroy(m->group);
    m->group = NULL;
    m->parallel_options = o;
    m->parallel_options.device_ids = NULL; /* not ours to keep */
    __atomic_store_n(&m->max_queued_requests, o.max_queued_requests, __ATOMIC_RELAXED);
    return pf__group_create(m, num_ranks, &o, backend, dtype);
}

pf_result pf_parallelize(pf_model *m, int num_ranks, const pf_parallel_options *options) {
    if (!m) return PF_ERROR_INVALID_ARGUMENT;
    pf_result r = pf__request_lock(m, "pf_parallelize");
    if (r) return r;
    if (m->towers[0]) { /* a dual model: each tower on num_ranks ranks of its own, its heads split its way */
        for (int k = 0; k < 2 && !r; k++) {
            pf_parallel_options o = options ? *options : pf_parallel_options_init();
            if (k == 1) o.max_sequence_length = 0; /* an image's positions are fixed */
            if ((r = pf__parallelize_locked(m->towers[k], num_ranks, &o))) r = pf__fail_from(m, r, m->towers[k]);
        }
    } else {
        r = pf__parallelize_locked(m, num_ranks, options);
    }
    pf__request_unlock(m);
    return r;
}

static pf_result pf__to_cpu_locked(pf_model *m) {
    if (!m->loaded) return PF__FAIL(m, PF_ERROR_INVALID_ARGUMENT, "the model did not load");
    pf__group *g = m->group;
    if (!g || (g->num_ranks == 1 && !g->mpi && g->ranks[0].backend == &pf__cpu_backend)) return PF_OK;
    if (g->mpi) /* the other processes' slices are in their memory, often other hosts' */
        return PF__FAIL(m, PF_ERROR_UNSUPPORTED, "pf_to_cpu: the model is split across processes (across_processes): "
                        "gathering it would bring every other process's slices (another host's memory, what the split "
                        "is for) into each one; to hold it whole in each process, call pf_parallelize without "
                        "across_processes on every process, which loads it from the checkpoint there");

    /* Gather every slice into full host arrays, then build one CPU rank from them. */
    size_t num_slots = pf__num_slots(&m->config);
    float **full = (float **)calloc(num_slots, sizeof *full);
    pf__source *gathered = (pf__source *)calloc(num_slots, sizeof *gathered);
    pf_result r = PF_OK;
    if (!full || !gathered) r = PF__FAIL(m, PF_ERROR_OUT_OF_MEMORY, "out of memory");
    for (size_t i = 0; i < num_slots && !r; i++) {
        if (!m->sources[i].data) continue;
        full[i] = (float *)malloc(m->sources[i].rows * m->sources[i].cols * sizeof(float));
        if (!full[i]) r = PF__FAIL(m, PF_ERROR_OUT_OF_MEMORY, "out of memory");
        gathered[i] = m->sources[i];
        gathered[i].data = (const uint8_t *)full[i];
        gathered[i].dtype = PF__DTYPE_F32;
        gathered[i].pieces = NULL; /* gathered whole */
        gathered[i].packed = NULL;
        gathered[i].packed_pieces = NULL;
        if (gathered[i].layout == PF__LAYOUT_IN_OUT || gathered[i].layout == PF__LAYOUT_EXPERTS_IN_OUT ||
            gathered[i].layout == PF__LAYOUT_GROUPED || gathered[i].layout == PF__LAYOUT_GROUPED_IN_OUT)
            gathered[i].layout = PF__LAYOUT_OUT_IN; /* gathered as [rows][cols] (a grouped one dense) */
        gathered[i].groups = 1;
        if ((i == PF__SLOT_REL_BIAS || i == PF__SLOT_ENC_REL_BIAS) && full[i]) /* no rank holds it as a weight (each has a table): from the source */
            for (size_t k = 0; k < m->sources[i].rows * m->sources[i].cols; k++)
                full[i][k] = pf__weight_value(m->sources[i].data, k, m->sources[i].dtype);
    }
    if (!r) {
        g->gather = full;
        r = pf__group_run(g, PF__JOB_GATHER, NULL);
    }
    if (!r) {
        /* The CPU rank stores the weights as the ranks did (its fp16/bf16 lose nothing more). */
        pf__dtype dtype = g->dtype;
        pf_parallel_options o = m->parallel_options;
        o.device = PF_DEVICE_CPU;
        o.dtype = pf_model_dtype(m);
        pf__group_destroy(g);
        m->group = NULL;
        pf__source *mapped = m->sources;
        m->sources = gathered;
        r = pf__group_create(m, 1, &o, &pf__cpu_backend, dtype);
        m->sources = mapped; /* a later pf_parallelize slices from the map again */
        m->parallel_options = o;
    }
    for (size_t i = 0; full && i < num_slots; i++) free(full[i]);
    free(full);
    free(gathered);
    return r;
}

pf_result pf_to_cpu(pf_model *m) {
    if (!m) return PF_ERROR_INVALID_ARGUMENT;
    pf_result r = pf__request_lock(m, "pf_to_cpu");
    if (r) return r;
    for (int k = 0; k < 2 && !r && m->towers[k]; k++)
        if ((r = pf__to_cpu_locked(m->towers[k]))) r = pf__fail_from(m, r, m->towers[k]);
    if (!r && !m->towers[0]) r = pf__to_cpu_locked(m);
    pf__request_unlock(m);
    return r;
}

pf_result pf_follow(pf_model *m) {
    if (!m) return PF_ERROR_INVALID_ARGUMENT;
    pf_result r = pf__request_lock(m, "pf_follow");
    if (r) return r;
    pf__group *groups[2] = {m->towers[0] ? m->towers[0]->group : m->group, m->towers[1] ? m->towers[1]->group : NULL};
    unsigned char ended[2] = {0, 0};
    for (;;) {
        int which = -1;
        pf__job job;
        r = pf__mpi_next_call(groups, groups[1] ? 2 : 1, ended, &which, &job, pf__error_buffer(m), PF__MESSAGE_SIZE);
        if (r || which < 0) break;
        pf__group_run(groups[which], job.kind, &job); /* its result is process 0's to report */
    }
    pf__request_unlock(m);
    return r;
}

/* A dual model's group questions are its text tower's (the towers share rank count and device). */
static const pf_model *pf__ranked(const pf_model *m) { return m && m->towers[0] ? m->towers[0] : m; }

int pf_num_ranks(const pf_model *m) {
    m = pf__ranked(m);
    return m && m->group ? m->group->num_ranks : 1;
}

pf_device pf_model_device(const pf_model *m) {
    m = pf__ranked(m);
    return m && m->group && m->group->backend != &pf__cpu_backend ? PF_DEVICE_CUDA : PF_DEVICE_CPU;
}

pf_dtype pf_model_dtype(const pf_model *m) {
    m = pf__ranked(m);
    pf__dtype dtype = m && m->group ? m->group->dtype : PF__DTYPE_F32;
    return dtype == PF__DTYPE_F16    ? PF_DTYPE_F16
           : dtype == PF__DTYPE_BF16 ? PF_DTYPE_BF16
           : dtype == PF__DTYPE_Q8   ? PF_DTYPE_Q8_0
           : dtype == PF__DTYPE_Q4   ? PF_DTYPE_Q4_0
                                     : PF_DTYPE_F32;
}

size_t pf_memory_allocated(const pf_model *m, int rank) {
    if (m && m->towers[0]) return pf_memory_allocated(m->towers[0], rank) + pf_memory_allocated(m->towers[1], rank);
    if (!m || !m->group || rank < 0 || rank >= m->group->num_ranks) return 0;
    const pf__rank *r = &m->group->ranks[rank];
    return r->bytes[PF__MEM_WEIGHTS] + r->bytes[PF__MEM_CACHE] + r->bytes[PF__MEM_SCRATCH];
}

pf_result pf_get_memory_info(const pf_model *m, int rank, pf_memory_info *info) {
    if (info) memset(info, 0, sizeof *info);
    if (!m) return PF_ERROR_INVALID_ARGUMENT;
    if (!info) return PF__FAIL(m, PF_ERROR_INVALID_ARGUMENT, "pf_get_memory_info: info (the output) is NULL");
    if (m->towers[0]) { /* a dual model: its towers' bytes on the rank together, the device as the text tower saw it */
        pf_memory_info vision;
        pf_result r = pf_get_memory_info(m->towers[0], rank, info);
        if (!r) r = pf_get_memory_info(m->towers[1], rank, &vision);
        if (r) return pf__fail_from((pf_model *)m, r, m->towers[0]->group ? m->towers[1] : m->towers[0]);
        info->weights += vision.weights, info->kv_cache += vision.kv_cache, info->scratch += vision.scratch;
        info->allocated += vision.allocated;
        return PF_OK;
    }
    if (!m->group || rank < 0 || rank >= m->group->num_ranks)
        return PF__FAIL(m, PF_ERROR_INVALID_ARGUMENT, "rank %d: the model runs on %d rank(s)", rank,
                        m->group ? m->group->num_ranks : 0);
    const pf__rank *r = &m->group->ranks[rank];
    info->weights = r->bytes[PF__MEM_WEIGHTS];
    info->kv_cache = r->bytes[PF__MEM_CACHE];
    info->scratch = r->bytes[PF__MEM_SCRATCH];
    info->allocated = info->weights + info->kv_cache + info->scratch;
    pthread_mutex_lock(&m->group->mutex); /* as the rank read it after its last job */
    info->device_used = r->device_used;
    info->device_total = r->device_total;
    pthread_mutex_unlock(&m->group->mutex);
    return PF_OK;
}

