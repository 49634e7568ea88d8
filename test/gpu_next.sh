# Sourced by test/gpu_check.sh for its "next" stage (cuda_home, nccl, make_args, out, log set): an
# A/B of kernels.cu's PF_CUDA_NEXT_KERNELS kernels against the default ones in one device call of
# NEXT_S seconds (default 360), each step under its own timeout and skipped when the deadline would
# cut it:
#   1. builds build/base (default kernels) and build/next (make PF_NEXT=1) side by side, sm_90
#      only; binaries already there (built on the CPU machine and carried) are used as they are
#      when they run here, unless NEXT_REBUILD=1;
#   2. build/next/kernel_check: the new kernels against the old ones and a double reference, timed;
#   3. PF_REQUIRE_CUDA=1 build/next/test_cuda test/fixtures random-shapes cuda-graphs sampling;
#   4. the GPT-2 XL f16 bench (prompt 512, 128 new, 1 rank) with each build, base first;
#   5. build/next/test_cuda on every fixture with the time left.
# Exits with the first failure's status. Logs under $out (at most 8 files).
# To spend the device's minutes on running rather than building, build both here first and carry
# them (the device tool's carry: build/base and build/next; well under its 64 MiB without the
# objects):
#   make -j2 CUDA=1 CUDA_ARCHS=90 BUILD=build/base build/base/test_cuda build/base/bench
#   make -j2 CUDA=1 CUDA_ARCHS=90 BUILD=build/next PF_NEXT=1 build/next/test_cuda build/next/bench \
#       build/next/kernel_check
#   rm -f build/base/*.o build/base/*.a build/next/*.o build/next/*.a
#   then on the device: NEXT_S=420 sh test/gpu_check.sh next
cat "$out/machine.txt" >>"$log" && rm -f "$out/machine.txt"
if ! nvidia-smi -L >/dev/null 2>&1; then
    echo "next: no GPU here (nvidia-smi -L fails); nothing built or run" | tee -a "$log"
    echo "gpu_check: next exit 1"
    exit 1
fi
steps_name=next steps_seconds=${NEXT_S:-360} steps_min=15
. "$(dirname "$0")/gpu_steps.sh"
runs() { # runs DIR PROGRAM...: every program is there and finds its libraries
    d=$1
    shift
    for p in "$@"; do
        [ -x "$d/$p" ] || return 1
        ldd "$d/$p" 2>&1 | grep -q 'not found' && return 1
    done
    return 0
}
if [ -n "${NEXT_REBUILD:-}" ] || ! runs build/base test_cuda bench || ! runs build/next test_cuda bench kernel_check; then
    jobs=$(nproc)
    # shellcheck disable=SC2086
    step build_base 240 "$out/build.log" make -j"$jobs" $make_args CUDA_ARCHS=90 BUILD=build/base \
        build/base/test_cuda build/base/bench &
    # shellcheck disable=SC2086
    step build_next 240 "$out/build_next.log" make -j"$jobs" $make_args CUDA_ARCHS=90 BUILD=build/next PF_NEXT=1 \
        build/next/test_cuda build/next/bench build/next/kernel_check &
    wait
    grep -a -E 'warning|error' "$out/build.log" "$out/build_next.log" | head -20
    if ! runs build/next test_cuda bench kernel_check; then
        echo "next: build/next did not build; its log's end:" | tee -a "$log"
        tail -30 "$out/build_next.log"
        echo "gpu_check: next exit 1"
        exit 1
    fi
else
    echo "next: using the binaries in build/base and build/next as they are" | tee -a "$log"
fi
echo "next: $(left) s left; $(nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader)" | tee -a "$log"

export PF_REQUIRE_CUDA=1
step kernel_check 90 "$out/kernel_check.log" build/next/kernel_check
grep -a -E 'FAIL|\| |failure' "$out/kernel_check.log" | head -40
step test_cuda_next 120 "$out/test_cuda_next.log" build/next/test_cuda test/fixtures random-shapes cuda-graphs sampling
grep -a -E 'FAIL|passed,' "$out/test_cuda_next.log" | head -20
bench_args="--device cuda --prompt 512 --dtype f16 --models gpt2-xl --gpus 1 --new 128 --runs 3 --no-batch16 --no-reference"
# shellcheck disable=SC2086
runs build/base bench && step bench_base 80 "$out/bench.log" build/base/bench $bench_args
# shellcheck disable=SC2086
step bench_next 80 "$out/bench.log" build/next/bench $bench_args
soft=1 step test_cuda_full 300 "$out/test_cuda_full.log" build/next/test_cuda test/fixtures
grep -a -E 'FAIL|passed,' "$out/test_cuda_full.log" 2>/dev/null | head -20

echo "next: done after $(($(date +%s) - start)) s"
echo "--- bench (base first, then next)"
grep -a -E '^=== |^\| (gpt2|model)' "$out/bench.log" | head -12
echo "gpu_check: next exit $status"
exit $status
