/* Reformer (model_type "reformer"), its host side: torch's CPU random generator, whose normal draws
   after torch.manual_seed(hash_seed) are LSH's rotations, the hashing into buckets and the keys
   each query sees, as transformers' modeling_reformer.py computes them in eval mode (the layers'
   forward: forward.c's pf__rank_reformer). */
#include "internal.h"

/* ---- torch's CPU generator (at::CPUGeneratorImpl): mt19937, its uniform and normal draws ---- */

enum { PF__MT_N = 624, PF__MT_M = 397 };

typedef struct pf__torch_generator {
    uint32_t state[PF__MT_N];
    int next, left;
    int has_normal;     /* normal_distribution<double>'s second Box-Muller sample, kept for the next draw */
    double next_normal;
} pf__torch_generator;

/* torch.manual_seed(seed): mt19937 seeded with the seed's low 32 bits, no normal sample kept. */
static void pf__torch_seed(pf__torch_generator *g, uint64_t seed) {
    g->state[0] = (uint32_t)(seed & 0xffffffffu);
    for (uint32_t j = 1; j < PF__MT_N; j++) g->state[j] = 1812433253u * (g->state[j - 1] ^ (g->state[j - 1] >> 30)) + j;
    g->left = 1;
    g->next = 0;
    g->has_normal = 0;
}

static uint32_t pf__mt_twist(uint32_t u, uint32_t v) {
    uint32_t mixed = (u & 0x80000000u) | (v & 0x7fffffffu);
    return (mixed >> 1) ^ (v & 1u ? 0x9908b0dfu : 0u);
}

/* The next 32 random bits (mt19937, tempered). */
static uint32_t pf__torch_random(pf__torch_generator *g) {
    if (--g->left == 0) { /* the state's next 624 words */
        uint32_t *p = g->state;
        g->left = PF__MT_N;
        g->next = 0;
        for (int j = PF__MT_N - PF__MT_M + 1; --j; p++) *p = p[PF__MT_M] ^ pf__mt_twist(p[0], p[1]);
        for (int j = PF__MT_M; --j; p++) *p = p[PF__MT_M - PF__MT_N] ^ pf__mt_twist(p[0], p[1]);
        *p = p[PF__MT_M - PF__MT_N] ^ pf__mt_twist(p[0], g->state[0]);
    }
    uint32_t y = g->state[g->next++];
    y ^= y >> 11;
    y ^= (y << 7) & 0x9d2c5680u;
    y ^= (y << 15) & 0xefc60000u;
    y ^= y >> 18;
    return y;
}

/* uniform_real_distribution<float>(0, 1): the low 24 bits of one draw, exact in fp32. */
static float pf__torch_uniform_float(pf__torch_generator *g) {
    return (float)(pf__torch_random(g) & 0xffffffu) * (1.0f / 16777216.0f);
}

/* uniform_real_distribution<double>(0, 1): the low 53 bits of random64 (the first draw high). */
static double pf__torch_uniform_double(pf__torch_generator *g) {
    uint64_t hi = pf__torch_random(g), lo = pf__torch_random(g);
    return (double)(((hi << 32) | lo) & ((UINT64_C(1) << 53) - 1)) * (1.0 / 9007199254740992.0);
}

/* normal_distribution<double>(0, 1): Box-Muller in fp64, the sine's sample kept for the next call. */
static double pf__torch_normal_double(pf__torch_generator *g) {
    if (g->has_normal) {
        g->has_normal = 0;
        return g->next_normal;
    }
    double u1 = pf__torch_uniform_double(g), u2 = pf__torch_uniform_double(g);
    double radius = sqrt(-2.0 * log1p(-u2)), theta = 2.0 * 3.14159265358979323846 * u1;
    g->next_normal = radius * sin(theta);
    g->has_normal = 1;
    return radius * cos(theta);
}

/* A float's bits and back. */
static uint32_t pf__float_bits(float x) {
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    return u;
}
static float pf__bits_float(uint32_t u) {
    float x;
    memcpy(&x, &u, sizeof x);
    return x;
}

/* The natural log of x > 0 as torch's AVX2 normal kernel computes it (the cephes polynomial of
   avx_mathfun.h's log256_ps, with the multiply-adds torch's build fuses: fmaf where it has an FMA). */
