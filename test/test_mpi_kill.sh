#!/bin/sh
# A process killed (SIGKILL) in the middle of requests: the job must end, with a failure and every
# process gone, within 10 s of the kill, never hang. (Open MPI's launcher ends the job when a
# process dies; the library itself never waits on a process that failed in an orderly way.)
# With --driven, process 0 makes the requests and process 1 (the one killed) follows them; with
# --stages 2, process 1 is the second pipeline stage.
#   MPIRUN="mpirun ..." test/test_mpi_kill.sh build/mpi/test_mpi test/fixtures [--driven] [--stages 2]
set -u
binary=$1
fixtures=$2
shift 2
extra="$*"
kill_ms=2000
log=$(mktemp)
trap 'rm -f "$log"' EXIT
start=$(date +%s%N)
timeout 60 ${MPIRUN:-mpirun} -np 2 "$binary" "$fixtures" 1 --kill-after-ms $kill_ms $extra > "$log" 2>&1
status=$?
elapsed_ms=$(( ($(date +%s%N) - start) / 1000000 ))
after_kill_ms=$(( elapsed_ms - kill_ms ))
if [ $status -eq 124 ]; then
    echo "test_mpi_kill: FAIL: the job still ran 60 s after a process was killed"; cat "$log"; exit 1
elif [ $status -eq 0 ]; then
    echo "test_mpi_kill: FAIL: the job succeeded although a process was killed"; cat "$log"; exit 1
elif [ $after_kill_ms -gt 10000 ]; then
    echo "test_mpi_kill: FAIL: the job ended ${after_kill_ms} ms after the kill (more than 10 s)"; cat "$log"; exit 1
fi
if pgrep -f "$binary $fixtures 1 --kill-after-ms" > /dev/null; then
    echo "test_mpi_kill: FAIL: a process outlived the job"; exit 1
fi
echo "test_mpi_kill${extra:+ $extra}: a process killed mid-request ends the job (exit $status) within $after_kill_ms ms of the kill: 1 passed, 0 failed"
