/* kernel_check: kernels.cu's PF_CUDA_NEXT_KERNELS kernels against a double-precision CPU
   reference and against the kernels they replace, on the GPU, then old and new timed with CUDA
   events (median of many runs). Built with kernels.cu in the same translation unit (its static
   launchers are called directly):
       make CUDA=1 CUDA_ARCHS=90 build/kernel_check && build/kernel_check [quick]
   Exits 0 when every case is within its tolerance, 1 on a mismatch, 2 without a GPU.
   Checks:
   - prefill (pf_flash2_attention_kernel vs pf_flash_attention_kernel and the reference): T 2..600,
     head_dim 64/80/128/256, GQA, masks 0 and 1, left pads, windows, ALiBi, T5 relative bias, a
     past (chunked prefill), fp16 and bf16 caches whose rows outside the keys any query sees are
     NaN (a kernel that reads them, or multiplies them by a P of 0, poisons its output); outputs
     poisoned with NaN before each launch;
   - decode (pf_decode_attention_kernel, one launch, vs pf_attention_kernel + combine): 1..many
     splits, masks 0/1/2, pads, windows, ALiBi, fp32/fp16/bf16 caches; three launches and a graph
     replay must give the same bits (the per-(row, head) counters reset themselves);
   - GEMV (pf_gemv16_kernel vs cuBLAS and the reference): 1..8 rows, GPT-2 XL's widths, fp16 and
     bf16, with and without bias; two runs the same bits;
   - residual + norm (pf_add_residual_norm_regs_kernel vs pf_add_residual_norm_kernel): the same
     bits, LayerNorm and RMSNorm, rows of 100..4096. */
#ifndef PF_CUDA_NEXT_KERNELS
#define PF_CUDA_NEXT_KERNELS
#endif
#include "../kernels.cu"

#include <algorithm>
#include <string.h>
#include <vector>

static int failures = 0;
static int quick = 0;