static float pf__torch_log(float x) {
    x = x > pf__bits_float(0x00800000u) ? x : pf__bits_float(0x00800000u); /* no denormals */
    int32_t exponent = (int32_t)(pf__float_bits(x) >> 23) - 0x7f;
    x = pf__bits_float((pf__float_bits(x) & ~0x7f800000u) | pf__float_bits(0.5f));
    float e = (float)exponent + 1.0f;
    int below = x < 0.707106781186547524f; /* x < sqrt(1/2): x = 2x - 1, e - 1 */
    float kept = below ? x : 0.0f;
    x = x - 1.0f;
    e = e - (below ? 1.0f : 0.0f);
    x = x + kept;
    float z = x * x;
    static const float p[9] = {7.0376836292E-2f, -1.1514610310E-1f, 1.1676998740E-1f, -1.2420140846E-1f, 1.4249322787E-1f,
                               -1.6668057665E-1f, 2.0000714765E-1f, -2.4999993993E-1f, 3.3333331174E-1f};
    float y = p[0];
    for (int i = 1; i < 9; i++) y = fmaf(y, x, p[i]);
    y = y * x;
    y = y * z;
    y = fmaf(e, -2.12194440e-4f, y);
    y = fmaf(-z, 0.5f, y);
    x = x + y;
    return fmaf(e, 0.693359375f, x);
}

/* sin and cos of x >= 0 as torch's AVX2 normal kernel computes them (avx_mathfun.h's
   sincos256_ps: octant by 4 / pi, the three-part reduction, cephes' polynomials; fused as built). */
static void pf__torch_sincos(float x, float *sine, float *cosine) {
    int32_t j = (int32_t)(x * 1.27323954473516f); /* truncated, as cvttps2dq */
    j = (j + 1) & ~1;
    float y = (float)j;
    uint32_t sin_sign = (uint32_t)(j & 4) << 29, cos_sign = (uint32_t)(~(j - 2) & 4) << 29;
    int sine_poly = (j & 2) == 0; /* the sine's polynomial gives the sine here, else the cosine's */
    x = fmaf(y, -0.78515625f, x);
    x = fmaf(y, -2.4187564849853515625e-4f, x);
    x = fmaf(y, -3.77489497744594108e-8f, x);
    float z = x * x;
    float c = fmaf(fmaf(2.443315711809948E-005f, z, -1.388731625493765E-003f), z, 4.166664568298827E-002f);
    c = c * z;
    c = fmaf(c, z, -(z * 0.5f)) + 1.0f;
    float s = fmaf(fmaf(-1.9515295891E-4f, z, 8.3321608736E-3f), z, -1.6666654611E-1f);
    s = s * z;
    s = fmaf(s, x, x);
    *sine = pf__bits_float(pf__float_bits(sine_poly ? s : c) ^ sin_sign);
    *cosine = pf__bits_float(pf__float_bits(sine_poly ? c : s) ^ cos_sign);
}

/* normal_fill_16 on 16 uniforms, pairs (j, j + 8), as torch's AVX2 kernel computes them in fp32
   (the one its dispatch runs on AVX2 and AVX-512 CPUs alike: DistributionKernels has no AVX-512
   build): radius sqrt(-2 log(1 - u_j)), angle 2 pi u_{j + 8} with 2 pi rounded to fp32 first. */
static void pf__torch_normal_fill_16(float *data) {
    for (int j = 0; j < 8; j++) {
        float u1 = 1.0f - data[j], u2 = data[j + 8], sine, cosine;
        float radius = sqrtf(-2.0f * pf__torch_log(u1));
        pf__torch_sincos((float)(2.0 * 3.14159265358979323846) * u2, &sine, &cosine);
        data[j] = radius * cosine;
        data[j + 8] = radius * sine;
    }
}

/* torch.randn(count) (fp32, CPU) right after torch.manual_seed(seed), into out: 16 values or more
   are uniforms turned normal 16 at a time (the last 16 drawn again and redone when 16 does not
   divide the count); fewer are normal_distribution<double> draws rounded to fp32. */
PF_PRIVATE void pf__torch_randn(uint64_t seed, float *out, size_t count) {
    pf__torch_generator g;
    pf__torch_seed(&g, seed);
    if (count < 16) {
        for (size_t i = 0; i < count; i++) out[i] = (float)pf__torch_normal_double(&g);
        return;
    }
    for (size_t i = 0; i < count; i++) out[i] = pf__torch_uniform_float(&g);
    for (size_t i = 0; i + 16 <= count; i += 16) pf__torch_normal_fill_16(out + i);
    if (count % 16) {
        float *last = out + count - 16;
        for (int i = 0; i < 16; i++) last[i] = pf__torch_uniform_float(&g);
        pf__torch_normal_fill_16(last);
    }
}

#ifdef PF_TESTING
void pf_testing_torch_randn(uint64_t seed, float *out, size_t count);
void pf_testing_torch_randn(uint64_t seed, float *out, size_t count) { pf__torch_randn(seed, out, count); }
#endif

/* ---- hashing into buckets, and the keys each query sees ------------------------------------ */

PF_PRIVATE void pf__reformer_host_free(struct pf__reformer_host *h) {
    if (!h) return;
    free(h->rotations), free(h->qk), free(h->staging), free(h->ids), free(h->buckets), free(h->sorted);
    free(h->slot_of), free(h->order), free(h->keys), free(h->gather);
    free(h);
}

