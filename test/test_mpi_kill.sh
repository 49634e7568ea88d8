#!/bin/sh
# A process lost in the middle of requests: the job must end, with a failure and every process gone,
# within 10 s of the loss, never hang.
#   MPIRUN="mpirun ..." test/test_mpi_kill.sh BINARY FIXTURES [--np N] [--stop | --keep-job] [test_mpi options]
# The last of N processes (2 by default) is lost 2 s in:
#   - by default it is killed (SIGKILL) and Open MPI's launcher ends the job (mpirun kills the others);
#   - --stop: it is stopped (SIGSTOP), as a process whose host drops off: the launcher sees nothing,
#     so the survivors' own waits must end (pf_parallel_options.process_timeout_ms, 1.5 s here);
#   - --keep-job: it is killed, under a launcher told to keep the job (orte_enable_recovery), so
#     again the survivors' waits must end (that launcher exits 0 after MPI_Abort: the messages count).
# In the last two, every survivor must fail its request with the library's message naming the lost
# process (test_mpi prints it, then ends the job with MPI_Abort).
# With --driven, process 0 makes the requests and the others follow them; with --stages 2, the lost
# process is the last pipeline stage.
set -u
binary=$1
fixtures=$2
shift 2
np=2
mode=kill
launcher_options=
signal_option=
while [ $# -gt 0 ]; do
    case $1 in
        --np) np=$2; shift 2 ;;
        --stop) mode=stop; signal_option=--stop; shift ;;
        --keep-job) mode=keep-job; launcher_options="--mca orte_enable_recovery 1"; shift ;;
        *) break ;;
    esac
done
extra="$*"
kill_ms=2000
timeout_ms=1500
lost=$((np - 1))
name="test_mpi_kill -np $np${signal_option:+ $signal_option}${launcher_options:+ --keep-job}${extra:+ $extra}"
log=$(mktemp)
trap 'rm -f "$log"' EXIT
start=$(date +%s%N)
timeout 60 ${MPIRUN:-mpirun} $launcher_options -np $np "$binary" "$fixtures" 1 --kill-after-ms $kill_ms $signal_option \
    --timeout-ms $timeout_ms $extra > "$log" 2>&1
status=$?
elapsed_ms=$(( ($(date +%s%N) - start) / 1000000 ))
after_kill_ms=$(( elapsed_ms - kill_ms ))
if [ $status -eq 124 ]; then
    echo "$name: FAIL: the job still ran 60 s after process $lost was lost"; cat "$log"; exit 1
elif [ $status -eq 0 ] && [ $mode != keep-job ]; then # (a launcher that keeps the job exits 0 after MPI_Abort)
    echo "$name: FAIL: the job succeeded although process $lost was lost"; cat "$log"; exit 1
elif [ $after_kill_ms -gt 10000 ]; then
    echo "$name: FAIL: the job ended ${after_kill_ms} ms after process $lost was lost (more than 10 s)"; cat "$log"; exit 1
fi
if pgrep -f "$binary $fixtures 1 --kill-after-ms" > /dev/null; then
    echo "$name: FAIL: a process outlived the job"; exit 1
fi
if [ $mode != kill ]; then
    reported=$(grep -c "failed: .*process $lost did not answer within" "$log")
    if [ "$reported" -ne $lost ]; then
        echo "$name: FAIL: $reported of the $lost survivors failed with a message naming process $lost"; cat "$log"; exit 1
    fi
    grep "failed: " "$log" | head -1 | cut -c1-300
fi
echo "$name: process $lost lost mid-request ends the job (exit $status) within $after_kill_ms ms: 1 passed, 0 failed"