#define CK(call)                                                                                     \
    do {                                                                                            \
        cudaError_t e_ = (call);                                                                    \
        if (e_ != cudaSuccess) {                                                                    \
            printf("kernel_check: %s failed: %s (line %d)\n", #call, cudaGetErrorString(e_), __LINE__); \
            exit(1);                                                                                \
        }                                                                                           \
    } while (0)
#define ST(call)                                                                                     \
    do {                                                                                            \
        int s_ = (call);                                                                            \
        if (s_ != PF_CUDA_OK) {                                                                     \
            printf("kernel_check: %s failed: %s\n", #call, st->message);                            \
            exit(1);                                                                                \
        }                                                                                           \
    } while (0)

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static float frand() { /* uniform in [-1, 1) */
    rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
    return (float)((rng_state >> 40) & 0xffffff) / 8388608.0f - 1.0f;
}

template <typename C> static C to_c(float v);
template <> __half to_c<__half>(float v) { return __float2half_rn(v); }
template <> __nv_bfloat16 to_c<__nv_bfloat16>(float v) { return __float2bfloat16_rn(v); }
template <> float to_c<float>(float v) { return v; }
static float to_f(__half v) { return __half2float(v); }
static float to_f(__nv_bfloat16 v) { return __bfloat162float(v); }
static float to_f(float v) { return v; }
template <typename C> static const char *cname();
template <> const char *cname<__half>() { return "f16"; }
template <> const char *cname<__nv_bfloat16>() { return "bf16"; }
template <> const char *cname<float>() { return "f32"; }

static int host_bucket(int distance, int num_buckets, int max_distance, int bidirectional) {
    int bucket = 0, n = distance < 0 ? -distance : 0;
    if (bidirectional) {
        num_buckets /= 2;
        bucket = distance > 0 ? num_buckets : 0;
        n = distance < 0 ? -distance : distance;
    }
    int max_exact = num_buckets / 2;
    if (n < max_exact) return bucket + n;
    float scaled = logf((float)n / (float)max_exact) / (float)log((double)max_distance / max_exact) *
                   (float)(num_buckets - max_exact);
    int large = max_exact + (int)scaled;
    return bucket + (large < num_buckets - 1 ? large : num_buckets - 1);
}

struct attn_case {
    const char *name;
    int batch, T, past, heads, kv_heads, hd, mask, window, alibi, rel, pads;
};

/* Host copy of one attention problem and its device buffers. */
template <typename C> struct attn_problem {
    attn_case c;
    int cache_len;
    size_t q_width, kv_width, row_width;
    std::vector<float> qkv, alibi, rel;
    std::vector<C> k, v;
    std::vector<int> pad;
    float *d_qkv = 0, *d_out = 0, *d_partials = 0, *d_alibi = 0, *d_rel = 0;
    C *d_k = 0, *d_v = 0;
    int *d_pad = 0, *d_past = 0;
    pf_attn_args a;
};

template <typename C> static void setup(attn_problem<C> &p, const attn_case &c, float q_gain) {
    p.c = c;
    p.cache_len = c.mask == 2 ? c.past : c.past + c.T + 3;
    p.q_width = (size_t)c.heads * c.hd, p.kv_width = (size_t)c.kv_heads * c.hd;
    p.row_width = c.mask == 2 ? p.q_width : p.q_width + 2 * p.kv_width;
    size_t rows = (size_t)c.batch * c.T;
    p.qkv.resize(rows * p.row_width);
    for (auto &x : p.qkv) x = frand() * q_gain;
    p.pad.assign(c.batch, 0);
    if (c.pads)
        for (int b = 0; b < c.batch; b++) p.pad[b] = (b * 37) % (c.T > 1 ? (c.T * 2 / 3) : (c.past + 1)) ;
    if (c.mask == 2) p.pad.assign(c.batch, 0);
    size_t cache_n = (size_t)c.batch * p.cache_len * p.kv_width;
    p.k.resize(cache_n), p.v.resize(cache_n);
    const float nan = nanf("");
    int written_end = c.mask == 2 ? p.cache_len : c.past + c.T;
    for (int b = 0; b < c.batch; b++)
        for (int j = 0; j < p.cache_len; j++)
            for (size_t i = 0; i < p.kv_width; i++) {
                size_t at = ((size_t)b * p.cache_len + j) * p.kv_width + i;
                bool seen = j >= p.pad[b] && j < written_end; /* keys outside are never seen: NaN */
                p.k[at] = to_c<C>(seen ? frand() : nan);
                p.v[at] = to_c<C>(seen ? frand() : nan);
            }
    p.alibi.resize(c.heads);
    for (int h = 0; h < c.heads; h++) p.alibi[h] = c.alibi ? -0.5f / (float)(h + 1) : 0.0f;
    const int rel_rows = 32;
    p.rel.resize((size_t)c.heads * rel_rows);
    for (auto &x : p.rel) x = frand() * 2.0f;
    CK(cudaMalloc(&p.d_qkv, p.qkv.size() * 4));
    CK(cudaMalloc(&p.d_out, rows * p.q_width * 4));
    CK(cudaMalloc(&p.d_partials, pf_cuda_attention_scratch_floats(c.batch, c.heads, c.hd) * 4));
    CK(cudaMalloc(&p.d_alibi, p.alibi.size() * 4));
    CK(cudaMalloc(&p.d_rel, p.rel.size() * 4));
    CK(cudaMalloc(&p.d_k, cache_n * sizeof(C)));
    CK(cudaMalloc(&p.d_v, cache_n * sizeof(C)));
    CK(cudaMalloc(&p.d_pad, c.batch * sizeof(int)));
    CK(cudaMalloc(&p.d_past, sizeof(int)));
    CK(cudaMemcpy(p.d_qkv, p.qkv.data(), p.qkv.size() * 4, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(p.d_alibi, p.alibi.data(), p.alibi.size() * 4, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(p.d_rel, p.rel.data(), p.rel.size() * 4, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(p.d_k, p.k.data(), cache_n * sizeof(C), cudaMemcpyHostToDevice));
    CK(cudaMemcpy(p.d_v, p.v.data(), cache_n * sizeof(C), cudaMemcpyHostToDevice));
    CK(cudaMemcpy(p.d_pad, p.pad.data(), c.batch * sizeof(int), cudaMemcpyHostToDevice));
    CK(cudaMemcpy(p.d_past, &c.past, sizeof(int), cudaMemcpyHostToDevice));
    CK(cudaMemset(p.d_partials, 0xff, pf_cuda_attention_scratch_floats(c.batch, c.heads, c.hd) * 4));
    pf_attn_args &a = p.a;
    memset(&a, 0, sizeof a);
    a.T = c.T, a.past = 0, a.past_at = p.d_past;
    a.heads = c.heads, a.kv_heads = c.kv_heads, a.hd = c.hd;
    a.head_begin = 0, a.kv_begin = 0, a.kv_group = c.heads / c.kv_heads;
    a.cache_len = p.cache_len, a.window = c.window, a.mask = c.mask;
    a.scale = 1.0f / sqrtf((float)c.hd);
    a.alibi = c.alibi ? p.d_alibi : NULL;
    a.rel_bias = c.rel ? p.d_rel : NULL;
    a.rel_rows = rel_rows, a.rel_buckets = 32, a.rel_max_distance = 128;
    a.pad = c.pads ? p.d_pad : NULL;
    a.rows = NULL;
}

template <typename C> static void release(attn_problem<C> &p) {
    cudaFree(p.d_qkv), cudaFree(p.d_out), cudaFree(p.d_partials), cudaFree(p.d_alibi), cudaFree(p.d_rel);
    cudaFree(p.d_k), cudaFree(p.d_v), cudaFree(p.d_pad), cudaFree(p.d_past);
}

/* The reference in double: q rounded to C when round_q (the prefill kernels round Q to the cache
   type; decode keeps it fp32), every seen key. */
template <typename C> static std::vector<double> reference(const attn_problem<C> &p, bool round_q) {
    const attn_case &c = p.c;
    std::vector<double> out((size_t)c.batch * c.T * p.q_width, 0.0);
    std::vector<double> s(p.cache_len);
    for (int b = 0; b < c.batch; b++)
        for (int t = 0; t < c.T; t++)
            for (int h = 0; h < c.heads; h++) {
                int pos = c.past + t, pad = p.pad[b];
                int last = c.mask == 1 ? pos : c.mask == 2 ? p.cache_len - 1 : c.past + c.T - 1;
                int first = c.window > 0 && pos + 1 - c.window > pad ? pos + 1 - c.window : pad;
                if (first > last) continue;
                int kv = h / (c.heads / c.kv_heads);
                const float *q = &p.qkv[((size_t)b * c.T + t) * p.row_width + (size_t)h * c.hd];
                double mx = -INFINITY;
                for (int j = first; j <= last; j++) {
                    const C *k = &p.k[((size_t)b * p.cache_len + j) * p.kv_width + (size_t)kv * c.hd];
                    double dot = 0;
                    for (int i = 0; i < c.hd; i++)
                        dot += (double)(round_q ? to_f(to_c<C>(q[i])) : q[i]) * (double)to_f(k[i]);
                    double v = dot * p.a.scale + (double)p.alibi[h] * (c.alibi ? (j - pad) : 0);
                    if (c.rel) v += p.rel[(size_t)h * 32 + host_bucket(j - pos, 32, 128, c.mask != 1)];
                    s[j] = v;
                    mx = std::max(mx, v);
                }
                double l = 0;
                double *o = &out[((size_t)b * c.T + t) * p.q_width + (size_t)h * c.hd];
                for (int j = first; j <= last; j++) {
                    double e = exp(s[j] - mx);
                    l += e;
                    const C *v = &p.v[((size_t)b * p.cache_len + j) * p.kv_width + (size_t)kv * c.hd];
                    for (int i = 0; i < c.hd; i++) o[i] += e * (double)to_f(v[i]);
                }
                for (int i = 0; i < c.hd; i++) o[i] /= l;
            }
    return out;
}

static std::vector<float> download(const float *d, size_t n) {
    std::vector<float> h(n);
    CK(cudaMemcpy(h.data(), d, n * 4, cudaMemcpyDeviceToHost));
    return h;
}

static double max_diff(const std::vector<float> &x, const std::vector<double> &ref) {
    double m = 0;
    for (size_t i = 0; i < x.size(); i++) {
        double d = fabs((double)x[i] - ref[i]);
        if (!(d <= m)) m = d; /* NaN sticks */
        if (std::isnan(d)) return NAN;
    }
    return m;
}

static double max_diff(const std::vector<float> &x, const std::vector<float> &y) {
    double m = 0;
    for (size_t i = 0; i < x.size(); i++) {
        double d = fabs((double)x[i] - (double)y[i]);
        if (std::isnan(d)) return NAN;
        m = std::max(m, d);
    }
    return m;
}

/* Median µs of runs of fn (each a launch on st's stream), 3 warm-ups first. */
template <typename F> static float time_us(pf_cuda_rank *st, int runs, F fn) {
    cudaEvent_t e0, e1;
    CK(cudaEventCreate(&e0));
    CK(cudaEventCreate(&e1));
    for (int i = 0; i < 3; i++) fn();
    std::vector<float> t;
    for (int i = 0; i < runs; i++) {
        CK(cudaEventRecord(e0, st->stream));
        fn();
        CK(cudaEventRecord(e1, st->stream));
        CK(cudaEventSynchronize(e1));
        float ms;
        CK(cudaEventElapsedTime(&ms, e0, e1));
        t.push_back(ms * 1000.0f);
    }
    cudaEventDestroy(e0), cudaEventDestroy(e1);
    std::sort(t.begin(), t.end());
    return t[t.size() / 2];
}

template <typename C> static void check_prefill(pf_cuda_rank *st, const attn_case &c, float q_gain, bool timed) {
    attn_problem<C> p;
    setup(p, c, q_gain);
    size_t n_out = (size_t)c.batch * c.T * p.q_width;
    std::vector<double> ref = reference(p, true);
    CK(cudaMemset(p.d_out, 0xff, n_out * 4));
    ST(pf_cuda__flash_attention(st, c.batch, p.d_out, p.d_qkv, p.d_k, p.d_v, p.a));
    CK(cudaStreamSynchronize(st->stream));
    std::vector<float> old_out = download(p.d_out, n_out);
    CK(cudaMemset(p.d_out, 0xff, n_out * 4));
    ST(pf_cuda__flash2_attention(st, c.batch, p.d_out, p.d_qkv, p.d_k, p.d_v, p.a));
    CK(cudaStreamSynchronize(st->stream));
    std::vector<float> new_out = download(p.d_out, n_out);
    double e_old = max_diff(old_out, ref), e_new = max_diff(new_out, ref), e_on = max_diff(new_out, old_out);
    /* Both round P to the cache type: within its rounding of the reference, and not much worse
       than the kernel it replaces. */
    double tol = (sizeof(C) == 2 && to_f(to_c<C>(1.0f + 1.0f / 1024)) != 1.0f) ? 1e-2 : 5e-2; /* f16 : bf16 */
    bool ok = !std::isnan(e_new) && e_new <= tol && e_new <= 2 * e_old + 2e-3;
    if (!ok) failures++;
    printf("prefill %-5s %-28s T%4d past%3d hd%3d h%2d/%d mask%d win%3d alibi%d rel%d pads%d: max|new-ref| %.2e "
           "max|old-ref| %.2e max|new-old| %.2e %s",
           cname<C>(), c.name, c.T, c.past, c.hd, c.heads, c.kv_heads, c.mask, c.window, c.alibi, c.rel, c.pads, e_new,
           e_old, e_on, ok ? "ok" : "FAIL");
    if (timed) {
        int runs = quick ? 20 : 100;
        float t_old = time_us(st, runs, [&] { pf_cuda__flash_attention(st, c.batch, p.d_out, p.d_qkv, p.d_k, p.d_v, p.a); });
        float t_new = time_us(st, runs, [&] { pf_cuda__flash2_attention(st, c.batch, p.d_out, p.d_qkv, p.d_k, p.d_v, p.a); });
        printf("  | old %.1f us new %.1f us (x%.1f)", t_old, t_new, t_old / t_new);
    }
    printf("\n");
    release(p);
}

/* Old decode: pf_attention_kernel, then pf_attention_combine_kernel when split. */
template <typename C> static void old_decode(pf_cuda_rank *st, attn_problem<C> &p, int splits) {
    size_t shared = ((size_t)2 * p.c.hd + PF_CHUNK + 32) * sizeof(float);
    dim3 grid((unsigned)p.c.batch, (unsigned)p.c.heads, (unsigned)splits);
    ST(pf_cuda__attention(st, grid, shared, p.d_out, p.d_partials, p.d_qkv, p.d_k, p.d_v, p.a));
    if (splits > 1) {
        pf_attention_combine_kernel<<<dim3((unsigned)p.c.heads, (unsigned)p.c.batch), PF_ATTN_THREADS, 0, st->stream>>>(
            p.d_out, p.d_partials, p.c.heads, p.c.hd, splits);
        CK(cudaGetLastError());
    }
}

template <typename C> static void new_decode(pf_cuda_rank *st, attn_problem<C> &p, int splits) {
    dim3 grid((unsigned)p.c.batch, (unsigned)p.c.heads, (unsigned)splits);
    ST(pf_cuda__decode_attention(st, grid, p.d_out, p.d_partials, p.d_qkv, p.d_k, p.d_v, p.a));
}

template <typename C> static void check_decode(pf_cuda_rank *st, const attn_case &c, bool timed) {
    attn_problem<C> p;
    setup(p, c, 1.0f);
    size_t n_out = (size_t)c.batch * p.q_width;
    int len = c.mask == 2 ? p.cache_len : c.window > 0 && c.past + 1 > c.window ? c.window : c.past + 1;
    int splits = pf_cuda_decode_splits(len);
    std::vector<double> ref = reference(p, false);
    CK(cudaMemset(p.d_out, 0xff, n_out * 4));
    old_decode(st, p, splits);
    CK(cudaStreamSynchronize(st->stream));
    std::vector<float> old_out = download(p.d_out, n_out);
    std::vector<float> runs[4];
    for (int r = 0; r < 3; r++) {
        CK(cudaMemset(p.d_out, 0xff, n_out * 4));
        new_decode(st, p, splits);
        CK(cudaStreamSynchronize(st->stream));
        runs[r] = download(p.d_out, n_out);
    }
    /* And from a graph, as the decode steps run. */
    cudaGraph_t graph;
    cudaGraphExec_t exec;
    CK(cudaMemset(p.d_out, 0xff, n_out * 4));
    CK(cudaStreamBeginCapture(st->stream, cudaStreamCaptureModeThreadLocal));
    new_decode(st, p, splits);
    CK(cudaStreamEndCapture(st->stream, &graph));
    CK(cudaGraphInstantiate(&exec, graph, 0));
    for (int r = 0; r < 2; r++) CK(cudaGraphLaunch(exec, st->stream));
    CK(cudaStreamSynchronize(st->stream));
    runs[3] = download(p.d_out, n_out);
    bool same = true;
    for (int r = 1; r < 4; r++) same = same && !memcmp(runs[r].data(), runs[0].data(), n_out * 4);
    double e_old = max_diff(old_out, ref), e_new = max_diff(runs[0], ref), e_on = max_diff(runs[0], old_out);
    bool ok = same && !std::isnan(e_new) && e_new <= 1e-4 && e_on <= 1e-5;
    if (!ok) failures++;
    printf("decode  %-5s %-28s b%d past%5d hd%3d h%2d/%d mask%d win%3d alibi%d rel%d pads%d splits%2d: max|new-ref| "
           "%.2e max|old-ref| %.2e max|new-old| %.2e repeat%s %s",
           cname<C>(), c.name, c.batch, c.past, c.hd, c.heads, c.kv_heads, c.mask, c.window, c.alibi, c.rel, c.pads,
           splits, e_new, e_old, e_on, same ? "=" : "!=", ok ? "ok" : "FAIL");
    if (timed) { /* as the decode graph runs them: a graph of 50 layers' launches, per layer */
        const int layers = 50;
        cudaGraphExec_t g_old, g_new;
        for (int which = 0; which < 2; which++) {
            cudaGraph_t gr;
            CK(cudaStreamBeginCapture(st->stream, cudaStreamCaptureModeThreadLocal));
            for (int i = 0; i < layers; i++) which ? new_decode(st, p, splits) : old_decode(st, p, splits);
            CK(cudaStreamEndCapture(st->stream, &gr));
            CK(cudaGraphInstantiate(which ? &g_new : &g_old, gr, 0));
            cudaGraphDestroy(gr);
        }
        int tr = quick ? 10 : 40;
        float t_old = time_us(st, tr, [&] { cudaGraphLaunch(g_old, st->stream); }) / layers;
        float t_new = time_us(st, tr, [&] { cudaGraphLaunch(g_new, st->stream); }) / layers;
        printf("  | per layer in a graph: old %.2f us new %.2f us (x%.2f)", t_old, t_new, t_old / t_new);
        cudaGraphExecDestroy(g_old), cudaGraphExecDestroy(g_new);
    }
    printf("\n");
    cudaGraphExecDestroy(exec), cudaGraphDestroy(graph);
    release(p);
}

template <typename C> static void check_gemv(pf_cuda_rank *st, int rows, int n_out, int k, bool with_bias, bool timed) {
    std::vector<C> w((size_t)n_out * k), x((size_t)rows * k), bias(n_out);
    for (auto &v : w) v = to_c<C>(frand() * 0.05f);
    for (auto &v : x) v = to_c<C>(frand());
    for (auto &v : bias) v = to_c<C>(frand());
    C *d_w, *d_x, *d_b;
    float *d_out;
    CK(cudaMalloc(&d_w, w.size() * sizeof(C)));
    CK(cudaMalloc(&d_x, x.size() * sizeof(C)));
    CK(cudaMalloc(&d_b, bias.size() * sizeof(C)));
    CK(cudaMalloc(&d_out, (size_t)rows * n_out * 4));
    CK(cudaMemcpy(d_w, w.data(), w.size() * sizeof(C), cudaMemcpyHostToDevice));
    CK(cudaMemcpy(d_x, x.data(), x.size() * sizeof(C), cudaMemcpyHostToDevice));
    CK(cudaMemcpy(d_b, bias.data(), bias.size() * sizeof(C), cudaMemcpyHostToDevice));
    int dtype = sizeof(C) == 2 && to_f(to_c<C>(1.0f + 1.0f / 1024)) != 1.0f ? PF_CUDA_F16 : PF_CUDA_BF16;
    cudaDataType type = dtype == PF_CUDA_F16 ? CUDA_R_16F : CUDA_R_16BF;
    const void *bp = with_bias ? d_b : NULL;
    unsigned blocks = (unsigned)((n_out + PF_GEMV_WARPS - 1) / PF_GEMV_WARPS);
    auto gemv = [&] {
        pf_gemv16_kernel<C><<<blocks, 32 * PF_GEMV_WARPS, 0, st->stream>>>(d_out, d_x, d_w, bp, dtype, rows, n_out, k);
    };
    auto blas = [&] { /* the default build's pf_cuda_matmul: cuBLAS, then the bias kernel */
        const float one = 1.0f, zero = 0.0f;
        cublasGemmEx(st->blas, CUBLAS_OP_T, CUBLAS_OP_N, n_out, rows, k, &one, d_w, type, k, d_x, type, k, &zero, d_out,
                     CUDA_R_32F, n_out, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
        if (bp)
            pf_add_bias_kernel<<<pf_blocks((size_t)rows * n_out, PF_THREADS), PF_THREADS, 0, st->stream>>>(
                d_out, bp, dtype, rows, n_out);
    };
    size_t n = (size_t)rows * n_out;
    CK(cudaMemset(d_out, 0xff, n * 4));
    blas();
    CK(cudaStreamSynchronize(st->stream));
    std::vector<float> b_out = download(d_out, n);
    CK(cudaMemset(d_out, 0xff, n * 4));
    gemv();
    CK(cudaStreamSynchronize(st->stream));
    std::vector<float> g1 = download(d_out, n);
    CK(cudaMemset(d_out, 0xff, n * 4));
    gemv();
    CK(cudaStreamSynchronize(st->stream));
    std::vector<float> g2 = download(d_out, n);
    std::vector<double> ref(n);
    for (int r = 0; r < rows; r++)
        for (int j = 0; j < n_out; j++) {
            double s = with_bias ? to_f(bias[j]) : 0.0;
            for (int i = 0; i < k; i++) s += (double)to_f(w[(size_t)j * k + i]) * to_f(x[(size_t)r * k + i]);
            ref[(size_t)r * n_out + j] = s;
        }
    double e_new = max_diff(g1, ref), e_blas = max_diff(b_out, ref);
    bool same = !memcmp(g1.data(), g2.data(), n * 4);
    bool ok = same && !std::isnan(e_new) && e_new <= 1e-3 && e_new <= 4 * e_blas + 1e-4;
    if (!ok) failures++;
    printf("gemv    %-5s rows %d n_out %5d k %5d bias %d: max|gemv-ref| %.2e max|cublas-ref| %.2e repeat%s %s",
           cname<C>(), rows, n_out, k, with_bias, e_new, e_blas, same ? "=" : "!=", ok ? "ok" : "FAIL");
    if (timed) {
        int runs = quick ? 20 : 200;
        float t_blas = time_us(st, runs, blas), t_gemv = time_us(st, runs, gemv);
        double bytes = (double)w.size() * sizeof(C);
        printf("  | cublas+bias %.2f us gemv %.2f us (x%.2f, %.0f GB/s)", t_blas, t_gemv, t_blas / t_gemv,
               bytes / (t_gemv * 1e3));
    }
    printf("\n");
    cudaFree(d_w), cudaFree(d_x), cudaFree(d_b), cudaFree(d_out);
}


/* pf_add_residual_norm_regs_kernel against pf_add_residual_norm_kernel: the same bits. */
static void check_norm(pf_cuda_rank *st, int rows, int n, int rms, bool timed) {
    std::vector<float> x((size_t)rows * n), y(x.size());
    std::vector<__half> w(n), bias(n), nb(n);
    for (auto &v : x) v = frand() * 4.0f;
    for (auto &v : y) v = frand();
    for (int i = 0; i < n; i++) w[i] = __float2half_rn(1.0f + frand() * 0.1f), bias[i] = __float2half_rn(frand() * 0.1f),
                                nb[i] = __float2half_rn(frand() * 0.1f);
    float *d_x, *d_y, *d_out;
    __half *d_w, *d_bias, *d_nb, *d_o16;
    size_t bytes = x.size() * 4;
    CK(cudaMalloc(&d_x, bytes));
    CK(cudaMalloc(&d_y, bytes));
    CK(cudaMalloc(&d_out, bytes));
    CK(cudaMalloc(&d_w, n * 2));
    CK(cudaMalloc(&d_bias, n * 2));
    CK(cudaMalloc(&d_nb, n * 2));
    CK(cudaMalloc(&d_o16, x.size() * 2));
    CK(cudaMemcpy(d_y, y.data(), bytes, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(d_w, w.data(), n * 2, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(d_bias, bias.data(), n * 2, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(d_nb, nb.data(), n * 2, cudaMemcpyHostToDevice));
    unsigned threads = n >= PF_THREADS ? PF_THREADS : (unsigned)((n + 31) / 32 * 32);
    auto run = [&](bool regs) {
        if (regs)
            pf_add_residual_norm_regs_kernel<<<rows, threads, 0, st->stream>>>(d_x, d_y, d_bias, PF_CUDA_F16, d_out, d_w,
                                                                               PF_CUDA_F16, d_nb, PF_CUDA_F16, n, 1e-5f,
                                                                               rms, d_o16, PF_CUDA_F16);
        else
            pf_add_residual_norm_kernel<<<rows, threads, 0, st->stream>>>(d_x, d_y, d_bias, PF_CUDA_F16, d_out, d_w,
                                                                          PF_CUDA_F16, d_nb, PF_CUDA_F16, n, 1e-5f, rms,
                                                                          d_o16, PF_CUDA_F16);
    };
    std::vector<float> res[2], xs[2];
    std::vector<__half> o16[2];
    for (int k = 0; k < 2; k++) {
        CK(cudaMemcpy(d_x, x.data(), bytes, cudaMemcpyHostToDevice));
        CK(cudaMemset(d_out, 0xff, bytes));
        run(k == 1);
        CK(cudaStreamSynchronize(st->stream));
        res[k] = download(d_out, x.size());
        xs[k] = download(d_x, x.size());
        o16[k].resize(x.size());
        CK(cudaMemcpy(o16[k].data(), d_o16, x.size() * 2, cudaMemcpyDeviceToHost));
    }
    bool same = !memcmp(res[0].data(), res[1].data(), bytes) && !memcmp(xs[0].data(), xs[1].data(), bytes) &&
                !memcmp(o16[0].data(), o16[1].data(), x.size() * 2);
    if (!same) failures++;
    printf("resnorm rows %d n %5d rms %d: registers vs pf_add_residual_norm_kernel %s %s (max diff %.2e)", rows, n, rms,
           same ? "same bits" : "DIFFER", same ? "ok" : "FAIL", max_diff(res[0], res[1]));
    if (timed) {
        int runs = quick ? 20 : 200;
        float t_old = time_us(st, runs, [&] { run(false); }), t_new = time_us(st, runs, [&] { run(true); });
        printf("  | old %.2f us new %.2f us (x%.2f)", t_old, t_new, t_old / t_new);
    }
    printf("\n");
    cudaFree(d_x), cudaFree(d_y), cudaFree(d_out), cudaFree(d_w), cudaFree(d_bias), cudaFree(d_nb), cudaFree(d_o16);
}

int main(int argc, char **argv) {
    quick = argc > 1 && !strcmp(argv[1], "quick");
    int count = 0;
    if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
        printf("kernel_check: no CUDA device\n");
        return 2;
    }
    pf_cuda_rank *st = NULL;
    char message[256];
    if (pf_cuda_rank_create(0, &st, message, sizeof message) != PF_CUDA_OK) {
        printf("kernel_check: %s\n", message);
        return 2;
    }
    cudaDeviceProp prop;
    CK(cudaGetDeviceProperties(&prop, 0));
    printf("kernel_check on %s (sm_%d%d, %d SMs)\n", prop.name, prop.major, prop.minor, prop.multiProcessorCount);

    /* name batch T past heads kv_heads hd mask window alibi rel pads */
    const attn_case prefill[] = {
        {"gpt2-xl", 1, 512, 0, 25, 25, 64, 1, 0, 0, 0, 0},
        {"small T", 1, 2, 0, 4, 4, 64, 1, 0, 0, 0, 0},
        {"T 17", 2, 17, 0, 4, 2, 64, 1, 0, 0, 0, 1},
        {"hd80 gqa window", 2, 300, 0, 8, 2, 80, 1, 100, 0, 0, 0},
        {"hd128 gqa", 1, 600, 0, 8, 2, 128, 1, 0, 0, 0, 0},
        {"hd256 window", 2, 300, 0, 4, 1, 256, 1, 64, 0, 0, 0},
        {"hd128 alibi pads", 3, 300, 0, 4, 4, 128, 1, 0, 1, 0, 1},
        {"bert pads", 3, 300, 0, 12, 12, 64, 0, 0, 0, 0, 1},
        {"bert hd128 pads", 3, 217, 0, 4, 4, 128, 0, 0, 0, 0, 1},
        {"t5 rel pads", 3, 300, 0, 8, 8, 64, 0, 0, 0, 1, 1},
        {"t5 decoder rel", 1, 130, 0, 8, 8, 64, 1, 0, 0, 1, 0},
        {"chunk past 77", 1, 200, 77, 4, 4, 64, 1, 0, 0, 0, 0},
        {"chunk past 77 window 50", 2, 99, 77, 4, 2, 128, 1, 50, 0, 0, 1},
        {"hd32 hd48 edge", 1, 65, 0, 2, 2, 32, 1, 0, 0, 0, 0},
        {"hd48", 1, 129, 0, 2, 2, 48, 0, 0, 0, 0, 0},
        {"hd96", 1, 130, 0, 2, 2, 96, 1, 7, 0, 0, 0},
        {"hd192", 1, 100, 0, 2, 1, 192, 1, 0, 1, 0, 0},
    };
    for (const attn_case &c : prefill) {
        bool timed = !strcmp(c.name, "gpt2-xl") || !strcmp(c.name, "hd128 gqa");
        check_prefill<__half>(st, c, 1.0f, timed);
        check_prefill<__nv_bfloat16>(st, c, 1.0f, false);
    }
    /* peaky scores: the running max moves often */
    check_prefill<__half>(st, {"peaky q x8", 1, 300, 0, 4, 4, 64, 1, 0, 0, 0, 0}, 8.0f, false);
    check_prefill<__half>(st, {"llama-8b shape", 1, 512, 0, 32, 8, 128, 1, 0, 0, 0, 0}, 1.0f, true);

    const attn_case decode[] = {
        {"gpt2-xl step 640", 1, 1, 639, 25, 25, 64, 1, 0, 0, 0, 0},
        {"first step", 1, 1, 0, 4, 4, 64, 1, 0, 0, 0, 0},
        {"few keys", 2, 1, 20, 4, 2, 64, 1, 0, 0, 0, 1},
        {"hd80 window", 2, 1, 400, 8, 2, 80, 1, 100, 0, 0, 1},
        {"hd128 gqa long", 2, 1, 2000, 8, 2, 128, 1, 0, 0, 0, 0},
        {"hd256", 1, 1, 300, 4, 1, 256, 1, 0, 1, 0, 0},
        {"alibi pads", 3, 1, 150, 4, 4, 64, 1, 0, 1, 0, 1},
        {"t5 decoder rel", 2, 1, 90, 8, 8, 64, 1, 0, 0, 1, 0},
        {"encoder mask0", 2, 1, 60, 4, 4, 64, 0, 0, 0, 0, 1},
        {"cross mask2", 2, 1, 300, 8, 8, 64, 2, 0, 0, 0, 0},
        {"hd48", 1, 1, 33, 2, 2, 48, 1, 0, 0, 0, 0},
    };
    for (const attn_case &c : decode) {
        bool timed = !strcmp(c.name, "gpt2-xl step 640");
        check_decode<__half>(st, c, timed);
        check_decode<__nv_bfloat16>(st, c, false);
        check_decode<float>(st, c, false);
    }

    const int gemv_shapes[][2] = {{4800, 1600}, {1600, 1600}, {6400, 1600}, {1600, 6400}, {100, 8}, {37, 24}};
    for (auto &s : gemv_shapes)
        for (int rows : {1, 2, 3, 8}) {
            bool timed = rows == 1 && s[0] >= 1600;
            check_gemv<__half>(st, rows, s[0], s[1], true, timed);
            if (rows == 1 || rows == 8) check_gemv<__nv_bfloat16>(st, rows, s[0], s[1], rows == 8, false);
        }
    check_gemv<__half>(st, 4, 4800, 1600, false, false);
    for (int n : {1600, 2048, 4096, 768, 100})
        for (int rms = 0; rms < 2; rms++) {
            check_norm(st, 1, n, rms, rms == 0 || n == 2048);
            check_norm(st, 5, n, rms, false);
        }

    cudaError_t e = cudaDeviceSynchronize();
    if (e != cudaSuccess) {
        printf("kernel_check: device error %s\n", cudaGetErrorString(e));
        failures++;
    }
    pf_cuda_rank_destroy(st);
    printf("kernel_check: %d failure(s)\n", failures);
    return failures ? 1 : 0;
}
