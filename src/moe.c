#include "internal.h"
/* =============================================================================================== */
/* mixtures of experts: routing, and the experts a rank holds                                      */
/* =============================================================================================== */

/* Expert parallelism: every rank holds whole experts (pf__share.expert_begin, .experts; the
   PF__SPLIT_EXPERTS_* slices), or with expert slicing its columns of every expert; computes the router on the same input with the same whole weight
   (so every rank routes every token alike, bit for bit), runs its own experts on the tokens
   routed to them and adds their weighted outputs into its partial sum, which the block's existing
   all-reduce completes. The routing itself runs on the host from the downloaded router logits. */

/* One step's routing on a rank's host, in one allocation. */
typedef struct pf__routing {
    size_t max_tokens;
    int experts, top_k;
    float *logits;    /* [max_tokens][experts]: the router's, downloaded */
    int32_t *choice;  /* [max_tokens][top_k]: each token's experts, best first */
    float *weight;    /* [max_tokens][top_k]: their routing weights */
    int32_t *first;   /* [experts + 1]: expert e's tokens are rows[first[e] .. first[e + 1]) */
    int32_t *rows;    /* [max_tokens * top_k]: tokens grouped by expert, each group in token order */
    float *scales;    /* [max_tokens * top_k]: the routing weight of each of those */
    float *scores;    /* [2 experts + 1]: one token's scores and choice scores, then the experts' fill positions */
    int32_t *tokens;  /* [max_tokens]: 0, 1, 2, ... (the shared expert's rows) */
    float *gates;     /* [max_tokens]: the shared expert's sigmoid gate of each token */
} pf__routing;

#ifdef PF_TESTING
int pf_testing_moe_fault; /* test hooks (testing_hooks.h): 1 rank 1 routes its tokens to other experts,
                             2 rank 0 drops its first expert's tokens, 3 it adds them twice */
#endif

static pf__routing *pf__routing_new(size_t max_tokens, int experts, int top_k) {
    size_t picks = max_tokens * (size_t)top_k;
    size_t bytes = sizeof(pf__routing) + max_tokens * (size_t)experts * sizeof(float) + picks * 2 * (sizeof(int32_t) + sizeof(float)) +
                   ((size_t)experts + 1) * sizeof(int32_t) + (2 * (size_t)experts + 1) * sizeof(float) +
                   max_tokens * (sizeof(int32_t) + sizeof(float));
    pf__routing *rt = (pf__routing *)malloc(bytes);
    if (!rt) return NULL;
    rt->max_tokens = max_tokens;
    rt->experts = experts;
    rt->top_k = top_k;
    rt->logits = (float *)(rt + 1);
    rt->weight = rt->logits + max_tokens * (size_t)experts;
    rt->scales = rt->weight + picks;
    rt->choice = (int32_t *)(rt->scales + picks);
    rt->rows = rt->choice + picks;
    rt->first = rt->rows + picks;
    rt->scores = (float *)(rt->first + experts + 1);
    rt->gates = rt->scores + 2 * (size_t)experts + 1;
    rt->tokens = (int32_t *)(rt->gates + max_tokens);
    for (size_t t = 0; t < max_tokens; t++) rt->tokens[t] = (int32_t)t;
    return rt;
}

/* The index of the best of values[0..n) not yet in taken[0..count) (the lower index first on
   equal values), or -1. */
static int pf__best_untaken(const float *values, int n, const int32_t *taken, int count) {
    int best = -1;
    for (int e = 0; e < n; e++) {
        int used = 0;
        for (int i = 0; i < count && !used; i++) used = taken[i] == e;
        if (!used && values[e] == values[e] && (best < 0 || values[e] > values[best])) best = e;
    }
    return best;
}

/* The experts of groups other than the c->router_topk_groups best lose any chance: their choice
   scores become NaN (never the best). A group's score: its best choice score, or the sum of its
   2 best (DeepSeek V3). */
