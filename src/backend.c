#include "internal.h"
/* =============================================================================================== */
/* backends: the operation table and the CPU backend                                               */
/* =============================================================================================== */

/* Records the rank's first failure and wakes every rank waiting in a barrier, so none hangs. */
PF_PRIVATE void pf__rank_fail(pf__rank *r, pf_result code, const char *fmt, ...) {
    if (!r->error) {
        va_list args;
        va_start(args, fmt);
        vsnprintf(r->message, sizeof r->message, fmt, args);
        va_end(args);
        r->error = code;
    }
    pf__group_abort(r->group);
}

#ifdef PF_TESTING
/* Test hook: rank pf_testing_fail_rank fails its pf_testing_fail_countdown-th matmul. */
int pf_testing_fail_rank = -1, pf_testing_fail_countdown = 0;
#endif

