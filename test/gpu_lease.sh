# Sourced by test/gpu_check.sh for its "lease" stage (cuda_home, nccl, make_args, out, log set):
# issue 40's checks in one device call, each step under its own timeout and skipped when the
# lease's deadline (LEASE_S seconds from now) would cut it. Exits with the first failure's status.
cat "$out/machine.txt" >>"$log" && rm -f "$out/machine.txt" # the device tool returns 8 files at most
steps_name=lease steps_seconds=${LEASE_S:-540} steps_min=20
. "$(dirname "$0")/gpu_steps.sh"
b=${PF_BUILD:-build}
if [ ! -x "$b/bench" ] || [ ! -x "$b/test_cuda" ] || ldd "$b/bench" "$b/test_cuda" 2>&1 | grep -q 'not found'; then
    echo "lease: carried binaries do not run here ($(ldd "$b/bench" 2>&1 | grep 'not found' | head -3)); building" | tee -a "$log"
    b=build
    # shellcheck disable=SC2086
    make -j"$(nproc)" $make_args CUDA_ARCHS=90 build/test_cuda build/bench >>"$log" 2>&1 || { tail -30 "$log"; exit 1; }
fi
echo "lease: binaries $b, $(left) s left; $(nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader)" | tee -a "$log"
sanitizer=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer /opt/nvidia/*/compute-sanitizer 2>/dev/null | head -1)
ncu=$(command -v ncu || ls /usr/local/cuda*/bin/ncu /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)

# 1. Correctness, side by side (the GPU has room; nothing here is timed).
export PF_REQUIRE_CUDA=1
a_s=${LEASE_CHECK_S:-200}
step test_cuda "$a_s" "$out/test_cuda.log" "$b/test_cuda" test/fixtures &
step memcheck "$a_s" "$out/memcheck.log" "$sanitizer" --tool memcheck --error-exitcode 1 \
    "$b/test_cuda" test/fixtures gpt2-tiny random-shapes cuda-graphs &
step racecheck $((a_s * 3 / 4)) "$out/racecheck.log" "$sanitizer" --tool racecheck --error-exitcode 1 \
    "$b/test_cuda" test/fixtures gpt2-tiny &
wait
# (status set in the background steps is lost: read it back from the logs.)
for f in test_cuda memcheck racecheck; do
    grep -a -E 'passed,|ERROR SUMMARY|RACECHECK SUMMARY' "$out/$f.log" | tail -3 | sed "s/^/$f: /"
done
grep -a -q ' 0 failed' "$out/test_cuda.log" || status=1

# 2. Timed rows, one at a time, with torch on the same GPU and dtype beside ours.
bench="$b/bench --device cuda --prompt 512"
# Each model its own bench run: bench prints its table at the end, so a run cut by its timeout
# loses only its own rows.
step gpt2-xl_f16 130 "$out/bench_f16.log" $bench --dtype f16 --models gpt2-xl --new 128 --runs 3 --batch16
# One GPT-2 XL prefill of 512 tokens and 3 decode steps (and the warm-up's) under ncu: each kernel's
# time alone, and how many launch a step.
[ -n "$ncu" ] && step ncu 90 "$out/ncu.log" "$ncu" --clock-control none --metrics gpu__time_duration.sum \
    --print-summary per-kernel $bench --dtype f16 --models gpt2-xl --gpus 1 --new 4 --runs 1 --no-batch16 --no-reference
step llama-1b_f16 110 "$out/bench_f16.log" $bench --dtype f16 --models llama-1b --new 128 --runs 3 --batch16
step bf16 100 "$out/bench_bf16.log" $bench --dtype bf16 --models gpt2-xl,llama-1b --new 128 --runs 3 --no-batch16
step small_f16 70 "$out/bench_misc.log" $bench --dtype f16 --models gpt2,bert-base --new 128 --runs 3 --batch16
step llama-8b_f16 150 "$out/bench_misc.log" $bench --dtype f16 --models llama-8b --default-cache --gpus 1 --new 32 \
    --runs 1 --no-batch16 --no-reference

echo "lease: done after $(($(date +%s) - start)) s"
for f in "$out"/bench_*.log; do
    echo "--- $f"
    grep -a -E '^\| (gpt2|llama|bert)|GB/s|TFLOP' "$f" | head -24
done
[ -f "$out/ncu.log" ] && grep -a -E '^  [a-zA-Z_].*\(|Invocations|gpu__time_duration' "$out/ncu.log" | head -60
echo "gpu_check: lease exit $status"
exit $status