static void pf__mask_groups(const pf__config *c, float *choose) {
    int G = c->router_groups, per = c->num_experts / G;
    float group_score[256];
    int32_t kept[256];
    for (int g = 0; g < G; g++) {
        const float *s = choose + g * per;
        int32_t first = (int32_t)pf__best_untaken(s, per, NULL, 0);
        group_score[g] = s[first];
        if (c->router_group_top2 && per > 1) group_score[g] += s[pf__best_untaken(s, per, &first, 1)];
    }
    for (int j = 0; j < c->router_topk_groups; j++) kept[j] = (int32_t)pf__best_untaken(group_score, G, kept, j);
    for (int g = 0; g < G; g++) {
        int keep = 0;
        for (int j = 0; j < c->router_topk_groups; j++) keep |= kept[j] == g;
        for (int e = 0; !keep && e < per; e++) choose[g * per + e] = NAN;
    }
}

/* PhiMoE's sparsemixer (transformers' sparsemixer, not training): the best logit, then the best of
   the others, each weighed by a softmax over the logits close to it, (best - s) / max(|s|, best) at
   most 2 jitter (a NaN of 0 / 0 counts as close), the first choice masked out of the second's. */
static void pf__route_sparsemixer(const pf__config *c, const float *logits, int32_t *choice, float *weight) {
    int E = c->num_experts;
    float two_jitter = (float)(2 * c->router_jitter);
    for (int j = 0; j < 2; j++) {
        int best = pf__best_untaken(logits, E, choice, j);
        float top = logits[best], sum = 0;
        for (int e = 0; e < E; e++) {
            float s = logits[e], scale = fabsf(s) > top ? fabsf(s) : top;
            if (!((top - s) / scale > two_jitter) && !(j == 1 && e == choice[0])) sum += expf(s - top);
        }
        choice[j] = best;
        weight[j] = 1.0f / sum;
    }
}

/* Token t's experts and weights from its router logits: scores (softmax over the experts, or
   sigmoid, or the logits themselves where a softmax over the chosen follows); the experts chosen by
   score plus choice_bias where the family has one, within the best groups where it groups them;
   the top_k (the lower index first on equal scores) weighed by their scores (gpt-oss: a softmax
   over the chosen logits; Llama 4: each chosen logit's sigmoid), renormalised to sum 1 where the family does, times routed_scaling.
   scores holds 2 E floats. */
static void pf__route_token(const pf__config *c, const float *logits, const float *choice_bias, int32_t *choice,
                            float *weight, float *scores) {
    int E = c->num_experts, k = c->experts_per_token;
    float *choose = scores + E;
    if (c->router_sparsemixer) {
        pf__route_sparsemixer(c, logits, choice, weight);
        return;
    }
    if (c->router_topk_softmax || c->router_topk_sigmoid) {
        memcpy(scores, logits, (size_t)E * sizeof(float));
    } else if (c->router_sigmoid) {
        for (int e = 0; e < E; e++) scores[e] = 1.0f / (1.0f + expf(-logits[e]));
    } else {
        float max = logits[0], sum = 0;
        for (int e = 1; e < E; e++) max = logits[e] > max ? logits[e] : max;
        for (int e = 0; e < E; e++) sum += scores[e] = expf(logits[e] - max);
        for (int e = 0; e < E; e++) scores[e] /= sum;
    }
    for (int e = 0; e < E; e++) choose[e] = choice_bias ? scores[e] + choice_bias[e] : scores[e];
    if (c->router_groups > 1) pf__mask_groups(c, choose);
    for (int j = 0; j < k; j++) {
        int best = pf__best_untaken(choose, E, choice, j);
        choice[j] = best;
        weight[j] = scores[best];
    }
    if (c->router_topk_softmax) { /* a softmax over the chosen logits, the best first */
        float sum = 0;
        for (int j = 0; j < k; j++) sum += weight[j] = expf(weight[j] - scores[choice[0]]);
        for (int j = 0; j < k; j++) weight[j] /= sum;
    } else if (c->router_topk_sigmoid) { /* each chosen logit's sigmoid (Llama 4) */
        for (int j = 0; j < k; j++) weight[j] = 1.0f / (1.0f + expf(-weight[j]));
    }
    float total = 0;
    for (int j = 0; j < k; j++) total += weight[j];
    for (int j = 0; j < k; j++) {
        if (c->norm_topk_prob) weight[j] /= total;
        if (c->routed_scaling) weight[j] *= (float)c->routed_scaling;
    }
}

