/* The library's test hooks: the functions and variables parallelformers.c defines only when
   compiled with -DPF_TESTING (build/parallelformers_testing.o), declared here once for the test
   programs that link it. Each declaration must be the definition's own, word for word: the
   compiler cannot compare them across files, and a mismatch is undefined behaviour. To have it
   compare them (any difference is then a "conflicting types" error), compile the library with
   this header in front of it, once with -DPF_CUDA (the CUDA counters) and once without:
       cc -std=c99 -Wall -Wextra -pthread -D_POSIX_C_SOURCE=200809L -DPF_TESTING -DPF_CUDA \
          -include test/testing_hooks.h -fsyntax-only parallelformers.c */
#ifndef PF_TESTING_HOOKS_H
#define PF_TESTING_HOOKS_H

#include <stddef.h>
#include <stdint.h>

#include "../parallelformers.h"

/* ---- policies ---- */

/* The i-th compiled-in model_type (rows, then aliases); NULL past the last. */
const char *pf_testing_builtin_model_type(int i);
/* pf_policy_to_json for every compiled-in model_type, the dual and speech ones too. */
pf_result pf_testing_policy_json(const char *model_type, char *json, size_t capacity, size_t *length);

/* ---- Reformer ---- */

/* torch.randn(count) in fp32 on the CPU right after torch.manual_seed(seed), into out (src/reformer.c). */
void pf_testing_torch_randn(uint64_t seed, float *out, size_t count);

/* ---- failures injected into the ranks ---- */

/* Mixtures of experts' faults (src/moe.c): 1 rank 1 routes its tokens otherwise, 2 rank 0 drops
   its first expert's contribution, 3 it adds it twice; 0 none. */
extern int pf_testing_moe_fault;
/* Rank pf_testing_fail_rank (-1: none) fails its pf_testing_fail_countdown-th matmul. */
extern int pf_testing_fail_rank, pf_testing_fail_countdown;
/* Nonzero: a follower's next step (pf_follow) fails before its ranks start; reset once used. */
extern int pf_testing_follower_refuses;
/* On process 0 of a driven group: {process, rank, countdown}, process > 0: that follower's
   pf_testing_fail_rank and pf_testing_fail_countdown are set with the next step it gets; then
   process is reset to 0. Set process last (the batcher's thread reads it). */
extern int pf_testing_follower_fail[3];
/* Rank pf_testing_skip_reduce_rank (-1: none) skips its pf_testing_skip_reduce_countdown-th
   all-reduce, for the check that every rank enters the same collectives. */
extern int pf_testing_skip_reduce_rank, pf_testing_skip_reduce_countdown;

/* ---- which CPU kernels run ---- */

/* Nonzero: the CPU backend uses its portable kernels even where AVX2 is present. */
extern int pf_testing_portable_cpu;
/* Nonzero: the AVX2 kernels even where AVX-512 is present. */
extern int pf_testing_avx2_cpu;
/* Nonzero: the Q8/Q4 products stay off AMX where the processor has it. */
extern int pf_testing_no_amx_cpu;
/* Nonzero (ARM64): NEON's kernels alone, without sdot or smmla. */
extern int pf_testing_neon_cpu;
/* Nonzero (ARM64): the prompts' Q8/Q4 products stay off smmla (FEAT_I8MM). */
extern int pf_testing_no_i8mm_cpu;

/* ---- the CPU kernels on plain arrays, as the CPU backend picks them ---- */

/* The CPU matmul (w is [n_out][k] of dtype 0 f32, 1 f16, 2 bf16, 3 Q8 blocks, 4 Q4 blocks, 5..10
   GGUF's Q4_1, Q5_0, Q5_1, Q4_K, Q5_K, Q6_K blocks, columns col_begin.. of a whole). */
void pf_testing_cpu_matmul(float *out, const float *x, const void *w, int dtype, const float *bias, size_t rows,
                           size_t n_out, size_t k, size_t col_begin);
/* The product pf_parallel_options.bf16_products runs (w bf16 [n_out][k]). */
void pf_testing_cpu_matmul_bf16_products(float *out, const float *x, const uint16_t *w, const float *bias, size_t rows,
                                         size_t n_out, size_t k);
/* The product of blocks the ranks keep (dtype 3..10 as above) against fp32 x, [rows][k]. */
void pf_testing_cpu_matmul_kept(float *out, const float *x, const void *w, int dtype, size_t rows, size_t n_out,
                                size_t k);
