/* kernels.cu: the CUDA backend of parallelformers: kernels, cuBLAS GEMMs and NCCL communicators
   behind a plain C ABI. parallelformers.c (through cuda.part.c) is the only caller; this file
   knows nothing of its structs.

   The C ABI
   - Every function is extern "C" and named pf_cuda_*. It takes plain C types and two opaque
     handles: pf_cuda_rank (one rank's device, stream and cuBLAS handle) and pf_cuda_comm (one
     rank's NCCL communicator, passed as void *).
   - Functions that can fail return an int status: PF_CUDA_OK (0), PF_CUDA_ERROR_DEVICE (1) or
     PF_CUDA_ERROR_OUT_OF_MEMORY (2). The message of the failure, "<call> failed: <error string>
     (kernels.cu:<line>)", is in pf_cuda_rank_message(rank) until the next failure on that rank;
     functions without a rank write it to the (message, size) buffer they take.
   - Everything but pf_cuda_device_count, pf_cuda_nccl_create and pf_cuda_nccl_destroy runs on the
     rank's own thread, after pf_cuda_rank_create made its device current there.
   - Work is queued on the rank's stream; only upload, download, stream_sync and the setup calls
     wait for it. Activations are fp32; weights are fp32, fp16 or bf16 (PF_CUDA_F32/F16/BF16).
   - Nothing here prints, exits or aborts.

   Not yet run on a GPU (written and compiled on a machine without one): every kernel, the cuBLAS
   GemmEx calls for all three dtypes, the NCCL all-reduce and its abort path, the peer copies of
   the reduction over mixed GPUs, compute-sanitizer (memcheck, racecheck), any timing. What was
   checked without one: the attention kernels' indexing and online softmax, mirrored block by
   block in numpy against plain softmax attention; and cuda.part.c plus test/test_cuda.c against
   a host-memory stand-in for this ABI (same arithmetic, NaN-filled allocations) under ASan,
   UBSan and TSan, with 1 to 4 ranks on one "GPU", {0, 0, 1}, and a two-"GPU" NCCL stand-in. */
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <nccl.h>

#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define PF_CUDA_OK 0
#define PF_CUDA_ERROR_DEVICE 1
#define PF_CUDA_ERROR_OUT_OF_MEMORY 2

#define PF_CUDA_F32 0
#define PF_CUDA_F16 1
#define PF_CUDA_BF16 2

#define PF_CUDA_GELU_TANH 0
#define PF_CUDA_GELU_ERF 1
#define PF_CUDA_RELU 2
#define PF_CUDA_SILU 3

/* Attention: keys are scored PF_CHUNK at a time by a block of PF_ATTN_THREADS (4 warps), with an
   online softmax across chunks; decode splits the keys over at most PF_MAX_SPLITS blocks per
   head and combines their partial sums. */
#define PF_CHUNK 32
#define PF_ATTN_THREADS 128
#define PF_MAX_SPLITS 32
#define PF_THREADS 256

struct pf_cuda_rank {
    int device;
    cudaStream_t stream;
    cublasHandle_t blas;
    char message[256];
};

/* ---- errors ---------------------------------------------------------------------------------- */

static int pf_cuda__fail(char *message, size_t size, int code, const char *call, const char *what, int line) {
    if (message && size) snprintf(message, size, "%s failed: %s (kernels.cu:%d)", call, what, line);
    return code;
}

static int pf_cuda__code(cudaError_t e) {
    return e == cudaErrorMemoryAllocation ? PF_CUDA_ERROR_OUT_OF_MEMORY : PF_CUDA_ERROR_DEVICE;
}

/* Each macro returns from the enclosing function with the failure; `st` is the pf_cuda_rank. */
#define PF_CUDA_CHECK(st, fn, args)                                                                  \
    do {                                                                                            \
        cudaError_t e_ = fn args;                                                                   \
        if (e_ != cudaSuccess)                                                                      \
            return pf_cuda__fail((st)->message, sizeof (st)->message, pf_cuda__code(e_), #fn,      \
                                 cudaGetErrorString(e_), __LINE__);                                 \
    } while (0)

