# Sourced by test/gpu_lease.sh and test/gpu_next.sh (cuda_home, log set): steps of one device
# call under a deadline. Set before sourcing: steps_name (the prefix of their lines in $log),
# steps_seconds (the call's budget from now) and steps_min (a step given less is skipped).
start=$(date +%s)
deadline=$((start + steps_seconds))
status=0
left() { echo $((deadline - $(date +%s))); }
# step NAME SECONDS LOG CMD...: runs CMD under min(SECONDS, time left - 5), appending to LOG; the
# first failure's status is kept in $status. With soft=1 a step cut by its timeout is no failure.
step() {
    name=$1 want=$2 slog=$3
    shift 3
    budget=$(($(left) - 5))
    [ "$want" -lt "$budget" ] && budget=$want
    if [ "$budget" -lt "$steps_min" ]; then
        echo "$steps_name: $name skipped ($(left) s left)" | tee -a "$log"
        return 0
    fi
    t0=$(date +%s)
    echo "=== $name ($budget s): $*" >>"$slog"
    timeout "$budget" "$@" >>"$slog" 2>&1
    rc=$?
    echo "$steps_name: $name exit $rc after $(($(date +%s) - t0)) s" | tee -a "$log"
    if [ "${soft:-0}" = 1 ] && [ $rc -eq 124 ]; then
        echo "$steps_name: $name cut by its timeout (not a failure)" | tee -a "$log"
        rc=0
    fi
    [ $rc -ne 0 ] && [ $status -eq 0 ] && status=$rc
    return 0
}
# The torch wheels' cuBLAS and NCCL for binaries carried from another machine.
libs=$(python3 -c 'import nvidia.cublas, nvidia.nccl, nvidia.cuda_runtime as r
print(":".join(list(m.__path__)[0] + "/lib" for m in (nvidia.cublas, nvidia.nccl, r)))' 2>/dev/null)
export LD_LIBRARY_PATH="$cuda_home/lib64${libs:+:$libs}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
