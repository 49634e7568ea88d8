#!/usr/bin/env bash
# The server with its ranks across processes (make test-mpi): build/mpi/server under mpirun -np 2
# (1 rank each, process 0 serving, process 1 following) against the same server in one process
# with 2 ranks. Greedy, seeded sampling and beam search answers must be the same; then a bounded
# loopback load (LOAD_REQUESTS requests, 8 clients, each bounded by curl's --max-time) must be
# answered without an error, each with one process's text; then SIGTERM to process 0 must end both
# processes cleanly (process 0 freeing the model, process 1's pf_follow returning) within 10 s.
# Ends with "N passed, N failed".
# Arguments after the fixture go to the 2-process server (--pipeline-stages 2: one stage each).
#   MPIRUN="mpirun ..." test/test_mpi_server.sh build/mpi/server test/fixtures/gpt2-tiny [SERVER_ARGS...]
set -uo pipefail
server=$1
fixture=$2
shift 2
two_args=("$@")
requests=${LOAD_REQUESTS:-64}
for tool in curl jq timeout; do
    command -v "$tool" >/dev/null || { echo "test_mpi_server: needs $tool (apt-get install $tool)"; exit 1; }
done
if [ ! -x "$server" ]; then
    echo "test_mpi_server: skipped: no $server (make needs libmicrohttpd and jansson via pkg-config)"
    exit 0
fi
work=$(mktemp -d)
pids=()
cleanup() {
    for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null; done
    rm -rf "$work"
}
trap cleanup EXIT

# start NAME PROCESSES RANKS [ARGS...]: the server under mpirun on a free port, its log in
# $work/NAME.log; sets NAME_pid and NAME_port (empty when it did not start).
start() {
    local name=$1 np=$2 ranks=$3 pid port=
    shift 3
    timeout 300 ${MPIRUN:-mpirun} -np "$np" "$server" "$fixture" --gpus "$ranks" --port 0 "$@" 2>"$work/$name.log" &
    pid=$!
    pids+=("$pid")
    for _ in $(seq 600); do
        port=$(sed -n 's|.*serving .* on http://127.0.0.1:\([0-9]*\) .*|\1|p' "$work/$name.log")
        [ -n "$port" ] && break
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.1
    done
    printf -v "${name}_pid" %s "$pid"
    printf -v "${name}_port" %s "$port"
}
start one 1 2
start two 2 1 "${two_args[@]}"
if [ -z "$one_port" ] || [ -z "$two_port" ]; then
    echo "test_mpi_server: FAIL: a server did not start"; cat "$work/one.log" "$work/two.log"; exit 1
fi

passed=0 failed=0
check() { # check NAME CONDITION-COMMAND...
    local name=$1; shift
    if "$@"; then passed=$((passed + 1)); else failed=$((failed + 1)); echo "FAIL test_mpi_server.sh: $name"; fi
}
equal() { [ "$1" = "$2" ] || { echo "  got:  $1"; echo "  want: $2"; return 1; }; }
# ask PORT PATH [BODY]: the answer's body, with what differs between any two answers (ids, times) removed
ask() {
    local url=http://127.0.0.1:$1$2
    if [ $# -ge 3 ]; then curl -s --max-time 60 -H 'Content-Type: application/json' --data-binary "$3" "$url"
    else curl -s --max-time 60 "$url"; fi | jq -S -c 'del(.id, .created, .system_fingerprint)' 2>/dev/null
}
same_answer() { # same_answer NAME PATH [BODY]
    local a b
    a=$(ask "$two_port" "${@:2}")
    b=$(ask "$one_port" "${@:2}")
    check "$1: 2 processes answer as 1 process" equal "$a" "$b"
    check "$1: an answer" test -n "$a"
}
same_answer "greedy completion" /v1/completions '{"prompt":"Hello world","max_tokens":16,"temperature":0}'
same_answer "seeded sampling, n 3" /v1/completions '{"prompt":"a","max_tokens":10,"seed":7,"n":3,"temperature":0.8}'
same_answer "top_k and top_p sampling" /v1/completions '{"prompt":"The","max_tokens":10,"seed":3,"top_p":0.9,"temperature":1.2}'
same_answer "beam search" "/generate_text/Hello%20there"
same_answer "tokenize" /tokenize '{"content":"Hello world"}'

# ---- the load: 8 clients, each request's text one process's text for its prompt ----
prompts=(a "hello there" The "Hello world")
for i in "${!prompts[@]}"; do
    jq -cn --arg p "${prompts[$i]}" '{prompt: $p, max_tokens: 16, temperature: 0}' > "$work/body.$i"
    curl -s --max-time 60 -d "@$work/body.$i" "http://127.0.0.1:$one_port/v1/completions" | jq -c '.choices[0].text' > "$work/want.$i"
done
one_client() { # one_client K: request K, prompt K % 4; "status prompt-index" to stdout
    local k=$1 i=$(($1 % 4))
    curl -s --max-time 60 -o "$work/got.$k" -w "%{http_code} $i\n" -d "@$work/body.$i" "http://127.0.0.1:$two_port/v1/completions"
}
export -f one_client; export work two_port
start_s=$(date +%s.%N)
seq 0 $((requests - 1)) | xargs -P 8 -I{} bash -c 'one_client {}' > "$work/statuses"
end_s=$(date +%s.%N)
mismatches=0
for k in $(seq 0 $((requests - 1))); do
    [ "$(jq -c '.choices[0].text' "$work/got.$k" 2>/dev/null)" = "$(cat "$work/want.$((k % 4))")" ] || mismatches=$((mismatches + 1))
done
check "$requests requests from 8 clients: every one answered" equal "$(wc -l < "$work/statuses")" "$requests"
check "$requests requests from 8 clients: no errors" equal "$(awk '$1 != 200' "$work/statuses" | wc -l)" 0
check "$requests requests from 8 clients: one process's texts" equal "$mismatches" 0
awk -v n="$requests" -v s="$start_s" -v e="$end_s" 'BEGIN { printf "test_mpi_server: %d requests from 8 clients in %.1f s\n", n, e - s }'

# ---- SIGTERM to process 0: it stops serving and frees the model, which ends its follower's
#      pf_follow; both log it and exit 0, and so does mpirun ----
leader=$(sed -n 's|.*process 0 of [0-9]*: pid \([0-9]*\) .*|\1|p' "$work/two.log")
t0=$(date +%s%N)
[ -n "$leader" ] && kill -TERM "$leader"
wait "$two_pid"
status=$?
ms=$(( ($(date +%s%N) - t0) / 1000000 ))
check "SIGTERM to process 0 ends the job within 10 s ($ms ms)" test "$ms" -le 10000
check "SIGTERM to process 0: mpirun exits 0 ($status)" test "$status" -eq 0
check "SIGTERM: process 0 frees the model" grep -q "^server: stopped$" "$work/two.log"
check "SIGTERM: process 1 stops following (not killed)" grep -q "process 1: process 0 freed the model; stopping" "$work/two.log"
check "SIGTERM: no process outlives the job" test -z "$(pgrep -f "$server $fixture --gpus 1 --port 0")"
[ "$failed" -eq 0 ] || cat "$work/two.log"
pids=("$one_pid")
echo "test_mpi_server${two_args[*]:+ ${two_args[*]}}: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
