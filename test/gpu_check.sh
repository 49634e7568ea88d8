#!/bin/sh
# The GPU checks of issue 3, for a machine with an NVIDIA GPU (the device tool's H100/H200): builds
# with CUDA and runs one stage, its log under $OUT (or ./gpu-logs). Each stage fits one 10-minute
# device call.
#   test/gpu_check.sh tests       make test (CPU suite) and make test-cuda
#   test/gpu_check.sh sanitize [FIXTURE...]
#                                 make test-cuda-sanitize (memcheck, then racecheck), on the named
#                                 fixtures only if any (the whole run may not fit 10 minutes)
#   test/gpu_check.sh bench ARGS  build/bench ARGS (e.g. --models gpt2-xl --dtype f16)
#   test/gpu_check.sh session     one lease's worth in one call: test_cuda on every fixture, memcheck
#                                 on two small fixtures, then the GPT-2 bench in fp16 against torch;
#                                 each under its own timeout (SESSION_* seconds), logs apart under $OUT
#   test/gpu_check.sh lease       issue 40's whole check in one device call (LEASE_S seconds, default
#                                 540): correctness first (test_cuda on every fixture, memcheck on
#                                 three fixtures and racecheck on one, side by side), then the timed
#                                 rows one after another (f16 with torch beside, an ncu kernel
#                                 profile of a GPT-2 XL prefill and decode, bf16, GPT-2 124M and
#                                 BERT-base, the 8B shape if time is left). Uses PF_BUILD's binaries
#                                 (built here, carried) when they run there, else builds. At most 8
#                                 logs under $OUT, the device tool's limit; a summary last.
#   test/gpu_check.sh next        kernels.cu's PF_CUDA_NEXT_KERNELS kernels against the default ones
#                                 in one device call (NEXT_S seconds, default 360; test/gpu_next.sh):
#                                 both builds (build/base, build/next), build/next/kernel_check,
#                                 test_cuda random-shapes cuda-graphs sampling on the next build, the
#                                 GPT-2 XL f16 bench on each, then test_cuda on every fixture with
#                                 the time left
set -u
stage=${1:-tests}
[ $# -gt 0 ] && shift
out=${OUT:-gpu-logs}
mkdir -p "$out"
log="$out/$stage.log"
# What the machine has, for when the build below cannot find a library.
{
    nvidia-smi
    command -v nvcc && nvcc --version
    python3 -c 'import torch; print("torch", torch.__version__, torch.version.cuda)'
    find /usr/local /usr/lib /usr/include /opt -maxdepth 7 \( -name 'libcublas.so*' -o -name 'cublas_v2.h' \
        -o -name 'libnccl.so*' -o -name 'nccl.h' -o -name 'libcudart.so*' -o -name 'cuda_runtime.h' \) 2>/dev/null | head -40
} >"$out/machine.txt" 2>&1

# NCCL: the toolkit's if it has one, else the wheel torch brought (it lacks the libnccl.so link).
cuda_home=${CUDA_HOME:-/usr/local/cuda}
if [ ! -f "$cuda_home/include/cuda_runtime.h" ] && command -v nvcc >/dev/null; then
    cuda_home=$(dirname "$(dirname "$(command -v nvcc)")")
fi
nccl=""
if [ ! -f "$cuda_home/include/nccl.h" ] && [ ! -f /usr/include/nccl.h ] || [ -n "${PF_NCCL_FROM_WHEEL:-}" ]; then
    nccl=$(python3 -c 'import nvidia.nccl as m; print(list(m.__path__)[0])' 2>/dev/null)
    if [ -z "$nccl" ] || [ ! -f "$nccl/include/nccl.h" ]; then
        echo "gpu_check: no nccl.h in $cuda_home/include, /usr/include or python3's nvidia.nccl" | tee "$log"
        exit 1
    fi
fi
make_args="CUDA=1 CUDA_HOME=$cuda_home${nccl:+ NCCL_HOME=$nccl}"
[ "$stage" = lease ] && . "$(dirname "$0")/gpu_lease.sh"
[ "$stage" = next ] && . "$(dirname "$0")/gpu_next.sh"
echo "gpu_check: make $make_args ($stage)" | tee "$log"
# shellcheck disable=SC2086
make -j"$(nproc)" $make_args all >>"$log" 2>&1 || {
    echo "gpu_check: build failed; what the machine has ($out/machine.txt):" | tee -a "$log"
    tail -30 "$log"
    cat "$out/machine.txt"
    exit 1
}

status=0
case $stage in
tests)
    make $make_args test >>"$log" 2>&1 || status=$?
    PF_REQUIRE_CUDA=1 make $make_args test-cuda >>"$log" 2>&1 || status=$?
    ;;
sanitize)
    PF_REQUIRE_CUDA=1 make $make_args test-cuda-sanitize SANITIZE_FIXTURES="$*" >>"$log" 2>&1 || status=$?
    ;;
bench)
    build/bench "$@" >>"$log" 2>&1 || status=$?
    ;;
session)
    # Each step in its own log so that one that times out leaves the others readable.
    PF_REQUIRE_CUDA=1 timeout "${SESSION_TEST_S:-180}" build/test_cuda test/fixtures >"$out/test_cuda.log" 2>&1 || status=$?
    echo "gpu_check: test_cuda exit $status" | tee -a "$log"
    grep -a -E 'FAIL|passed,' "$out/test_cuda.log" | head -40
    PF_REQUIRE_CUDA=1 timeout "${SESSION_SANITIZE_S:-120}" compute-sanitizer --tool memcheck --error-exitcode 1 \
        build/test_cuda test/fixtures gpt2-tiny llama >"$out/memcheck.log" 2>&1 || status=$?
    echo "gpu_check: memcheck exit $status" | tee -a "$log"
    grep -a -E 'ERROR SUMMARY|passed,|========= ' "$out/memcheck.log" | head -20
    timeout "${SESSION_BENCH_S:-240}" build/bench --device cuda --dtype f16 --models ${SESSION_MODELS:-gpt2} \
        --prompt 512 --new 128 --runs 3 >"$out/bench.log" 2>&1 || status=$?
    echo "gpu_check: bench exit $status" | tee -a "$log"
    tail -40 "$out/bench.log"
    ;;
*)
    echo "gpu_check: unknown stage $stage (tests, sanitize, bench, session, lease, next)" | tee -a "$log"
    exit 2
    ;;
esac
grep -a -E 'FAIL|passed,|skipped|ERROR SUMMARY|========= ' "$log" | head -60
tail -25 "$log"
echo "gpu_check: $stage exit $status"
exit $status
