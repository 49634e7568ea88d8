#!/usr/bin/env bash
# make test-server: starts build/server on a free 127.0.0.1 port with the gpt2-tiny fixture, calls
# every route with curl, checks greedy outputs against build/generate's, the error cases, streaming
# (and a client leaving mid-stream), and 16 concurrent clients; tools (build/test_server_tools on
# known texts, test/test_server_tools.py against a server of qwen2-tools); LED's global_attention
# (test/test_server_global.py against a server of led-text-s2s); then the openai package
# from PyPI (test/test_server_openai.py) against it and a server of all-MiniLM-L6-v2. Ends with
# "N passed, N failed".
set -uo pipefail
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
FIXTURE=test/fixtures/gpt2-tiny
SERVER_DELAY_MS=20 # per streamed token: long enough for a client to leave mid-stream

if [ ! -x "$BUILD/server" ]; then
    echo "test-server: skipped: no $BUILD/server (make needs libmicrohttpd and jansson via pkg-config)"
    exit 0
fi
for tool in curl jq timeout; do
    command -v "$tool" >/dev/null || { echo "test-server: needs $tool (apt-get install $tool)"; exit 1; }
done

work=$(mktemp -d)
server_pid=
cleanup() {
    if [ -n "$server_pid" ]; then kill "$server_pid" 2>/dev/null; wait "$server_pid" 2>/dev/null; fi
    rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

# start_server NAME SECONDS ARGS...: build/server ARGS on a free port, killed after SECONDS whatever
# happens, its log in $work/NAME.log; sets NAME_pid, and NAME_port (empty when it did not start).
start_server() {
    local name=$1 seconds=$2 pid port=; shift 2
    timeout "$seconds" "$BUILD/server" "$@" --port 0 2>"$work/$name.log" &
    pid=$!
    for _ in $(seq 300); do
        port=$(sed -n 's|.*serving .* on http://127.0.0.1:\([0-9]*\) .*|\1|p' "$work/$name.log")
        [ -n "$port" ] && break
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.1
    done
    printf -v "${name}_pid" %s "$pid"
    printf -v "${name}_port" %s "$port"
}

start_server server 300 "$FIXTURE" --max-body-bytes 4096 --token-delay-ms $SERVER_DELAY_MS
port=$server_port
if [ -z "$port" ]; then
    echo "test-server: the server did not start:"; cat "$work/server.log"; exit 1
fi
base=http://127.0.0.1:$port

passed=0 failed=0
check() { # check NAME CONDITION-COMMAND...
    local name=$1; shift
    if "$@"; then passed=$((passed + 1)); else failed=$((failed + 1)); echo "FAIL test_server.sh: $name"; fi
}
# call METHOD PATH [BODY]: the body to $work/out, the status on stdout.
call() {
    if [ $# -ge 3 ]; then
        curl -s --max-time 30 -o "$work/out" -w '%{http_code}' -X "$1" -H 'Content-Type: application/json' \
            --data-binary "$3" "$base$2"
    else
        curl -s --max-time 30 -o "$work/out" -w '%{http_code}' -X "$1" "$base$2"
    fi
}
json() { jq -j "$1" "$work/out" 2>/dev/null; }
equal() { [ "$1" = "$2" ] || { echo "  got:  $(printf %q "$1")"; echo "  want: $(printf %q "$2")"; return 1; }; }
is_error_json() { jq -e '.error.message | type == "string"' "$work/out" >/dev/null 2>&1; }

# ---- /health, /v1/models ----
check "GET /health" equal "$(call GET /health) $(json .status)" "200 ok"
check "GET /v1/models" equal "$(call GET /v1/models) $(json '.data[0].id')" "200 gpt2-tiny"

# ---- greedy outputs equal build/generate's ----
# The server replaces bytes that are not UTF-8 with U+FFFD as Python's errors="replace" does; so
# does jq on raw input, which puts build/generate's bytes the same way.
utf8() { jq -Rsj .; }
greedy_text() { # greedy_text PROMPT N: build/generate's continuation (it prints the prompt first)
    local out; out=$("$BUILD/generate" "$FIXTURE" -n "$2" "$1"); printf '%s' "${out#"$1"}" | utf8
}
for prompt in a "hello there" "The"; do
    body=$(jq -cn --arg p "$prompt" '{prompt: $p, max_tokens: 20, temperature: 0}')
    status=$(call POST /v1/completions "$body")
    check "completions '$prompt' equals build/generate" equal "$status $(json '.choices[0].text')" "200 $(greedy_text "$prompt" 20)"
    text=$(json '.choices[0].text')
    stream=$(curl -sN --max-time 30 -d "$(jq -cn --arg p "$prompt" '{prompt: $p, max_tokens: 20, temperature: 0, stream: true}')" \
        "$base/v1/completions")
    pieces=$(printf '%s\n' "$stream" | sed -n 's/^data: //p' | grep -v '^\[DONE\]$' | jq -j '.choices[0].text')
    check "streamed '$prompt' equals the whole response" equal "$pieces" "$text"
    check "stream '$prompt' ends with [DONE]" equal "$(printf '%s\n' "$stream" | grep -v '^$' | tail -1)" "data: [DONE]"
    check "stream '$prompt' says why it finished" equal "$(printf '%s\n' "$stream" | sed -n 's/^data: {/{/p' | tail -1 | jq -r '.choices[0].finish_reason')" "$(json '.choices[0].finish_reason')"
done

# The chat format: "role: content" lines, then "assistant:".
chat_prompt=$'system: be brief\nuser: hi\nassistant:'
status=$(call POST /v1/chat/completions '{"messages":[{"role":"system","content":"be brief"},{"role":"user","content":"hi"}],"max_tokens":12,"temperature":0}')
check "chat equals build/generate on the role-prefixed prompt" equal "$status $(json '.choices[0].message.content')" "200 $(greedy_text "$chat_prompt" 12)"
check "chat usage" equal "$(json '.usage.completion_tokens') $(json '.choices[0].message.role')" "12 assistant"
stream=$(curl -sN --max-time 30 -d '{"messages":[{"role":"system","content":"be brief"},{"role":"user","content":"hi"}],"max_tokens":12,"temperature":0,"stream":true}' "$base/v1/chat/completions")
pieces=$(printf '%s\n' "$stream" | sed -n 's/^data: {/{/p' | jq -j '.choices[0].delta.content // empty')
check "chat stream equals the whole response" equal "$pieces" "$(json '.choices[0].message.content')"
check "chat stream starts with the role, ends with [DONE]" equal \
    "$(printf '%s\n' "$stream" | sed -n 's/^data: {/{/p' | head -1 | jq -r '.choices[0].delta.role') $(printf '%s\n' "$stream" | grep -v '^$' | tail -1)" \
    "assistant data: [DONE]"

# GET /generate_text/<text>: beam search, 5 beams, no-repeat 4-grams, max_length 15; the prompt's
# text and its continuation, as build/generate prints them (its newlines as spaces).
for prompt in a "hello there"; do
    call POST /v1/completions "$(jq -cn --arg p "$prompt" '{prompt: $p, max_tokens: 1, temperature: 0}')" >/dev/null
    prompt_tokens=$(json .usage.prompt_tokens)
    want=$("$BUILD/generate" "$FIXTURE" --beams 5 --no-repeat-ngram 4 -n $((15 - prompt_tokens)) "$prompt" | utf8)
    status=$(call GET "/generate_text/$(jq -rn --arg p "$prompt" '$p | @uri')")
    check "generate_text '$prompt' equals build/generate --beams 5" equal "$status $(json .inputs) $(json .outputs | tr '\n' ' ')" "200 $prompt $want"
done
check "generate_text ?max_length" equal "$(call GET '/generate_text/a?max_length=4') $(jq -r .outputs "$work/out" | wc -c)" "200 $(($("$BUILD/generate" "$FIXTURE" --beams 5 --no-repeat-ngram 4 -n 3 a | wc -c)))"

# ---- JSON escaping: quotes, backslashes, control characters, UTF-8, invalid bytes ----
status=$(call GET '/generate_text/%22q%22%5C%01%09%0Acaf%C3%A9%20%F0%9F%98%80')
check "escaping of inputs" equal "$status $(jq -c .inputs "$work/out")" '200 "\"q\"\\\u0001\t\ncafé 😀"'
status=$(call GET '/generate_text/x%FFy%C3')
check "invalid UTF-8 becomes U+FFFD" equal "$status $(json .inputs)" "200 x�y�"
# A continuation with bytes that are not UTF-8 on their own still makes valid JSON.
status=$(call POST /v1/completions '{"prompt":"Hello world","max_tokens":20,"temperature":0}')
check "output escaping is valid JSON" equal "$status $(jq -e '.choices[0].text | length > 0' "$work/out")" "200 true"

# ---- sampling: seeds, n, stop ----
sampled=$(call POST /v1/completions '{"prompt":"a","max_tokens":10,"seed":7,"n":3}'; echo; cat "$work/out")
again=$(call POST /v1/completions '{"prompt":"a","max_tokens":10,"seed":7,"n":3}'; echo; cat "$work/out")
check "the same seed gives the same text" equal "$(printf '%s' "$sampled" | tail -1 | jq -c '[.choices[].text]')" "$(jq -c '[.choices[].text]' "$work/out")"
check "n=3 gives 3 choices" equal "$(json '.choices | length')" 3
check "greedy n=2 gives 2 equal choices" equal \
    "$(call POST /v1/completions '{"prompt":"a","max_tokens":5,"temperature":0,"n":2}') $(json '[.choices[].text] | unique | length') $(json '.choices | length')" "200 1 2"
call POST /v1/completions '{"prompt":"a","max_tokens":20,"temperature":0}' >/dev/null
full=$(json '.choices[0].text')
stop=${full:5:3}
before=${full%%"$stop"*}
body=$(jq -cn --arg s "$stop" '{prompt: "a", max_tokens: 20, temperature: 0, stop: [$s]}')
check "stop cuts the text before the stop string" equal "$(call POST /v1/completions "$body") $(json '.choices[0].text') $(json '.choices[0].finish_reason')" "200 $before stop"
stream=$(curl -sN --max-time 30 -d "$(jq -cn --arg s "$stop" '{prompt: "a", max_tokens: 20, temperature: 0, stop: $s, stream: true}')" "$base/v1/completions")
check "stop while streaming" equal "$(printf '%s\n' "$stream" | sed -n 's/^data: {/{/p' | jq -j '.choices[0].text')" "$before"

check "stop ends the generation early" equal "$(call POST /v1/completions "$body" >/dev/null; [ "$(json .usage.completion_tokens)" -lt 20 ] && echo early)" early
check "content as text parts equals content as a string" equal \
    "$(call POST /v1/chat/completions '{"messages":[{"role":"user","content":[{"type":"text","text":"be"},{"type":"text","text":"brief"}]}],"max_tokens":6,"temperature":0}') $(json '.choices[0].message.content')" \
    "$(call POST /v1/chat/completions '{"messages":[{"role":"user","content":"be\nbrief"}],"max_tokens":6,"temperature":0}') $(json '.choices[0].message.content')"

# ---- /tokenize and /detokenize (llama.cpp's names) ----
check "tokenize" equal "$(call POST /tokenize '{"content": "hello there"}') $(json '.tokens | length > 0')" "200 true"
tokens=$(jq -c .tokens "$work/out")
check "detokenize gives the text back" equal "$(call POST /detokenize "{\"tokens\": $tokens}") $(json .content)" "200 hello there"

# ---- errors: 4xx with a JSON error ----
expect_error() { # expect_error NAME STATUS METHOD PATH [BODY]
    local name=$1 want=$2; shift 2
    local status; status=$(call "$@")
    check "$name -> $want" equal "$status" "$want"
    check "$name has a JSON error" is_error_json
}
expect_error "malformed JSON" 400 POST /v1/completions '{"prompt": "a",'
expect_error "not an object" 400 POST /v1/completions '["a"]'
expect_error "empty body" 400 POST /v1/completions ''
expect_error "no prompt" 400 POST /v1/completions '{"max_tokens": 3}'
expect_error "prompt of the wrong type" 400 POST /v1/completions '{"prompt": 3}'
expect_error "max_tokens as a string" 400 POST /v1/completions '{"prompt": "a", "max_tokens": "5"}'
expect_error "global_attention on a decoder" 400 POST /v1/completions '{"prompt": "a", "global_attention": [0]}'
check "global_attention on a decoder: the library's refusal" grep -q "global_attention needs an encoder-decoder" "$work/out"
expect_error "max_tokens 0" 400 POST /v1/completions '{"prompt": "a", "max_tokens": 0}'
expect_error "max_tokens too large" 400 POST /v1/completions '{"prompt": "a", "max_tokens": 100000000}'
expect_error "temperature as a string" 400 POST /v1/completions '{"prompt": "a", "temperature": "hot"}'
expect_error "negative temperature" 400 POST /v1/completions '{"prompt": "a", "temperature": -1}'
expect_error "top_p 2" 400 POST /v1/completions '{"prompt": "a", "top_p": 2}'
expect_error "n 1000" 400 POST /v1/completions '{"prompt": "a", "n": 1000}'
expect_error "stream as a string" 400 POST /v1/completions '{"prompt": "a", "stream": "yes"}'
expect_error "stop as a number" 400 POST /v1/completions '{"prompt": "a", "stop": 5}'
expect_error "five stop strings" 400 POST /v1/completions '{"prompt": "a", "stop": ["a","b","c","d","e"]}'
expect_error "empty prompt" 400 POST /v1/completions '{"prompt": ""}'
expect_error "prompt longer than the model" 400 POST /v1/completions "{\"prompt\": \"$(printf 'word %.0s' $(seq 200))\"}"
expect_error "messages as a string" 400 POST /v1/chat/completions '{"messages": "hi"}'
expect_error "a message without content" 400 POST /v1/chat/completions '{"messages": [{"role": "user"}]}'
expect_error "an empty message list" 400 POST /v1/chat/completions '{"messages": []}'
expect_error "content with an image part" 400 POST /v1/chat/completions '{"messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "x"}}]}]}'
expect_error "an unknown field" 400 POST /v1/completions '{"prompt": "a", "frobnicate": 1}'
check "the unknown field is named" equal "$(json .error.message)" "'frobnicate' is not a field of /v1/completions"
expect_error "logprobs above 5" 400 POST /v1/completions '{"prompt": "a", "logprobs": 6}'
expect_error "chat logprobs not a boolean" 400 POST /v1/chat/completions '{"messages": [{"role": "user", "content": "hi"}], "logprobs": 2}'
expect_error "echo in chat" 400 POST /v1/chat/completions '{"messages": [{"role": "user", "content": "hi"}], "echo": true}'
expect_error "stream_options without stream" 400 POST /v1/completions '{"prompt": "a", "stream_options": {"include_usage": true}}'
expect_error "logit_bias beyond 100" 400 POST /v1/completions '{"prompt": "a", "logit_bias": {"5": 101}}'
expect_error "logit_bias of a token outside the vocabulary" 400 POST /v1/completions '{"prompt": "a", "logit_bias": {"99999": 1}, "temperature": 0}'
expect_error "a message with tool calls" 400 POST /v1/chat/completions '{"messages": [{"role": "user", "content": "hi", "tool_calls": [{}]}]}'
expect_error "embeddings from a decoder" 400 POST /v1/embeddings '{"input": "a"}'
expect_error "detokenize outside the vocabulary" 400 POST /detokenize '{"tokens": [99999]}'
expect_error "over-long body" 413 POST /v1/completions "{\"prompt\": \"$(head -c 8000 /dev/zero | tr '\0' a)\"}"
expect_error "unknown route" 404 GET /nope
expect_error "unknown POST route" 404 POST /v1/nope '{}'
expect_error "GET on a POST route" 405 GET /v1/completions
expect_error "generate_text with a bad max_length" 400 GET '/generate_text/a?max_length=zero'
check "the server is still healthy after the errors" equal "$(call GET /health)" 200

# ---- response_format: JSON that parses and validates against the schema (jsonschema, installed
#      into $PYCLIENT by make test-server), whole and streamed. gpt2-tiny (64 positions) pads JSON
#      with whitespace wherever it may, so its whitespace-only tokens are banned by logit_bias ----
no_spaces=$(jq -c '[.model.vocab | to_entries[] | select(.key | test("^[ĠĊĉč]+$")) | {key: (.value | tostring), value: -100}] | from_entries' "$FIXTURE/tokenizer.json")
schema='{"type":"object","properties":{"ok":{"type":"boolean"},"color":{"enum":["red","blue"]},"size":{"anyOf":[{"enum":[1,2,3]},{"type":"null"}]},"tags":{"type":"array","items":{"type":"string","enum":["x","y"]},"maxItems":2}},"required":["ok","color","size"],"additionalProperties":false}'
validates() { # validates SCHEMA TEXT: TEXT parses as JSON valid under SCHEMA
    PYTHONPATH="${PYCLIENT:-}" python3 -c 'import json, sys, jsonschema; jsonschema.validate(json.loads(sys.argv[2]), json.loads(sys.argv[1]))' "$1" "$2" 2>&1 | tail -1
}
for route in chat/completions completions; do
    input='"prompt": "a"'; [ $route = completions ] || input='"messages": [{"role": "user", "content": "hi"}]'
    field=.text; [ $route = completions ] || field=.message.content
    body="{$input, \"temperature\": 0, \"max_tokens\": 60, \"logit_bias\": $no_spaces, \"response_format\": {\"type\": \"json_schema\", \"json_schema\": {\"name\": \"t\", \"strict\": true, \"schema\": $schema}}}"
    status=$(call POST /v1/$route "$body")
    text=$(json ".choices[0]$field")
    check "$route json_schema: 200, finished, $text" equal "$status $(json '.choices[0].finish_reason')" "200 stop"
    check "$route json_schema output validates: $text" equal "$(validates "$schema" "$text")" ""
    stream=$(curl -sN --max-time 30 -d "$(jq -c '. + {stream: true}' <<<"$body")" "$base/v1/$route")
    delta=.text; [ $route = completions ] || delta='.delta.content // empty'
    check "$route json_schema streamed equals the whole response" equal \
        "$(printf '%s\n' "$stream" | sed -n 's/^data: {/{/p' | jq -j ".choices[0] | $delta")" "$text"
    status=$(call POST /v1/$route "{$input, \"temperature\": 0, \"max_tokens\": 60, \"logit_bias\": $no_spaces, \"response_format\": {\"type\": \"json_object\"}}")
    text=$(json ".choices[0]$field")
    check "$route json_object: an object, $text" equal "$status $(json '.choices[0].finish_reason') $(jq -r type <<<"$text")" "200 stop object"
done
expect_error "response_format with an unsupported keyword" 400 POST /v1/chat/completions '{"messages": [{"role": "user", "content": "hi"}], "response_format": {"type": "json_schema", "json_schema": {"name": "t", "schema": {"type": "string", "pattern": "^a"}}}}'
check "the unsupported keyword is named" equal "$(json .error.message)" "'response_format': json schema: unsupported JSON Schema keyword \"pattern\""
expect_error "response_format of an unknown type" 400 POST /v1/completions '{"prompt": "a", "response_format": {"type": "xml"}}'
expect_error "response_format json_schema without a schema" 400 POST /v1/completions '{"prompt": "a", "response_format": {"type": "json_schema", "json_schema": {"name": "t"}}}'
expect_error "response_format json_object with another field" 400 POST /v1/completions '{"prompt": "a", "response_format": {"type": "json_object", "schema": {}}}'

# ---- a client that leaves mid-stream stops its generation ----
curl -sN --max-time 0.3 -d '{"prompt":"a","max_tokens":50,"temperature":0,"stream":true}' "$base/v1/completions" >/dev/null
for _ in $(seq 50); do grep -q 'went away' "$work/server.log" && break; sleep 0.1; done
check "a client leaving mid-stream stops the generation" grep -q 'the client went away; generation stopped after' "$work/server.log"
grep 'went away' "$work/server.log" | sed 's/^/  /'

# ---- 16 concurrent clients, LOAD_REQUESTS requests (1000 by default): no errors, no hang (each
#      request bounded by curl's --max-time), the sequential outputs; requests/s and latency ----
requests=${LOAD_REQUESTS:-1000}
prompts=(a "hello there" The "Hello world")
for i in "${!prompts[@]}"; do
    call POST /v1/completions "$(jq -cn --arg p "${prompts[$i]}" '{prompt: $p, max_tokens: 16, temperature: 0}')" >/dev/null
    jq -c '.choices[0].text' "$work/out" > "$work/want.$i"
    jq -cn --arg p "${prompts[$i]}" '{prompt: $p, max_tokens: 16, temperature: 0}' > "$work/body.$i"
done
one_client() { # one_client K: request K, prompt K % 4; "status seconds prompt-index" to stdout
    local k=$1 i=$(($1 % 4))
    curl -s --max-time 60 -o "$work/got.$k" -w "%{http_code} %{time_total} $i\n" -d "@$work/body.$i" "$base/v1/completions"
}
export -f one_client; export work base
start=$(date +%s.%N)
seq 0 $((requests - 1)) | xargs -P 16 -I{} bash -c 'one_client {}' > "$work/timings"
end=$(date +%s.%N)
errors=$(awk '$1 != 200' "$work/timings" | wc -l)
mismatches=0
for k in $(seq 0 $((requests - 1))); do
    [ "$(jq -c '.choices[0].text' "$work/got.$k" 2>/dev/null)" = "$(cat "$work/want.$((k % 4))")" ] || mismatches=$((mismatches + 1))
done
check "$requests requests from 16 clients: no errors" equal "$errors" 0
check "$requests requests from 16 clients: the sequential outputs" equal "$mismatches" 0
check "$requests requests from 16 clients: every one answered" equal "$(wc -l < "$work/timings")" "$requests"
awk '{ print $2 }' "$work/timings" | sort -g | awk -v start="$start" -v end="$end" '
    { t[NR] = $1 } END {
        p50 = t[int((NR - 1) * 0.50) + 1]; p99 = t[int((NR - 1) * 0.99) + 1]
        printf "test-server: 16 clients, %d requests: %.1f requests/s, latency p50 %.0f ms, p99 %.0f ms\n", NR, NR / (end - start), 1000 * p50, 1000 * p99
    }'

# ---- a model with a chat template: the chat route uses it, as build/generate --chat does ----
chat_fixture=test/fixtures/gpt2-tiny-chat
start_server chat 120 "$chat_fixture"
if [ -n "$chat_port" ]; then
    curl -s --max-time 30 -o "$work/out" -d '{"messages":[{"role":"system","content":"be brief"},{"role":"user","content":"hi"}],"max_tokens":6,"temperature":0}' \
        "http://127.0.0.1:$chat_port/v1/chat/completions"
    want=$("$BUILD/generate" "$chat_fixture" -n 6 --chat --system "be brief" hi | utf8)
    check "chat through the model's template equals build/generate --chat" equal "$(json '.choices[0].message.content')" "${want%$'\n'}"
else
    check "the chat-template server starts" false
fi
kill "$chat_pid" 2>/dev/null; wait "$chat_pid" 2>/dev/null

# ---- tools: the formats of tool calls read back on known texts (build/test_server_tools), then the
#      openai package against a model whose chat template reads tools (test/make_chat_template_cases.py's
#      qwen2-tools: Qwen2.5's template): its prompts are transformers', forced calls round trip ----
# add_counts NAME FILE: a test program's "N passed, N failed" (its last line) added to ours.
add_counts() {
    grep -v 'passed, .* failed$' "$2"
    local counts; counts=$(tail -1 "$2")
    if [[ "$counts" =~ ^([0-9]+)\ passed,\ ([0-9]+)\ failed$ ]]; then
        passed=$((passed + BASH_REMATCH[1])) failed=$((failed + BASH_REMATCH[2]))
    else
        check "$1 ran to its end" false
    fi
}
"$BUILD/test_server_tools" > "$work/tools_c.out" 2>&1
add_counts test_server_tools "$work/tools_c.out"
tools_fixture=test/fixtures/qwen2-tools
start_server tools 300 "$tools_fixture"
if [ -z "$tools_port" ]; then
    check "the tools server starts" false
elif [ -n "${PYCLIENT:-}" ]; then
    PYTHONPATH="$PYCLIENT" python3 test/test_server_tools.py "http://127.0.0.1:$tools_port" "$tools_fixture" > "$work/tools.out" 2>&1
    add_counts test_server_tools.py "$work/tools.out"
else
    check "PYCLIENT (the openai package) is given: make test-server sets it" false
fi
kill "$tools_pid" 2>/dev/null; wait "$tools_pid" 2>/dev/null

# ---- completions' global_attention (LED's global tokens) through the openai package's extra_body,
#      against transformers' greedy texts with and without them (test/make_seq2seq_fixtures.py's
#      led-text-s2s: server_global.txt) ----
global_fixture=test/fixtures/led-text-s2s
start_server led 120 "$global_fixture"
if [ -z "$led_port" ]; then
    check "the LED server starts" false
elif [ -n "${PYCLIENT:-}" ]; then
    PYTHONPATH="$PYCLIENT" python3 test/test_server_global.py "http://127.0.0.1:$led_port" "$global_fixture" > "$work/global.out" 2>&1
    add_counts test_server_global.py "$work/global.out"
else
    check "PYCLIENT (the openai package) is given: make test-server sets it" false
fi
kill "$led_pid" 2>/dev/null; wait "$led_pid" 2>/dev/null

# ---- /v1/rerank with a cross-encoder (test/make_encoder_fixtures.py's bert-rerank): the scores of
#      sentence-transformers' CrossEncoder, best first, top_n, documents given as objects, refusals ----
rerank_fixture=test/fixtures/bert-rerank
start_server reranker 120 "$rerank_fixture" --max-batch 3
if [ -n "$reranker_port" ]; then
    body=$(jq -c '{query: .query, documents: ([.documents[0], {text: .documents[1]}] + .documents[2:]), top_n: 3,
                   return_documents: true}' "$rerank_fixture/rerank.json")
    curl -s --max-time 30 -o "$work/out" -d "$body" "http://127.0.0.1:$reranker_port/v1/rerank"
    close_scores() { # the results against the reference: best first, within 1e-4, the texts returned
        jq -e --slurpfile ref "$rerank_fixture/rerank.json" '
            ($ref[0].scores | to_entries | sort_by(-.value) | .[:3]) as $want
            | (.results | length) == 3
            and ([.results[].index] == [$want[].key])
            and ([range(3) as $i | (.results[$i].relevance_score - $want[$i].value) | fabs < 1e-4] | all)
            and ([.results[] | .document.text == $ref[0].documents[.index]] | all)' "$work/out" >/dev/null
    }
    check "/v1/rerank gives CrossEncoder's scores, best first" close_scores
    status=$(curl -s --max-time 30 -o "$work/out" -w '%{http_code}' -d '{"query": "a", "documents": []}' \
             "http://127.0.0.1:$reranker_port/rerank")
    check "/rerank without documents is a 400" equal "$status $(jq -r .error.message "$work/out")" "400 'documents' must be a non-empty list"
    status=$(curl -s --max-time 30 -o "$work/out" -w '%{http_code}' -d '{"query": "a", "documents": ["b"], "rank_fields": 1}' \
             "http://127.0.0.1:$reranker_port/v1/rerank")
    check "/v1/rerank refuses a field it does not know" equal "$status $(jq -r .error.message "$work/out")" \
          "400 'rank_fields' is not a field of /v1/rerank"
else
    check "the reranker server starts" false
fi
kill "$reranker_pid" 2>/dev/null; wait "$reranker_pid" 2>/dev/null
expect_error "rerank on a causal LM" 400 POST /v1/rerank '{"query": "a", "documents": ["b"]}'

# ---- clients that hold connections or flood (a server of its own, with small limits): one address
#      beyond --max-connections-per-address is refused while another is served, bodies trickled
#      past --request-timeout are dropped, --rate-limit answers 429 ----
start_server guard 120 "$FIXTURE" --max-connections-per-address 4 --request-timeout 3 --rate-limit 60
health_from() { # health_from ADDRESS: the status of GET /health from that loopback address (000: refused)
    curl -s --interface "$1" --max-time 2 -o /dev/null -w '%{http_code}' "http://127.0.0.1:$guard_port/health"
}
if [ -n "$guard_port" ]; then
    ( # 8 connections from 127.0.0.1 that declare a body of 100 bytes and send one a second
        trap '' PIPE
        fds=()
        for _ in $(seq 8); do
            exec {fd}<>"/dev/tcp/127.0.0.1/$guard_port" || continue
            printf 'POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{' >&"$fd" 2>/dev/null
            fds+=("$fd")
        done
        for _ in $(seq 8); do
            sleep 1
            for fd in "${fds[@]}"; do printf ' ' >&"$fd" 2>/dev/null; done
        done
    ) &
    trickle_pid=$!
    sleep 1
    check "another address is served while one holds its connections" equal "$(health_from 127.0.0.2)" 200
    check "an address beyond --max-connections-per-address is refused" equal "$(health_from 127.0.0.1)" 000
    sleep 4
    check "bodies trickled past --request-timeout are dropped: the address is served again" \
        equal "$(health_from 127.0.0.1)" 200
    kill "$trickle_pid" 2>/dev/null; wait "$trickle_pid" 2>/dev/null
    # 60 a minute holds ten seconds' worth: 15 requests at once get 10 answers (11 if a token
    # refilled meanwhile), then 429
    for _ in $(seq 15); do health_from 127.0.0.3; echo; done > "$work/rate"
    served=$(grep -c '^200$' "$work/rate") limited=$(grep -c '^429$' "$work/rate")
    check "--rate-limit: 10 or 11 of 15 quick requests served (got $served), the rest 429 (got $limited)" \
        test "$served" -ge 10 -a "$served" -le 11 -a $((served + limited)) -eq 15
else
    check "the server with small limits starts" false
fi
kill "$guard_pid" 2>/dev/null; wait "$guard_pid" 2>/dev/null

# ---- /metrics (Prometheus' text) after all that ----
metric() { sed -n "s/^$1 //p" "$work/out"; }
call GET /metrics >/dev/null
check "/metrics counts the requests" test "$(metric parallelformers_requests_total)" -ge "$requests"
check "/metrics counts generated tokens" test "$(metric parallelformers_generated_tokens_total)" -ge "$requests"
check "/metrics: none generating now" equal "$(metric parallelformers_generations_running)" 0
check "/metrics counts 4xx answers" test "$(metric 'parallelformers_responses_total{code="4xx"}')" -ge 20

# ---- --api-key, --cors, --alias, --dtype q8 ----
start_server guarded 60 "$FIXTURE" --api-key sekrit --cors https://example.org --alias tiny --dtype q8 --max-batch 2
if [ -n "$guarded_port" ]; then
    at=http://127.0.0.1:$guarded_port
    status_of() { curl -s --max-time 10 -o "$work/out" -w '%{http_code}' "$@"; }
    check "--api-key: /health needs none" equal "$(status_of "$at/health")" 200
    check "--api-key: a route without the key is 401" equal "$(status_of "$at/v1/models") $(is_error_json && echo json)" "401 json"
    check "--api-key: a wrong key is 401" equal "$(status_of -H 'Authorization: Bearer sekriT' "$at/v1/models")" 401
    check "--api-key and --alias: the key opens it, the alias names the model" \
        equal "$(status_of -H 'Authorization: Bearer sekrit' "$at/v1/models") $(json '.data[0].id')" "200 tiny"
    check "--dtype q8 generates" equal "$(status_of -H 'Authorization: Bearer sekrit' -d '{"prompt":"a","max_tokens":4,"temperature":0}' \
        "$at/v1/completions") $(json '.usage.completion_tokens') $(json .model)" "200 4 tiny"
    headers=$(curl -s --max-time 10 -D - -o /dev/null -X OPTIONS -H 'Origin: https://example.org' \
        -H 'Access-Control-Request-Method: POST' "$at/v1/completions" | tr -d '\r')
    check "--cors: a preflight is answered 204 for the origin" equal \
        "$(printf '%s\n' "$headers" | head -1 | cut -d' ' -f2) $(printf '%s\n' "$headers" | sed -n 's/^Access-Control-Allow-Origin: //Ip')" \
        "204 https://example.org"
    check "--cors: answers carry the origin" equal "$(curl -s --max-time 10 -D - -o /dev/null "$at/health" | tr -d '\r' | \
        sed -n 's/^Access-Control-Allow-Origin: //Ip')" "https://example.org"
else
    check "the server with --api-key starts" false
fi
kill "$guarded_pid" 2>/dev/null; wait "$guarded_pid" 2>/dev/null

# ---- the openai package (from PyPI, in $PYCLIENT) against this server and one serving
#      all-MiniLM-L6-v2 ($MINILM): completions, chat, streams with usage, stop, echo, seeds,
#      logit_bias, penalties, embeddings, and what is refused by name ----
if [ -n "${PYCLIENT:-}" ] && [ -n "${MINILM:-}" ]; then
    start_server embedder 120 "$MINILM"
    call POST /tokenize '{"content": "a"}' >/dev/null
    a_id=$(json '.tokens[0]')
    embed_inputs=("a cat sits on the mat" "Parallel ranks agree.")
    "$BUILD/embed" "$MINILM" --raw "$work/embeddings.bin" "${embed_inputs[@]}" >/dev/null
    python3 - "$work/embeddings.bin" "$work/expected.json" "$a_id" "$(greedy_text "$chat_prompt" 12)" \
        "$(greedy_text a 20)" "$(greedy_text "hello there" 20)" "$(greedy_text The 20)" "${embed_inputs[@]}" <<'PY'
import json, struct, sys
raw, out, a_id, chat, a, hello, the, *inputs = sys.argv[1:]
floats = open(raw, "rb").read()
n = len(floats) // 4
values = struct.unpack(f"<{n}f", floats)
width = n // len(inputs)
json.dump({"greedy": {"a": a, "hello there": hello, "The": the}, "chat": chat, "a_id": int(a_id),
           "embed_inputs": inputs, "embeddings": [list(values[i * width:(i + 1) * width]) for i in range(len(inputs))]},
          open(out, "w"))
PY
    if [ -n "$embedder_port" ]; then
        PYTHONPATH="$PYCLIENT" python3 test/test_server_openai.py "$base" "http://127.0.0.1:$embedder_port" \
            "$work/expected.json" > "$work/openai.out" 2>&1
        grep -v 'passed, .* failed$' "$work/openai.out"
        counts=$(tail -1 "$work/openai.out")
        if [[ "$counts" =~ ^([0-9]+)\ passed,\ ([0-9]+)\ failed$ ]]; then
            passed=$((passed + BASH_REMATCH[1])) failed=$((failed + BASH_REMATCH[2]))
        else
            check "test_server_openai.py ran to its end" false
        fi
    else
        check "the MiniLM server starts" false
    fi
    kill "$embedder_pid" 2>/dev/null; wait "$embedder_pid" 2>/dev/null
else
    check "PYCLIENT (the openai package) and MINILM (all-MiniLM-L6-v2) are given: make test-server sets both" false
fi

check "the server is still running" kill -0 "$server_pid"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