/* The padded row length transformers runs a row of `length` tokens at: a multiple of the chunk
   lengths' least common multiple once the row is longer than the shorter chunk. */
PF_PRIVATE int pf__reformer_padded_length(const pf__config *c, int length) {
    int lcm = c->reformer_lcm_chunk, shortest = c->reformer_min_chunk;
    return length % lcm && length > shortest ? length + lcm - length % lcm : length;
}

/* The rows a rank's Reformer buffers hold: the longest row padded. */
PF_PRIVATE size_t pf__reformer_rows(const pf__config *c, int cache_len) {
    return (size_t)cache_len + (size_t)c->reformer_lcm_chunk;
}

/* The keys a query lists at most: its chunk and the chunks around it, or a whole row that fits in one chunk. */
PF_PRIVATE size_t pf__reformer_listed(const pf__config *c) {
    size_t lsh = (size_t)c->reformer_lsh_chunk * (size_t)(1 + c->reformer_lsh_before + c->reformer_lsh_after);
    size_t local = (size_t)c->reformer_local_chunk * (size_t)(1 + c->reformer_local_before + c->reformer_local_after);
    return lsh > local ? lsh : local;
}

/* The rotation draws, hashes and buckets: how many floats torch draws for all heads. */
static size_t pf__reformer_rotation_half(const pf__config *c) {
    size_t sum = 0;
    for (int i = 0; i < c->reformer_bucket_factors; i++) sum += (size_t)c->reformer_buckets[i];
    return sum / 2;
}

/* The rank's host buffers, and its heads' rotations: torch.randn((heads, head_dim, num_hashes,
   rotation_size / 2)) after torch.manual_seed(hash_seed), the same for every LSH layer and call. */
PF_PRIVATE struct pf__reformer_host *pf__reformer_host_new(const pf__config *c, int cache_len, int head_begin, int heads) {
    struct pf__reformer_host *h = (struct pf__reformer_host *)calloc(1, sizeof *h);
    if (!h) return NULL;
    size_t rows = pf__reformer_rows(c, cache_len), R = (size_t)c->reformer_hashes, hd = (size_t)c->head_dim;
    size_t half = pf__reformer_rotation_half(c), all = (size_t)c->num_heads * hd * R * half;
    size_t mine = (size_t)heads * hd * R * half, width = (size_t)heads * hd;
    h->rotations = (float *)malloc((mine ? mine : 1) * sizeof(float));
    h->qk = (float *)malloc((rows * width + 1) * sizeof(float));
    h->staging = (float *)malloc(rows * 2 * (size_t)c->hidden_size * sizeof(float));
    h->ids = (int32_t *)malloc(rows * sizeof(int32_t));
    h->buckets = (int32_t *)malloc(R * rows * sizeof(int32_t));
    h->sorted = (int32_t *)malloc(R * rows * sizeof(int32_t));
    h->slot_of = (int32_t *)malloc(R * rows * sizeof(int32_t));
    h->order = (int64_t *)malloc(R * rows * sizeof(int64_t));
    h->keys = (int32_t *)malloc(((size_t)heads * rows * R * pf__reformer_listed(c) + 1) * sizeof(int32_t));
    h->gather = (int32_t *)malloc(2 * rows * sizeof(int32_t));
    float *drawn = (float *)malloc((all ? all : 1) * sizeof(float));
    if (!h->rotations || !h->qk || !h->staging || !h->ids || !h->buckets || !h->sorted || !h->slot_of || !h->order || !h->keys ||
        !h->gather || !drawn) {
        free(drawn);
        pf__reformer_host_free(h);
        return NULL;
    }
    pf__torch_randn(c->reformer_hash_seed, drawn, all);
    memcpy(h->rotations, drawn + (size_t)head_begin * hd * R * half, mine * sizeof(float));
    free(drawn);
    return h;
}

/* A listed key: its position and how it is masked (pf__backend.reformer_attend). */
#define PF__REFORMER_KEY(position, code) ((int32_t)(position) * 4 + (code))

/* The code of key position k for query position t of a row of `length` real tokens: a pad or
   (causal) a later key masked, the query itself (LSH alone) marked. */
static int pf__reformer_key_code(const pf__config *c, int lsh, int t, int k, int length) {
    if (lsh && k == t) return PF__REFORMER_SELF;
    return k >= length || (c->reformer_causal && k > t) ? PF__REFORMER_MASKED : PF__REFORMER_PLAIN;
}

/* argmax over [x, -x] (x: n values): the first maximum, as torch.argmax. */
static int pf__reformer_argmax(const float *x, int n) {
    int best = 0;
    float top = x[0];
    for (int i = 1; i < 2 * n; i++) {
        float v = i < n ? x[i] : -x[i - n];
        if (v > top) top = v, best = i;
    }
    return best;
}