/* The routing of n tokens from rt->logits: each token's choices, then the tokens grouped by expert. */
static void pf__route(const pf__config *c, pf__routing *rt, size_t n, const float *choice_bias, float *scores) {
    int E = rt->experts, k = rt->top_k;
    memset(rt->first, 0, ((size_t)E + 1) * sizeof(int32_t));
    for (size_t t = 0; t < n; t++) {
        pf__route_token(c, rt->logits + t * (size_t)E, choice_bias, rt->choice + t * (size_t)k, rt->weight + t * (size_t)k,
                        scores);
        for (int j = 0; j < k; j++) rt->first[rt->choice[t * (size_t)k + (size_t)j] + 1]++;
    }
    for (int e = 0; e < E; e++) rt->first[e + 1] += rt->first[e];
    int32_t *next = (int32_t *)scores; /* scores are spent: the fill position of each expert */
    for (int e = 0; e < E; e++) next[e] = rt->first[e];
    for (size_t t = 0; t < n; t++)
        for (int j = 0; j < k; j++) {
            int32_t e = rt->choice[t * (size_t)k + (size_t)j], at = next[e]++;
            rt->rows[at] = (int32_t)t;
            rt->scales[at] = rt->weight[t * (size_t)k + (size_t)j];
        }
}

/* Expert e's (local index) rows of a PF__SPLIT_EXPERTS_* weight, as a weight of their own. */
static pf__weight pf__expert_view(const pf__weight *w, int local, int held) {
    pf__weight v = *w;
    if (!w->data) return v; /* an absent bias */
    v.rows = w->rows / (size_t)held;
    v.data = (char *)w->data + pf__weight_bytes(w->dtype, (size_t)local * v.rows, w->cols);
    return v;
}

/* part[N][hidden] += gate * shared(h) for the rank's columns of the shared expert: a dense gated
   MLP every token runs, split by columns. Its gate is sigmoid(h w_g) where the family has one
   (Qwen2-MoE's shared_expert_gate: a scalar per token from a whole [1, hidden] weight, on the host
   as the routing is), else 1 (GraniteMoeShared's shared_mlp). */
static void pf__rank_shared_expert(pf__rank *r, const pf__weight *L, const float *h, float *part, size_t N) {
    const pf__backend *be = r->backend;
    pf__routing *rt = r->routing;
    size_t d = (size_t)r->group->model->config.hidden_size, width = (size_t)r->share.shared_width;
    const float *gates = NULL; /* none: the output added as it is */
    if (L[PF__SLOT_SHARED_EXPERT_GATE].data) {
        be->matmul(r, r->router, h, &L[PF__SLOT_SHARED_EXPERT_GATE], NULL, N);
        be->download(r, rt->gates, r->router, N * sizeof(float));
        for (size_t t = 0; t < N; t++) rt->gates[t] = 1.0f / (1.0f + expf(-rt->gates[t]));
        gates = rt->gates;
    }
    if (!width) return; /* more ranks than the shared expert's columns */
    be->matmul(r, r->expert_mid, h, &L[PF__SLOT_SHARED_IN_WEIGHT], NULL, N);
    be->gated_activation(r, r->expert_act, r->expert_mid, N, width, r->group->model->config.activation);
    be->matmul(r, r->expert_out, r->expert_act, &L[PF__SLOT_SHARED_DOWN_WEIGHT], NULL, N);
    be->scatter_add_rows(r, part, r->expert_out, rt->tokens, gates, N, d);
}

/* part[N][hidden] = sum over the rank's experts e of routing weight * expert_e(h) for the tokens
   routed to e (zeros for the others): the layer's share of this rank, summed over the ranks by the
   caller's all-reduce. h is the same on every rank, and so is the routing. */