#define PF_CUDA_CHECK_LAUNCH(st, kernel)                                                             \
    do {                                                                                            \
        cudaError_t e_ = cudaGetLastError();                                                        \
        if (e_ != cudaSuccess)                                                                      \
            return pf_cuda__fail((st)->message, sizeof (st)->message, pf_cuda__code(e_),           \
                                 "launch of " #kernel, cudaGetErrorString(e_), __LINE__);           \
    } while (0)

#define PF_CUBLAS_CHECK(st, fn, args)                                                                \
    do {                                                                                            \
        cublasStatus_t s_ = fn args;                                                                \
        if (s_ != CUBLAS_STATUS_SUCCESS)                                                            \
            return pf_cuda__fail((st)->message, sizeof (st)->message,                               \
                                 s_ == CUBLAS_STATUS_ALLOC_FAILED ? PF_CUDA_ERROR_OUT_OF_MEMORY     \
                                                                  : PF_CUDA_ERROR_DEVICE,           \
                                 #fn, cublasGetStatusString(s_), __LINE__);                         \
    } while (0)

#define PF_NCCL_CHECK(st, fn, args)                                                                  \
    do {                                                                                            \
        ncclResult_t n_ = fn args;                                                                  \
        if (n_ != ncclSuccess)                                                                      \
            return pf_cuda__fail((st)->message, sizeof (st)->message, PF_CUDA_ERROR_DEVICE, #fn,   \
                                 ncclGetErrorString(n_), __LINE__);                                 \
    } while (0)

/* ---- device helpers -------------------------------------------------------------------------- */

/* Element i of a weight stored as fp32, fp16 or bf16, as fp32; 0 for an absent (NULL) weight. */
__device__ __forceinline__ float pf_load(const void *p, int dtype, size_t i) {
    if (!p) return 0.0f;
    if (dtype == PF_CUDA_F16) return __half2float(((const __half *)p)[i]);
    if (dtype == PF_CUDA_BF16) return __bfloat162float(((const __nv_bfloat16 *)p)[i]);
    return ((const float *)p)[i];
}

__device__ __forceinline__ float pf_warp_sum(float v) {
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

__device__ __forceinline__ float pf_warp_max(float v) {
    for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
}

/* Block-wide sum and max (blockDim.x a multiple of 32); every thread gets the same value, summed
   in the same order. red holds 32 floats of shared memory. */
__device__ float pf_block_sum(float v, float *red) {
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
    v = pf_warp_sum(v);
    __syncthreads(); /* red may still be read by a previous call */
    if (lane == 0) red[warp] = v;
    __syncthreads();
    float total = 0.0f;
    for (int w = 0; w < warps; w++) total += red[w];
    return total;
}

__device__ float pf_block_max(float v, float *red) {
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
    v = pf_warp_max(v);
    __syncthreads();
    if (lane == 0) red[warp] = v;
    __syncthreads();
    float best = -INFINITY;
    for (int w = 0; w < warps; w++) best = fmaxf(best, red[w]);
    return best;
}

static unsigned pf_blocks(size_t n, unsigned threads) {
    size_t blocks = (n + threads - 1) / threads;
    if (blocks > (1u << 20)) blocks = 1u << 20; /* the kernels loop over the rest */
    return blocks ? (unsigned)blocks : 1u;
}

#define PF_GRID_STRIDE(i, n)                                                                         \
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < (n); i += (size_t)gridDim.x * blockDim.x)

/* ---- kernels --------------------------------------------------------------------------------- */

/* out[row][c] = tokens[ids[row]][c] + positions[past + row % T][c] */
__global__ void pf_embed_kernel(float *out, const void *tokens, const void *positions, int dtype,
                                const int32_t *ids, size_t rows, int T, int past, size_t d) {
    PF_GRID_STRIDE(i, rows * d) {
        size_t row = i / d, c = i % d;
        size_t t = row % (size_t)T;
        out[i] = pf_load(tokens, dtype, (size_t)ids[row] * d + c) + pf_load(positions, dtype, ((size_t)past + t) * d + c);
    }
}

/* One block per row: out = (x - mean) / sqrt(var + eps) * w + b, all in fp32. */
__global__ void pf_layer_norm_kernel(float *out, const float *x, const void *w, const void *b, int dtype, size_t n,
                                     float eps) {
    __shared__ float red[32];
    const float *xr = x + (size_t)blockIdx.x * n;
    float *o = out + (size_t)blockIdx.x * n;
    float s = 0.0f;
    for (size_t i = threadIdx.x; i < n; i += blockDim.x) s += xr[i];
    float mean = pf_block_sum(s, red) / (float)n;
    float v = 0.0f;
    for (size_t i = threadIdx.x; i < n; i += blockDim.x) {
        float dx = xr[i] - mean;
        v += dx * dx;
    }
    float var = pf_block_sum(v, red) / (float)n;
    float inv = 1.0f / sqrtf(var + eps);
    for (size_t i = threadIdx.x; i < n; i += blockDim.x)
        o[i] = (xr[i] - mean) * inv * pf_load(w, dtype, i) + pf_load(b, dtype, i);
}

/* dst (fp16 or bf16) = src (fp32), round to nearest even. */
__global__ void pf_convert_kernel(void *dst, const float *src, size_t n, int dtype) {
    PF_GRID_STRIDE(i, n) {
        if (dtype == PF_CUDA_F16) ((__half *)dst)[i] = __float2half_rn(src[i]);
        else ((__nv_bfloat16 *)dst)[i] = __float2bfloat16_rn(src[i]);
    }
}

/* out[row][o] += bias[o] */
__global__ void pf_add_bias_kernel(float *out, const void *bias, int dtype, size_t rows, size_t n) {
    PF_GRID_STRIDE(i, rows * n) out[i] += pf_load(bias, dtype, i % n);
}

__global__ void pf_activation_kernel(float *x, size_t count, int act) {
    PF_GRID_STRIDE(i, count) {
        float v = x[i];
        switch (act) {
        case PF_CUDA_GELU_TANH: v = 0.5f * v * (1.0f + tanhf(0.7978845608028654f * (v + 0.044715f * v * v * v))); break;
        case PF_CUDA_GELU_ERF: v = 0.5f * v * (1.0f + erff(v * 0.7071067811865476f)); break;
        case PF_CUDA_RELU: v = v > 0.0f ? v : 0.0f; break;
        case PF_CUDA_SILU: v = v / (1.0f + expf(-v)); break;
        default: break;
        }
        x[i] = v;
    }
}

/* x[row][c] += y[row][c] + bias[c] */
__global__ void pf_add_residual_kernel(float *x, const float *y, const void *bias, int dtype, size_t rows, size_t n) {
    PF_GRID_STRIDE(i, rows * n) x[i] += y[i] + pf_load(bias, dtype, i % n);
}

/* sum = in (first) or sum += in */
__global__ void pf_sum_kernel(float *sum, const float *in, size_t n, int first) {
    PF_GRID_STRIDE(i, n) sum[i] = first ? in[i] : sum[i] + in[i];
}

/* Appends this step's k and v rows (parts 1 and 2 of each [q | k | v] row) to the caches
   [batch][cache_len][width] at positions past..past+T-1. */
__global__ void pf_kv_append_kernel(float *k_cache, float *v_cache, const float *qkv, int batch, int T, int past,
                                    int cache_len, size_t width) {
    size_t n = (size_t)batch * T * width;
    PF_GRID_STRIDE(i, n) {
        size_t row = i / width, c = i % width;
        size_t b = row / (size_t)T, t = row % (size_t)T;
        size_t dst = (b * (size_t)cache_len + (size_t)past + t) * width + c;
        const float *src = qkv + row * 3 * width;
        k_cache[dst] = src[width + c];
        v_cache[dst] = src[2 * width + c];
    }
}

/* One block per (query row b*T+t, head, key split): softmax(q k^T * scale) v over the keys
   [begin, end) of this split, where the query sees keys 0..past+t and the split is that range
   cut into gridDim.z near-equal parts. Scores are computed PF_CHUNK keys at a time (one warp per
   key, lanes across head_dim), with a running max m and sum l (online softmax); acc holds
   sum_j exp(s_j - m) v_j. With one split it writes out = acc / l; otherwise the partial
   (m, l, acc) for pf_attention_combine_kernel.
   Dynamic shared memory: q[hd] acc[hd] p[PF_CHUNK] red[32]. */
__global__ void pf_attention_kernel(float *out, float *partials, const float *qkv, const float *k_cache,
                                    const float *v_cache, int T, int past, int heads, int hd, int cache_len,
                                    float scale) {
    extern __shared__ float shared[];
    float *q = shared, *acc = q + hd, *p = acc + hd, *red = p + PF_CHUNK;
    size_t row = blockIdx.x; /* b * T + t */
    int h = blockIdx.y, split = blockIdx.z, splits = gridDim.z;
    int b = (int)(row / (size_t)T), t = (int)(row % (size_t)T);
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
    size_t width = (size_t)heads * hd;
    int len = past + t + 1;
    int per = (len + splits - 1) / splits;
    int begin = split * per, end = begin + per < len ? begin + per : len;
    const float *q_row = qkv + row * 3 * width + (size_t)h * hd;
    const float *k_base = k_cache + (size_t)b * cache_len * width + (size_t)h * hd;
    const float *v_base = v_cache + (size_t)b * cache_len * width + (size_t)h * hd;
    for (int i = threadIdx.x; i < hd; i += blockDim.x) {
        q[i] = q_row[i];
        acc[i] = 0.0f;
    }
    __syncthreads();
    float m = -INFINITY, l = 0.0f;
    for (int j0 = begin; j0 < end; j0 += PF_CHUNK) {
        int n = end - j0 < PF_CHUNK ? end - j0 : PF_CHUNK;
        for (int jj = warp; jj < n; jj += warps) {
            const float *k = k_base + (size_t)(j0 + jj) * width;
            float s = 0.0f;
            for (int i = lane; i < hd; i += 32) s += q[i] * k[i];
            s = pf_warp_sum(s);
            if (lane == 0) p[jj] = s * scale;
        }
        __syncthreads();
        float chunk_max = -INFINITY;
        for (int jj = threadIdx.x; jj < n; jj += blockDim.x) chunk_max = fmaxf(chunk_max, p[jj]);
        chunk_max = pf_block_max(chunk_max, red);
        float m_new = fmaxf(m, chunk_max);
        float alpha = expf(m - m_new); /* 0 on the first chunk (m = -inf) */
        float chunk_sum = 0.0f;
        for (int jj = threadIdx.x; jj < n; jj += blockDim.x) {
            float e = expf(p[jj] - m_new);
            p[jj] = e;
            chunk_sum += e;
        }
        chunk_sum = pf_block_sum(chunk_sum, red); /* its barriers also publish p */
        l = l * alpha + chunk_sum;
        for (int i = threadIdx.x; i < hd; i += blockDim.x) {
            float a = acc[i] * alpha;
            for (int jj = 0; jj < n; jj++) a += p[jj] * v_base[(size_t)(j0 + jj) * width + i];
            acc[i] = a;
        }
        m = m_new;
        __syncthreads(); /* p is rewritten by the next chunk */
    }
    if (splits == 1) {
        float *o = out + row * width + (size_t)h * hd;
        for (int i = threadIdx.x; i < hd; i += blockDim.x) o[i] = acc[i] / l;
    } else {
        float *part = partials + ((row * heads + h) * (size_t)splits + split) * (size_t)(hd + 2);
        if (threadIdx.x == 0) {
            part[0] = m; /* -inf and l = 0 for an empty split */
            part[1] = l;
        }
        for (int i = threadIdx.x; i < hd; i += blockDim.x) part[2 + i] = acc[i];
    }
}

/* One block per (head, query row): out = sum_s acc_s exp(m_s - M) / sum_s l_s exp(m_s - M). */
__global__ void pf_attention_combine_kernel(float *out, const float *partials, int heads, int hd, int splits) {
    int h = blockIdx.x;
    size_t row = blockIdx.y, width = (size_t)heads * hd;
    const float *part = partials + (row * heads + h) * (size_t)splits * (hd + 2);
    float M = -INFINITY;
    for (int s = 0; s < splits; s++) M = fmaxf(M, part[(size_t)s * (hd + 2)]);
    float L = 0.0f;
    for (int s = 0; s < splits; s++) {
        const float *ps = part + (size_t)s * (hd + 2);
        if (ps[1] > 0.0f) L += ps[1] * expf(ps[0] - M);
    }
    float *o = out + row * width + (size_t)h * hd;
    for (int i = threadIdx.x; i < hd; i += blockDim.x) {
        float a = 0.0f;
        for (int s = 0; s < splits; s++) {
            const float *ps = part + (size_t)s * (hd + 2);
            if (ps[1] > 0.0f) a += ps[2 + i] * expf(ps[0] - M);
        }
        o[i] = a / L;
    }
}

/* ---- the C ABI ------------------------------------------------------------------------------- */

extern "C" {

/* Number of visible CUDA devices; on failure *count is 0 and *reason (when given) the runtime's
   constant error string. Any thread; creates no context. */
int pf_cuda_device_count(int *count, const char **reason) {
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess) {
        (void)cudaGetLastError(); /* do not leave the error for a later call */
        *count = 0;
        if (reason) *reason = cudaGetErrorString(e);
        return pf_cuda__code(e);
    }
    *count = n;
    if (reason) *reason = NULL;
    return PF_CUDA_OK;
}

/* Makes `device` current on the calling thread (first), then creates the rank's stream and cuBLAS
   handle on it. On failure *out is NULL and the message is in (message, size). */
int pf_cuda_rank_create(int device, struct pf_cuda_rank **out, char *message, size_t size) {
    *out = NULL;
    struct pf_cuda_rank *st = (struct pf_cuda_rank *)calloc(1, sizeof *st);
    if (!st) return pf_cuda__fail(message, size, PF_CUDA_ERROR_OUT_OF_MEMORY, "calloc", "out of host memory", __LINE__);
    st->device = device;
    int code = PF_CUDA_OK;
    cudaError_t e = cudaSetDevice(device);
    if (e != cudaSuccess) {
        code = pf_cuda__fail(message, size, pf_cuda__code(e), "cudaSetDevice", cudaGetErrorString(e), __LINE__);
    } else if ((e = cudaStreamCreateWithFlags(&st->stream, cudaStreamNonBlocking)) != cudaSuccess) {
        code = pf_cuda__fail(message, size, pf_cuda__code(e), "cudaStreamCreateWithFlags", cudaGetErrorString(e), __LINE__);
    } else {
        cublasStatus_t s = cublasCreate(&st->blas);
        if (s == CUBLAS_STATUS_SUCCESS) s = cublasSetStream(st->blas, st->stream);
        /* Plain fp32 math in the fp32 mode: no TF32 (the tests hold it to 1e-3). */
        if (s == CUBLAS_STATUS_SUCCESS) s = cublasSetMathMode(st->blas, CUBLAS_DEFAULT_MATH);
        if (s != CUBLAS_STATUS_SUCCESS)
            code = pf_cuda__fail(message, size,
                                 s == CUBLAS_STATUS_ALLOC_FAILED ? PF_CUDA_ERROR_OUT_OF_MEMORY : PF_CUDA_ERROR_DEVICE,
                                 "cublasCreate", cublasGetStatusString(s), __LINE__);
    }
    if (code) {
        if (st->blas) cublasDestroy(st->blas);
        if (st->stream) cudaStreamDestroy(st->stream);
        free(st);
        return code;
    }
    *out = st;
    return PF_CUDA_OK;
}

/* Destroys the cuBLAS handle (which waits for the device) and the stream. NULL is fine. */
void pf_cuda_rank_destroy(struct pf_cuda_rank *st) {
    if (!st) return;
    if (st->blas) cublasDestroy(st->blas);
    if (st->stream) cudaStreamDestroy(st->stream);
    free(st);
}

const char *pf_cuda_rank_message(const struct pf_cuda_rank *st) { return st ? st->message : "no CUDA rank"; }

/* Gives cuBLAS a workspace the caller allocated (after the stream was set: setting the stream
   resets it). */
int pf_cuda_set_workspace(struct pf_cuda_rank *st, void *workspace, size_t bytes) {
    PF_CUBLAS_CHECK(st, cublasSetWorkspace, (st->blas, workspace, bytes));
    return PF_CUDA_OK;
}

/* The cuBLAS workspace NVIDIA recommends for Hopper (4 MiB before it). */
size_t pf_cuda_workspace_bytes(void) { return (size_t)32 << 20; }

int pf_cuda_malloc(struct pf_cuda_rank *st, void **ptr, size_t bytes) {
    *ptr = NULL;
    PF_CUDA_CHECK(st, cudaMalloc, (ptr, bytes));
    return PF_CUDA_OK;
}

int pf_cuda_free(struct pf_cuda_rank *st, void *ptr) {
    PF_CUDA_CHECK(st, cudaFree, (ptr));
    return PF_CUDA_OK;
}

/* Host to device, then waits so the host buffer may be reused at once. */
int pf_cuda_upload(struct pf_cuda_rank *st, void *dst, const void *host, size_t bytes) {
    if (!bytes) return PF_CUDA_OK;
    PF_CUDA_CHECK(st, cudaMemcpyAsync, (dst, host, bytes, cudaMemcpyHostToDevice, st->stream));
    PF_CUDA_CHECK(st, cudaStreamSynchronize, (st->stream));
    return PF_CUDA_OK;
}

/* Device to host after the work queued before it; waits for the data. */
int pf_cuda_download(struct pf_cuda_rank *st, void *host, const void *src, size_t bytes) {
    if (!bytes) return PF_CUDA_OK;
    PF_CUDA_CHECK(st, cudaMemcpyAsync, (host, src, bytes, cudaMemcpyDeviceToHost, st->stream));
    PF_CUDA_CHECK(st, cudaStreamSynchronize, (st->stream));
    return PF_CUDA_OK;
}

/* Device to device on the rank's stream (no wait). */
int pf_cuda_copy_async(struct pf_cuda_rank *st, void *dst, const void *src, size_t bytes) {
    if (!bytes) return PF_CUDA_OK;
    PF_CUDA_CHECK(st, cudaMemcpyAsync, (dst, src, bytes, cudaMemcpyDeviceToDevice, st->stream));
    return PF_CUDA_OK;
}

/* From another device's memory (or the same device's) to this rank's, on its stream (no wait);
   works without peer access, which the runtime then stages through the host. */
int pf_cuda_copy_peer_async(struct pf_cuda_rank *st, void *dst, const void *src, int src_device, size_t bytes) {
    if (!bytes) return PF_CUDA_OK;
    PF_CUDA_CHECK(st, cudaMemcpyPeerAsync, (dst, st->device, src, src_device, bytes, st->stream));
    return PF_CUDA_OK;
}

int pf_cuda_stream_sync(struct pf_cuda_rank *st) {
    PF_CUDA_CHECK(st, cudaStreamSynchronize, (st->stream));
    return PF_CUDA_OK;
}

/* *done = 1 when everything queued on the stream has finished (for a wait that can give up). */
int pf_cuda_stream_query(struct pf_cuda_rank *st, int *done) {
    cudaError_t e = cudaStreamQuery(st->stream);
    *done = e == cudaSuccess;
    if (e == cudaSuccess) return PF_CUDA_OK;
    (void)cudaGetLastError(); /* cudaErrorNotReady is no error; clear it */
    if (e == cudaErrorNotReady) return PF_CUDA_OK;
    return pf_cuda__fail(st->message, sizeof st->message, pf_cuda__code(e), "cudaStreamQuery", cudaGetErrorString(e),
                         __LINE__);
}

/* out[b*T+t][:] = tokens[ids[b][t]] + positions[past + t]; ids_host ([batch*T], host) is copied to
   ids_device (room for batch*T int32) first. */
int pf_cuda_embed(struct pf_cuda_rank *st, float *out, const void *tokens, const void *positions, int dtype,
                  const int32_t *ids_host, int32_t *ids_device, int batch, int T, int past, size_t d) {
    size_t rows = (size_t)batch * T;
    if (!rows || !d) return PF_CUDA_OK;
    PF_CUDA_CHECK(st, cudaMemcpyAsync, (ids_device, ids_host, rows * sizeof(int32_t), cudaMemcpyHostToDevice, st->stream));
    pf_embed_kernel<<<pf_blocks(rows * d, PF_THREADS), PF_THREADS, 0, st->stream>>>(out, tokens, positions, dtype,
                                                                                 ids_device, rows, T, past, d);
    PF_CUDA_CHECK_LAUNCH(st, pf_embed_kernel);
    return PF_CUDA_OK;
}

/* out[rows][n] = layer norm of x[rows][n] with weight and bias (bias may be NULL). */
int pf_cuda_layer_norm(struct pf_cuda_rank *st, float *out, const float *x, const void *weight, const void *bias,
                       int dtype, size_t rows, size_t n, float eps) {
    if (!rows || !n) return PF_CUDA_OK;
    for (size_t first = 0; first < rows; first += 65535u * 1024u) { /* gridDim.x is ample; chunk anyway */
        size_t count = rows - first < 65535u * 1024u ? rows - first : 65535u * 1024u;
        pf_layer_norm_kernel<<<(unsigned)count, PF_THREADS, 0, st->stream>>>(out + first * n, x + first * n, weight,
                                                                             bias, dtype, n, eps);
        PF_CUDA_CHECK_LAUNCH(st, pf_layer_norm_kernel);
    }
    return PF_CUDA_OK;
}

/* out[rows][n_out] = x[rows][k] w^T + bias, w [n_out][k] row-major in `dtype`, bias [n_out] or
   NULL. Row-major out = x w^T is column-major out^T = w^T x^T: cuBLAS gets A = w (k x n_out,
   transposed), B = x (k x rows). 16-bit weights: x is first rounded to that dtype into
   x_scratch (room for rows * k of them); the GEMM accumulates in fp32 and writes fp32. fp32
   weights: plain fp32 GEMM (no TF32). k = 0 gives out = bias (zeros without one). */
int pf_cuda_matmul(struct pf_cuda_rank *st, float *out, const float *x, const void *w, const void *bias, int dtype,
                   size_t rows, size_t n_out, size_t k, void *x_scratch) {
    if (!rows || !n_out) return PF_CUDA_OK;
    if (rows > INT32_MAX || n_out > INT32_MAX || k > INT32_MAX)
        return pf_cuda__fail(st->message, sizeof st->message, PF_CUDA_ERROR_DEVICE, "pf_cuda_matmul",
                             "a dimension exceeds INT32_MAX", __LINE__);
    if (!k) {
        PF_CUDA_CHECK(st, cudaMemsetAsync, (out, 0, rows * n_out * sizeof(float), st->stream));
    } else {
        const void *B = x;
        cudaDataType type = CUDA_R_32F;
        if (dtype != PF_CUDA_F32) {
            type = dtype == PF_CUDA_F16 ? CUDA_R_16F : CUDA_R_16BF;
            pf_convert_kernel<<<pf_blocks(rows * k, PF_THREADS), PF_THREADS, 0, st->stream>>>(x_scratch, x, rows * k,
                                                                                           dtype);
            PF_CUDA_CHECK_LAUNCH(st, pf_convert_kernel);
            B = x_scratch;
        }
        const float one = 1.0f, zero = 0.0f;
        PF_CUBLAS_CHECK(st, cublasGemmEx,
                        (st->blas, CUBLAS_OP_T, CUBLAS_OP_N, (int)n_out, (int)rows, (int)k, &one, w, type, (int)k, B,
                         type, (int)k, &zero, out, CUDA_R_32F, (int)n_out, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
    }
    if (bias) {
        pf_add_bias_kernel<<<pf_blocks(rows * n_out, PF_THREADS), PF_THREADS, 0, st->stream>>>(out, bias, dtype, rows,
                                                                                            n_out);
        PF_CUDA_CHECK_LAUNCH(st, pf_add_bias_kernel);
    }
    return PF_CUDA_OK;
}

/* x = act(x) elementwise (PF_CUDA_GELU_TANH, _GELU_ERF, _RELU, _SILU). */
int pf_cuda_activation(struct pf_cuda_rank *st, float *x, size_t count, int act) {
    if (!count) return PF_CUDA_OK;
    pf_activation_kernel<<<pf_blocks(count, PF_THREADS), PF_THREADS, 0, st->stream>>>(x, count, act);
    PF_CUDA_CHECK_LAUNCH(st, pf_activation_kernel);
    return PF_CUDA_OK;
}

/* x[rows][n] += y + bias (bias [n] or NULL). */
int pf_cuda_add_residual(struct pf_cuda_rank *st, float *x, const float *y, const void *bias, int dtype, size_t rows,
                         size_t n) {
    if (!rows || !n) return PF_CUDA_OK;
    pf_add_residual_kernel<<<pf_blocks(rows * n, PF_THREADS), PF_THREADS, 0, st->stream>>>(x, y, bias, dtype, rows, n);
    PF_CUDA_CHECK_LAUNCH(st, pf_add_residual_kernel);
    return PF_CUDA_OK;
}

/* sum = in (first != 0) or sum += in, count floats, both on this rank's device. */
int pf_cuda_sum(struct pf_cuda_rank *st, float *sum, const float *in, size_t count, int first) {
    if (!count) return PF_CUDA_OK;
    pf_sum_kernel<<<pf_blocks(count, PF_THREADS), PF_THREADS, 0, st->stream>>>(sum, in, count, first);
    PF_CUDA_CHECK_LAUNCH(st, pf_sum_kernel);
    return PF_CUDA_OK;
}

/* Decode splits for a query that sees `len` keys: 16 keys a block or more, at most PF_MAX_SPLITS
   blocks per head (small enough that the tiny test fixtures use several). */
static int pf_cuda__splits(int len) {
    int splits = (len + 15) / 16;
    return splits < 1 ? 1 : (splits > PF_MAX_SPLITS ? PF_MAX_SPLITS : splits);
}

/* Floats of the partials buffer pf_cuda_attention needs for decode steps of up to max_batch
   sequences on `heads` heads. */
size_t pf_cuda_attention_scratch_floats(int max_batch, int heads, int head_dim) {
    return (size_t)max_batch * heads * PF_MAX_SPLITS * ((size_t)head_dim + 2);
}

/* Appends k and v of this step to the caches, then out[b*T+t] = softmax(q k^T * scale) v over
   keys 0..past+t, per head. T > 1 (prefill): one block per (query, head). T == 1 (decode): the
   keys are split over several blocks per head whose partial softmax sums are combined, using
   `partials` (pf_cuda_attention_scratch_floats(batch, heads, head_dim) floats). */
int pf_cuda_attention(struct pf_cuda_rank *st, float *out, const float *qkv, float *k_cache, float *v_cache,
                      float *partials, int batch, int T, int past, int heads, int head_dim, int cache_len,
                      float scale) {
    size_t width = (size_t)heads * head_dim;
    if (!width || batch <= 0 || T <= 0) return PF_CUDA_OK;
    if (batch > 65535 || heads > 65535 || (size_t)batch * T > 2147483647u) /* grid limits */
        return pf_cuda__fail(st->message, sizeof st->message, PF_CUDA_ERROR_DEVICE, "pf_cuda_attention",
                             "batch, heads or tokens exceed the grid", __LINE__);
    pf_kv_append_kernel<<<pf_blocks((size_t)batch * T * width, PF_THREADS), PF_THREADS, 0, st->stream>>>(
        k_cache, v_cache, qkv, batch, T, past, cache_len, width);
    PF_CUDA_CHECK_LAUNCH(st, pf_kv_append_kernel);
    size_t shared = ((size_t)2 * head_dim + PF_CHUNK + 32) * sizeof(float);
    int splits = T == 1 && partials ? pf_cuda__splits(past + 1) : 1;
    if (shared > 48 * 1024) {
        PF_CUDA_CHECK(st, cudaFuncSetAttribute,
                      (pf_attention_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)shared));
    }
    dim3 grid((unsigned)((size_t)batch * T), (unsigned)heads, (unsigned)splits);
    pf_attention_kernel<<<grid, PF_ATTN_THREADS, shared, st->stream>>>(out, partials, qkv, k_cache, v_cache, T, past,
                                                                       heads, head_dim, cache_len, scale);
    PF_CUDA_CHECK_LAUNCH(st, pf_attention_kernel);
    if (splits > 1) {
        dim3 combine_grid((unsigned)heads, (unsigned)batch);
        pf_attention_combine_kernel<<<combine_grid, PF_ATTN_THREADS, 0, st->stream>>>(out, partials, heads, head_dim,
                                                                                      splits);
        PF_CUDA_CHECK_LAUNCH(st, pf_attention_combine_kernel);
    }
    return PF_CUDA_OK;
}

/* ---- NCCL ------------------------------------------------------------------------------------ */

/* One communicator per rank over n distinct devices (ncclCommInitAll); comms[i] is rank i's.
   Caller's thread; its current device is restored. */
int pf_cuda_nccl_create(int n, const int *devices, void **comms, char *message, size_t size) {
    ncclComm_t *list = (ncclComm_t *)calloc((size_t)n, sizeof *list);
    if (!list) return pf_cuda__fail(message, size, PF_CUDA_ERROR_OUT_OF_MEMORY, "calloc", "out of host memory", __LINE__);
    int previous = -1;
    if (cudaGetDevice(&previous) != cudaSuccess) {
        previous = -1;
        (void)cudaGetLastError();
    }
    ncclResult_t r = ncclCommInitAll(list, n, devices);
    int now = -1;
    if (cudaGetDevice(&now) != cudaSuccess) (void)cudaGetLastError();
    if (previous >= 0 && now != previous) (void)cudaSetDevice(previous); /* only if NCCL left another */
    if (r != ncclSuccess) {
        free(list);
        return pf_cuda__fail(message, size, PF_CUDA_ERROR_DEVICE, "ncclCommInitAll", ncclGetErrorString(r), __LINE__);
    }
    for (int i = 0; i < n; i++) comms[i] = (void *)list[i];
    free(list);
    return PF_CUDA_OK;
}

/* Frees a communicator whose work has finished (any thread). NULL is fine. */
void pf_cuda_nccl_destroy(void *comm) {
    if (comm) (void)ncclCommDestroy((ncclComm_t)comm);
}

/* Aborts a communicator, ending any of its operations still waiting for a peer (e.g. one that
   failed and will never join); it cannot be used afterwards. On the rank's thread. */
void pf_cuda_nccl_abort(void *comm) {
    if (comm) (void)ncclCommAbort((ncclComm_t)comm);
}

/* x = sum of x over the communicator's ranks, in place, queued on the rank's stream. */
int pf_cuda_nccl_all_reduce(struct pf_cuda_rank *st, void *comm, float *x, size_t count) {
    if (!count) return PF_CUDA_OK;
    PF_NCCL_CHECK(st, ncclAllReduce, (x, x, count, ncclFloat, ncclSum, (ncclComm_t)comm, st->stream));
    return PF_CUDA_OK;
}

} /* extern "C" */