/* One head's buckets of a row (qk: the rank's heads' rows, head h), the rounds' offsets added:
   the rotated vector's argmax over [r, -r] per factor of num_buckets, the factors' argmaxes
   combined as mixed-radix digits; pads (when the row was padded) in a bucket of their own. */
static void pf__reformer_hash(const pf__config *c, struct pf__reformer_host *host, int h, int heads, int len,
                              int length) {
    int R = c->reformer_hashes, hd = c->head_dim, half = (int)pf__reformer_rotation_half(c);
    int total = 1;
    for (int i = 0; i < c->reformer_bucket_factors; i++) total *= c->reformer_buckets[i];
    int padded = len > length, per_round = total + padded;
    const float *rot = host->rotations + (size_t)h * hd * R * half;
    float rotated[PF__REFORMER_MAX_ROTATION];
    for (int r = 0; r < R; r++)
        for (int t = 0; t < len; t++) {
            const float *v = host->qk + ((size_t)t * heads + h) * hd;
            for (int i = 0; i < half; i++) {
                float acc = 0.0f;
                for (int e = 0; e < hd; e++) acc += v[e] * rot[((size_t)e * R + r) * half + i];
                rotated[i] = acc;
            }
            int bucket = 0, place = 1, first = 0;
            for (int f = 0; f < c->reformer_bucket_factors; f++) {
                int n = c->reformer_buckets[f] / 2;
                bucket += place * pf__reformer_argmax(rotated + first, n);
                first += n;
                place *= c->reformer_buckets[f];
            }
            if (t >= length) bucket = total; /* a pad's bucket */
            host->buckets[(size_t)r * len + t] = r * per_round + bucket;
        }
}

static int pf__reformer_compare(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* The bucket order of a head's round-and-position indices i = r * len + t: by bucket, then by i
   (transformers' stable argsort: its keys are unique, so any sort gives its order); slot_of
   inverts it. */
static void pf__reformer_sort(struct pf__reformer_host *host, int count) {
    for (int i = 0; i < count; i++) host->order[i] = (int64_t)host->buckets[i] * count + i;
    qsort(host->order, (size_t)count, sizeof(int64_t), pf__reformer_compare);
    for (int s = 0; s < count; s++) {
        host->sorted[s] = (int32_t)(host->order[s] % count);
        host->slot_of[host->sorted[s]] = s;
    }
}

/* The keys of every query of the rank's heads for an LSH or local layer over a row of len
   positions (length real): keys[((h * len + t) * rounds + r) * listed + j]. Returns listed;
   *rounds the hash rounds the layer combines (1 where the row fits in a chunk). */
PF_PRIVATE int pf__reformer_keys(const pf__config *c, struct pf__reformer_host *host, int lsh, int heads, int len,
                                 int length, int *rounds) {
    int chunk = lsh ? c->reformer_lsh_chunk : c->reformer_local_chunk;
    int before = lsh ? c->reformer_lsh_before : c->reformer_local_before;
    int after = lsh ? c->reformer_lsh_after : c->reformer_local_after;
    if (len <= chunk) { /* transformers' full attention over the row: one round, every key */
        *rounds = 1;
        for (int h = 0; h < heads; h++)
            for (int t = 0; t < len; t++)
                for (int k = 0; k < len; k++)
                    host->keys[((size_t)h * len + t) * len + k] = PF__REFORMER_KEY(k, pf__reformer_key_code(c, lsh, t, k, length));
        return len;
    }
    int listed = chunk * (1 + before + after), R = lsh ? c->reformer_hashes : 1, n = R * len, chunks = n / chunk;
    *rounds = R;
    for (int h = 0; h < heads; h++) {
        if (lsh) {
            pf__reformer_hash(c, host, h, heads, len, length);
            pf__reformer_sort(host, n);
        } else {
            for (int i = 0; i < n; i++) host->sorted[i] = host->slot_of[i] = i;
        }
        for (int r = 0; r < R; r++)
            for (int t = 0; t < len; t++) {
                int slot = host->slot_of[r * len + t], own = slot / chunk;
                int32_t *out = host->keys + (((size_t)h * len + t) * R + r) * listed;
                for (int w = -before, j = 0; w <= after; w++) { /* the chunks around, wrapping over all rounds' */
                    int from = ((own + w) % chunks + chunks) % chunks * chunk;
                    for (int i = 0; i < chunk; i++, j++) {
                        int k = host->sorted[from + i] % len;
                        out[j] = PF__REFORMER_KEY(k, pf__reformer_key_code(c, lsh, t, k, length));
                    }
                }
            }
    }
    return listed;
}
