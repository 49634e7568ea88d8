#!/usr/bin/env python3
"""examples/server's tools driven by the `openai` package, against a server of the qwen2-tools
fixture (Qwen2.5's chat template on random weights). Run by test/test_server.sh (make test-server):

  test_server_tools.py SERVER_URL FIXTURE_DIR

- the prompt the chat route makes of tools, tool calls and tool results is transformers'
  apply_chat_template(tools=...) byte for byte (POST /apply-template; usage.prompt_tokens);
- a round trip: a forced call (named function, "required", one or several) comes back as
  tool_calls whose arguments validate against the function's parameters, whole and streamed;
  the call and its result sent back render as Qwen's template writes them;
- what is refused is refused by name.
Random weights write no <tool_call> of their own: reading that format back is test/test_server_tools.c's.
Prints one line per failed check and ends with "N passed, N failed"."""

import json
import sys
import urllib.error
import urllib.request

import jsonschema
import openai

from server_checks import Checks  # test/server_checks.py, beside this script

checks = Checks("test_server_tools.py")
check = checks.check

url, fixture = sys.argv[1:3]
with open(f"{fixture}/tool_round_trip.json", encoding="utf-8") as f:
    fixture_cases = json.load(f)
TOOLS = fixture_cases["tools"]
PARAMETERS = {t["function"]["name"]: t["function"]["parameters"] for t in TOOLS}
client = openai.OpenAI(base_url=url + "/v1", api_key="none", max_retries=0, timeout=120)