PF_PRIVATE void pf__rank_experts(pf__rank *r, const pf__weight *L, int l, const float *h, float *part, size_t N) {
    const pf__config *c = &r->group->model->config;
    const pf__backend *be = r->backend;
    size_t d = (size_t)c->hidden_size, E = (size_t)c->num_experts, width = (size_t)r->share.expert_width;
    if (!r->routing || r->routing->max_tokens < N) {
        free(r->routing);
        r->routing = pf__routing_new(r->group->max_tokens > N ? r->group->max_tokens : N, c->num_experts, c->experts_per_token);
        if (!r->routing) {
            pf__rank_fail(r, PF_ERROR_OUT_OF_MEMORY, "out of host memory for the routing of %zu tokens", N);
            return;
        }
    }
    pf__routing *rt = r->routing;
    /* router = h Wr^T, whole on every rank; each token's experts from it, on the host */
    be->matmul(r, r->router, h, &L[PF__SLOT_ROUTER_WEIGHT], L[PF__SLOT_ROUTER_BIAS].data ? &L[PF__SLOT_ROUTER_BIAS] : NULL, N);
    be->download(r, rt->logits, r->router, N * E * sizeof(float));
    const float *choice_bias = r->group->model->router_choice_bias;
    pf__route(c, rt, N, choice_bias ? choice_bias + (size_t)l * E : NULL, rt->scores);
    int faulty = 0;
#ifdef PF_TESTING
    faulty = pf_testing_moe_fault;
    if (faulty == 1 && r->index == 1) /* this rank's tokens go to the next expert */
        for (size_t i = 0; i < N * (size_t)rt->top_k; i++) rt->rows[i] = (rt->rows[i] + 1) % (int32_t)N;
#endif
    be->scale(r, part, N * d, 0.0f);
    const pf__weight *gate_up = &L[PF__SLOT_EXPERTS_GATE_UP], *down = &L[PF__SLOT_EXPERTS_DOWN];
    int held = r->share.experts;
    for (int local = 0; local < held && !pf__rank_failed(r); local++) {
        int e = r->share.expert_begin + local;
        size_t first = (size_t)rt->first[e], n = (size_t)rt->first[e + 1] - first;
        if (!n || !width) continue; /* decode reads only the chosen experts' weights */
        if (faulty == 2 && r->index == 0 && local == 0) continue;
        /* mid = gather(h) Wgu_e^T; act = act(gate) * up; out = act Wd_e^T; part[token] += weight * out */
        pf__weight gu = pf__expert_view(gate_up, local, held), dn = pf__expert_view(down, local, held);
        pf__weight gu_bias = pf__expert_view(&L[PF__SLOT_EXPERTS_GATE_UP_BIAS], local, held);
        pf__weight dn_bias = pf__expert_view(&L[PF__SLOT_EXPERTS_DOWN_BIAS], local, held);
        const float *scales = rt->scales + first;
        /* in = h[token], or weight * h[token] with the output added as it is (Llama 4) */
        be->gather_rows(r, r->expert_in, h, rt->rows + first, c->experts_scale_input ? scales : NULL, n, d);
        if (c->experts_scale_input) scales = NULL; /* the weight went into the input */
        be->matmul(r, r->expert_mid, r->expert_in, &gu, gu_bias.data ? &gu_bias : NULL, n);
        if (c->swiglu_limit > 0)
            be->clamped_swiglu(r, r->expert_act, r->expert_mid, n, width, (float)c->swiglu_alpha, (float)c->swiglu_limit);
        else
            be->gated_activation(r, r->expert_act, r->expert_mid, n, width, c->activation);
        /* the down bias once per expert: on the rank holding its first columns */
        be->matmul(r, r->expert_out, r->expert_act, &dn, r->share.expert_col_begin ? NULL : dn_bias.data ? &dn_bias : NULL, n);
        be->scatter_add_rows(r, part, r->expert_out, rt->rows + first, scales, n, d);
        if (faulty == 3 && r->index == 0 && local == 0)
            be->scatter_add_rows(r, part, r->expert_out, rt->rows + first, scales, n, d);
    }
    if (c->shared_intermediate_size > 0) pf__rank_shared_expert(r, L, h, part, N);
}