/* GGUF blocks of dtype (3..10 as pf_testing_cpu_matmul numbers them) as fp32: count values. */
void pf_testing_block_dequantize(int dtype, const void *blocks, size_t count, float *out);
/* Nonzero: the host memory CPU ranks see as available, in bytes. */
extern size_t pf_testing_host_available;
/* An FP8 e4m3 (float8_e4m3fn) code as fp32 (quantized safetensors checkpoints). */
float pf_testing_e4m3_to_f32(unsigned code);
/* The Q8_0 weight quantizer: rows x cols fp32 in place into blocks. */
void pf_testing_q8_quantize(float *data, size_t rows, size_t cols);
/* The Q4_0 weight quantizer: rows x cols fp32 in place into blocks. */
void pf_testing_q4_quantize(float *data, size_t rows, size_t cols);
/* The activations' quantizer of the kernel set in use (blocks of 32 values of x). */
void pf_testing_cpu_quantize_x(int8_t *qx, float *dx, int32_t *sx, const float *x, size_t blocks);
/* Attention's scores for nq queries over count rows of keys stride floats apart. */
void pf_testing_cpu_scores(float *out, size_t ld, const float *const *q, int nq, const float *keys, size_t stride,
                           size_t count, size_t n);
/* Attention's weighted sum of the values for one query. */
void pf_testing_cpu_weighted_sum(float *out, const float *w, const float *values, size_t stride, size_t count, size_t n);
/* Attention's weighted sums for nq queries. */
void pf_testing_cpu_weighted_sums(float *out, size_t ldo, const float *w, size_t ldw, int nq, const float *values,
                                  size_t stride, size_t count, size_t n);
/* Decode's attention scores over cached rows (dt 0 fp32, 1 fp16, 2 bf16). */
void pf_testing_cpu_row_scores(float *out, size_t ld, const float *q, int heads, const size_t *kv, const void *keys,
                               int dt, size_t row, size_t count, size_t n);
/* Decode's weighted sums over cached rows (dt 0 fp32, 1 fp16, 2 bf16). */
void pf_testing_cpu_row_weighted_sums(float *out, const float *w, size_t ld, int heads, const size_t *kv,
                                      const void *values, int dt, size_t row, size_t count, size_t n);
/* out[i] = act(x[i]) (act a pf__activation), times mul[i] when mul is given (gated MLPs). */
void pf_testing_cpu_activate(float *out, const float *x, const float *mul, size_t count, int act);
/* Softmax's exponentials: p[j] = exp(p[j] - shift) in place. */
void pf_testing_cpu_exp_shifted(float *p, size_t count, float shift);
/* The sums of norms and softmax: x - shift, or its squares, over n values in double. */
double pf_testing_cpu_sum_shifted(const float *x, size_t n, double shift, int squares);
/* The residual add: x[i] += (y[i] or 0) + (b[i] or 0); y or b may be NULL. */
void pf_testing_cpu_add_rows(float *x, const float *y, const float *b, size_t n);
/* A norm's row once its moments are known: out[i] = (x[i] - mean) * inv * g[i] (+ b[i]). */
void pf_testing_cpu_normalize(float *out, const float *x, size_t n, double mean, float inv, const float *g,
                              const float *b);

/* ---- generation and batching ---- */

/* Tokens the devices chose (pf__combine_choices), counted. */
extern int pf_testing_device_choices;
/* Tokens drawn from the devices' top-k candidates, counted. */
extern int pf_testing_device_samples;
/* 1 (the default): check each token the devices chose against the host's choice from the same
   logits; 0: a release build's path (no logits unless the host needs them). */
extern int pf_testing_check_device_choices;
/* The most rows one batched decode step ran. */
extern int pf_testing_batch_rows;
/* Batched decode jobs in which two or more pipeline stages each ran a micro-batch's step. */
extern int pf_testing_stages_overlapped;
/* Requests waiting in the batcher's queue. */
int pf_testing_batch_queued(pf_model *m);
/* Requests that began and have not ended (pf_free waits for them), and whether pf_free began. */
int pf_testing_active_calls(pf_model *m);
int pf_testing_closing(pf_model *m);

/* ---- CUDA ---- */

/* Rank 0's CUDA graph captures and launches; defined in CUDA builds alone, so weak: a test
   compiled without PF_CUDA finds their address NULL in a build without CUDA. */
extern int pf_testing_cuda_graph_captures __attribute__((weak));
extern int pf_testing_cuda_graph_launches __attribute__((weak));

/* ---- constrained JSON output (src/json_schema.c) ---- */

/* Whether text is a prefix of a JSON value of the schema (1) or not (0); -1 when the schema is
   refused (err says why). *complete: whether it is a whole value. */
int pf_testing_json_prefix(const char *schema, const char *text, size_t len, int *complete, char *err, size_t err_size);
/* The mask after prefix over a tokenizer's vocabulary, run `repeat` times: the tokens it allows
   (-1 on failure); *seconds: the time of one mask. */
int pf_testing_json_mask(const pf_tokenizer *tok, const char *schema, const char *prefix, int repeat, float *scores,
                         int32_t eos, double *seconds);

#endif