def post(path, body):
    request = urllib.request.Request(url + path, json.dumps(body).encode(), {"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=60) as r:
            return r.status, json.load(r)
    except urllib.error.HTTPError as e:
        return e.code, json.load(e)


def valid_call(call, names=None):
    """A tool call whose function is a tool's (one of names) and whose arguments validate."""
    name = call.function.name
    if call.type != "function" or name not in PARAMETERS or (names and name not in names):
        return False
    try:
        jsonschema.validate(json.loads(call.function.arguments), PARAMETERS[name])
    except (ValueError, jsonschema.ValidationError):
        return False
    return True


model = client.models.list().data[0].id
user = [{"role": "user", "content": "Weather in Paris?"}]
# Random weights under the constraint would pad with whitespace and write long strings until
# max_tokens: whitespace tokens banned and '"' favoured, so that forced calls end (as in
# test_server.sh's no-spaces bias); the constraint still decides every byte's kind.
with open(f"{fixture}/tokenizer.json", encoding="utf-8") as f:
    vocab = json.load(f)["model"]["vocab"]
SHORT = {str(i): -100 for t, i in vocab.items() if t and set(t) <= set("\u0120\u010a\u0109\u010d")}
SHORT[str(vocab['"'])] = 100

# the prompt: transformers' rendering, byte for byte, and its token count
for case in fixture_cases["cases"]:
    body = {"messages": case["messages"], **({"tools": case["tools"]} if case["tools"] else {})}
    status, answer = post("/apply-template", body)
    label = f"{case['name']}, {'tools' if case['tools'] else 'no tools'}"
    check(f"/apply-template {label} is transformers' prompt", status == 200 and answer.get("prompt") == case["prompt"],
          f"{status} {answer}")
    r = client.chat.completions.create(model=model, messages=case["messages"], tools=case["tools"] or openai.NOT_GIVEN,
                                       tool_choice="none" if case["tools"] else openai.NOT_GIVEN, max_tokens=1, temperature=0)
    check(f"chat {label}: usage.prompt_tokens is transformers' count", r.usage.prompt_tokens == case["prompt_tokens"],
          f"{r.usage.prompt_tokens} != {case['prompt_tokens']}")

# a named function: one call of it, arguments valid; the same streamed
named = {"type": "function", "function": {"name": "get_weather"}}
r = client.chat.completions.create(model=model, messages=user, tools=TOOLS, tool_choice=named, max_tokens=200, temperature=0,
                                   logit_bias=SHORT)
choice = r.choices[0]
calls = choice.message.tool_calls or []
check("named function: finish_reason tool_calls", choice.finish_reason == "tool_calls", choice.finish_reason)
check("named function: one valid call of it", len(calls) == 1 and valid_call(calls[0], {"get_weather"}), str(calls))
check("named function: no content", choice.message.content is None, repr(choice.message.content))

stream = client.chat.completions.create(model=model, messages=user, tools=TOOLS, tool_choice=named, max_tokens=200,
                                        temperature=0, logit_bias=SHORT, stream=True)
streamed, finish, content = {}, None, ""
for chunk in stream:
    for c in chunk.choices:
        content += c.delta.content or ""
        for d in c.delta.tool_calls or []:
            entry = streamed.setdefault(d.index, {"id": d.id, "name": "", "arguments": ""})
            entry["name"] += d.function.name or ""
            entry["arguments"] += d.function.arguments or ""
        finish = c.finish_reason or finish
check("streamed named function: finish_reason tool_calls", finish == "tool_calls", str(finish))
check("streamed named function: the call the whole reply made", len(streamed) == 1 and calls and
      streamed[0]["name"] == calls[0].function.name and streamed[0]["arguments"] == calls[0].function.arguments and
      len(streamed[0]["id"] or "") == 9 and content == "", f"{streamed} {content!r}")

# the round trip: the call and its result sent back, rendered in Qwen's format
if calls:
    call = calls[0]
    back = user + [choice.message.model_dump(exclude_none=True),
                   {"role": "tool", "tool_call_id": call.id, "content": "sunny, 21 C"}]
    status, answer = post("/apply-template", {"messages": back, "tools": TOOLS})
    arguments = json.dumps(json.loads(call.function.arguments), ensure_ascii=False)
    want_call = f'<|im_start|>assistant\n<tool_call>\n{{"name": "get_weather", "arguments": {arguments}}}\n</tool_call><|im_end|>\n'
    want_result = "<|im_start|>user\n<tool_response>\nsunny, 21 C\n</tool_response><|im_end|>\n<|im_start|>assistant\n"
    prompt = answer.get("prompt", "")
    check("round trip: the call rendered as Qwen's template writes it", status == 200 and want_call in prompt, prompt[-400:])
    check("round trip: the result rendered as a tool response", prompt.endswith(want_result), prompt[-200:])
    r = client.chat.completions.create(model=model, messages=back, tools=TOOLS, max_tokens=4, temperature=0)
    check("round trip: the model answers after the result", r.choices[0].finish_reason in ("stop", "length", "tool_calls") and
          r.usage.prompt_tokens > fixture_cases["cases"][0]["prompt_tokens"], str(r))

# "required": any tool, several calls or (parallel_tool_calls false) one
for parallel in (True, False):
    r = client.chat.completions.create(model=model, messages=user, tools=TOOLS, tool_choice="required", max_tokens=300,
                                       temperature=0.8, seed=5, parallel_tool_calls=parallel, logit_bias=SHORT)
    calls = r.choices[0].message.tool_calls or []
    label = "parallel" if parallel else "one call"
    check(f"required, {label}: finish_reason tool_calls", r.choices[0].finish_reason == "tool_calls", r.choices[0].finish_reason)
    check(f"required, {label}: valid calls", len(calls) >= 1 and all(valid_call(c) for c in calls) and
          (parallel or len(calls) == 1), str(calls))
    check(f"required, {label}: distinct ids", len({c.id for c in calls}) == len(calls), str(calls))

# "auto" on a reply that makes no call (random weights write no <tool_call>): its content, whole
# and streamed, is the reply tool_choice "none" gets
texts = {}
for tool_choice in ("none", "auto"):
    r = client.chat.completions.create(model=model, messages=user, tools=TOOLS, tool_choice=tool_choice, max_tokens=12,
                                       temperature=0)
    stream = client.chat.completions.create(model=model, messages=user, tools=TOOLS, tool_choice=tool_choice, max_tokens=12,
                                            temperature=0, stream=True)
    pieces = [c.delta.content or "" for chunk in stream for c in chunk.choices]
    texts[tool_choice] = (r.choices[0].message.content, "".join(pieces), r.choices[0].finish_reason)
check("auto without a call: the content tool_choice none gets, whole and streamed",
      texts["auto"] == texts["none"] and texts["auto"][0] == texts["auto"][1] and texts["auto"][2] == "length", str(texts))

# "none": tools in the prompt, a plain reply
r = client.chat.completions.create(model=model, messages=user, tools=TOOLS, tool_choice="none", max_tokens=3, temperature=0)
check("tool_choice none: a plain reply", r.choices[0].message.tool_calls is None and r.choices[0].finish_reason != "tool_calls",
      str(r.choices[0]))


def refused(name, field, **kwargs):
    kwargs.setdefault("messages", user)
    try:
        client.chat.completions.create(model=model, max_tokens=2, **kwargs)
    except openai.BadRequestError as e:
        check(name, field in str(e), str(e))
        return
    except Exception as e:  # noqa: BLE001 - any other outcome is the failure being reported
        check(name, False, f"{type(e).__name__}: {e}")
        return
    check(name, False, "accepted")


ranged = [{"type": "function", "function": {"name": "f", "parameters": {
    "type": "object", "properties": {"x": {"type": "number", "minimum": 1}}}}}]
refused("a forced call whose parameters the constraint does not support", "minimum", tools=ranged, tool_choice="required")
refused("a named function that is not a tool", "not among 'tools'", tools=TOOLS,
        tool_choice={"type": "function", "function": {"name": "nope"}})
refused("tool_choice required without tools", "needs 'tools'", tool_choice="required")
refused("response_format with a forced call", "'response_format' and 'tool_choice'", tools=TOOLS, tool_choice="required",
        response_format={"type": "json_object"})
refused("the deprecated functions", "functions", functions=[{"name": "f", "parameters": {"type": "object"}}])
refused("tool_calls with arguments that are not JSON", "tool_calls[0]", tools=TOOLS, messages=user + [
    {"role": "assistant", "tool_calls": [{"id": "abcDEF123", "type": "function", "function": {"name": "add", "arguments": "{"}}]}])

checks.finish()
