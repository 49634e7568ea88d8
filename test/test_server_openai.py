#!/usr/bin/env python3
"""examples/server driven by the `openai` package (a client nobody here wrote), as a user switching
from another OpenAI-compatible server would drive it. Run by test/test_server.sh (make test-server)
with the URLs of two servers it started and the texts build/generate gives for the same requests:

  test_server_openai.py GENERATOR_URL EMBEDDER_URL EXPECTED.json

EXPECTED.json: {"greedy": {prompt: text of 20 greedy tokens}, "chat": text, "embeddings": [[floats]],
"embed_inputs": [texts], "a_id": the token id of "a"}. Prints one line per failed check and ends
with "N passed, N failed"; exits 1 on a failure."""

import base64
import json
import math
import statistics
import struct
import sys
import threading
import time
import typing
import urllib.request

import openai

from server_checks import Checks  # test/server_checks.py, beside this script

checks = Checks("test_server_openai.py")
check, refused = checks.check, checks.refused

generator_url, embedder_url, expected_path = sys.argv[1:4]
with open(expected_path, encoding="utf-8") as f:
    expected = json.load(f)
client = openai.OpenAI(base_url=generator_url + "/v1", api_key="none", max_retries=0, timeout=60)
embedder = openai.OpenAI(base_url=embedder_url + "/v1", api_key="none", max_retries=0, timeout=60)




model = client.models.list().data[0].id
check("models.list names the model", model == "gpt2-tiny", model)

# greedy completions equal build/generate's, whole and streamed with the usage chunk
for prompt, want in expected["greedy"].items():
    r = client.completions.create(model=model, prompt=prompt, max_tokens=20, temperature=0)
    check(f"completions '{prompt}' equals build/generate", r.choices[0].text == want, repr(r.choices[0].text))
    ended = r.choices[0].finish_reason
    check(f"completions '{prompt}' usage", r.usage.completion_tokens == 20 if ended == "length" else
          0 < r.usage.completion_tokens < 20 and ended == "stop", str(r.usage))
    chunks = list(client.completions.create(model=model, prompt=prompt, max_tokens=20, temperature=0, stream=True,
                                            stream_options={"include_usage": True}))
    text = "".join(c.choices[0].text for c in chunks if c.choices)
    check(f"streamed '{prompt}' equals the whole", text == want, repr(text))
    usage = chunks[-1].usage
    check(f"streamed '{prompt}' ends with the usage", not chunks[-1].choices and usage is not None and
          usage.completion_tokens == r.usage.completion_tokens and usage.prompt_tokens == r.usage.prompt_tokens,
          str(chunks[-1]))

# stop strings end the generation (fewer tokens), without streaming as with it
full = expected["greedy"]["a"]
stop = full[5:8]
before = full[: full.index(stop)]
r = client.completions.create(model=model, prompt="a", max_tokens=20, temperature=0, stop=[stop])
check("stop cuts the text", r.choices[0].text == before and r.choices[0].finish_reason == "stop", repr(r.choices[0]))
check("stop ends the generation", r.usage.completion_tokens < 20, str(r.usage))
streamed = "".join(c.choices[0].text for c in client.completions.create(
    model=model, prompt="a", max_tokens=20, temperature=0, stop=stop, stream=True))
check("stop while streaming", streamed == before, repr(streamed))

# concurrent streams share the decode steps: three started together get their first tokens within a
# few steps of each other (a step measured from their own chunks' spacing), where streams run one at
# a time would put a whole reply (20 steps) between them
def timed_stream(times):
    for c in client.completions.create(model=model, prompt="a", max_tokens=20, temperature=0, stream=True):
        if c.choices and c.choices[0].text:
            times.append(time.monotonic())


arrivals = [[] for _ in range(3)]
streams = [threading.Thread(target=timed_stream, args=(times,)) for times in arrivals]
for t in streams:
    t.start()
for t in streams:
    t.join()
if all(len(times) >= 4 for times in arrivals):
    step = statistics.median(b - a for times in arrivals for a, b in zip(times, times[1:]))
    firsts = [times[0] for times in arrivals]
    check("three concurrent streams start together", max(firsts) - min(firsts) <= 3 * step,
          f"first tokens {max(firsts) - min(firsts):.3f} s apart, a step {step:.3f} s")
else:
    check("three concurrent streams each gave their tokens", False, str([len(times) for times in arrivals]))

# echo, n and seed, logit_bias, the penalties
r = client.completions.create(model=model, prompt="a", max_tokens=20, temperature=0, echo=True)
check("echo puts the prompt first", r.choices[0].text == "a" + full, repr(r.choices[0].text))
a = client.completions.create(model=model, prompt="a", max_tokens=8, n=3, seed=11)
b = client.completions.create(model=model, prompt="a", max_tokens=8, n=3, seed=11)
check("n=3 with a seed: 3 choices, the same again", len(a.choices) == 3 and
      [c.text for c in a.choices] == [c.text for c in b.choices])
r = client.completions.create(model=model, prompt="hello", max_tokens=5, temperature=0,
                              logit_bias={str(expected["a_id"]): 100})
check("logit_bias 100 makes the token the choice", r.choices[0].text == "aaaaa", repr(r.choices[0].text))
r = client.completions.create(model=model, prompt="a", max_tokens=20, temperature=0, frequency_penalty=2.0)
check("a frequency penalty changes the greedy text", r.choices[0].text != full, repr(r.choices[0].text))

# chat: the role-prefixed prompt (the fixture has no template), content as parts too
messages = [{"role": "system", "content": "be brief"}, {"role": "user", "content": "hi"}]
r = client.chat.completions.create(model=model, messages=messages, max_tokens=12, temperature=0)
check("chat equals build/generate", r.choices[0].message.content == expected["chat"], repr(r.choices[0].message.content))
parts = [{"role": "system", "content": [{"type": "text", "text": "be brief"}]},
         {"role": "user", "content": [{"type": "text", "text": "hi"}]}]
r = client.chat.completions.create(model=model, messages=parts, max_tokens=12, temperature=0)
check("chat content as text parts", r.choices[0].message.content == expected["chat"], repr(r.choices[0].message.content))
chunks = list(client.chat.completions.create(model=model, messages=messages, max_tokens=12, temperature=0, stream=True,
                                             stream_options={"include_usage": True}))
text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
check("chat streamed", text == expected["chat"] and chunks[-1].usage.completion_tokens == 12, repr(text))

# logprobs (the model's raw distribution; the library's test compares the numbers with transformers'):
# greedy without processors, each token is its own top 1; the tokens spell the text; streamed the same
def entries_ok(name, entries, text, top):
    check(f"{name}: the tokens spell the text", "".join(e.token for e in entries) == text,
          repr([e.token for e in entries]))
    for i, e in enumerate(entries):
        tops = e.top_logprobs
        ok = (len(tops) == top and tops[0].token == e.token and abs(tops[0].logprob - e.logprob) < 1e-6 and
              all(a.logprob >= b.logprob for a, b in zip(tops, tops[1:])) and sum(math.exp(t.logprob) for t in tops) <= 1 + 1e-5
              and e.logprob <= 0 and bytes(e.bytes).decode("utf-8", "replace") == e.token)
        check(f"{name}: token {i}", ok, repr(e))


r = client.chat.completions.create(model=model, messages=messages, max_tokens=12, temperature=0, logprobs=True,
                                   top_logprobs=3)
whole = r.choices[0].logprobs.content
entries_ok("chat logprobs", whole, r.choices[0].message.content, 3)
check("chat logprobs: one a token", len(whole) == r.usage.completion_tokens, f"{len(whole)} {r.usage}")
chunks = list(client.chat.completions.create(model=model, messages=messages, max_tokens=12, temperature=0,
                                             logprobs=True, top_logprobs=3, stream=True))
streamed = [e for c in chunks if c.choices and c.choices[0].logprobs for e in c.choices[0].logprobs.content]
check("chat logprobs streamed as whole", [(e.token, e.logprob) for e in streamed] == [(e.token, e.logprob) for e in whole],
      repr(streamed))
r = client.chat.completions.create(model=model, messages=messages, max_tokens=12, temperature=0, logprobs=True)
check("chat logprobs without top_logprobs", [(e.token, e.logprob, e.top_logprobs) for e in r.choices[0].logprobs.content]
      == [(e.token, e.logprob, []) for e in whole])
r = client.chat.completions.create(model=model, messages=messages, max_tokens=12, temperature=0)
check("no logprobs unless asked", r.choices[0].logprobs is None, repr(r.choices[0].logprobs))
# a penalty changes the choice, not the numbers: a chosen token may then be less likely than the top one
r = client.chat.completions.create(model=model, messages=messages, max_tokens=12, temperature=0, logprobs=True,
                                   top_logprobs=1, extra_body={"repetition_penalty": 1.5})
content = r.choices[0].logprobs.content
check("logprobs under a penalty are the raw ones", all(e.logprob <= e.top_logprobs[0].logprob + 1e-6 for e in content)
      and any(e.token != e.top_logprobs[0].token for e in content), repr(content))
prompt = next(iter(expected["greedy"]))
for echo in (False, True):
    r = client.completions.create(model=model, prompt=prompt, max_tokens=10, temperature=0, logprobs=2, echo=echo)
    lp = r.choices[0].logprobs
    start = len(prompt.encode()) if echo else 0
    check(f"completions logprobs (echo {echo}): tokens spell the text",
          "".join(lp.tokens) == r.choices[0].text[len(prompt) if echo else 0:], repr(lp.tokens))
    check(f"completions logprobs (echo {echo}): offsets", lp.text_offset == [
        start + sum(len(t.encode()) for t in lp.tokens[:i]) for i in range(len(lp.tokens))], repr(lp.text_offset))
    check(f"completions logprobs (echo {echo}): top 2, the token first",
          all(len(t) == 2 and abs(max(t.values()) - v) < 1e-6 for t, v in zip(lp.top_logprobs, lp.token_logprobs)),
          repr(lp.top_logprobs))
    chunks = list(client.completions.create(model=model, prompt=prompt, max_tokens=10, temperature=0, logprobs=2,
                                            echo=echo, stream=True))
    parts = [c.choices[0].logprobs for c in chunks if c.choices and c.choices[0].logprobs]
    check(f"completions logprobs (echo {echo}) streamed as whole",
          [t for p in parts for t in p.tokens] == lp.tokens and [v for p in parts for v in p.token_logprobs] ==
          lp.token_logprobs and [o for p in parts for o in p.text_offset] == lp.text_offset, repr(parts))

# a completions prompt as token ids (as /tokenize gives them) answers as its text does
for prompt, want in expected["greedy"].items():
    asked = urllib.request.Request(generator_url + "/tokenize", json.dumps({"content": prompt, "add_special": True}).encode(),
                                   {"Content-Type": "application/json"})
    with urllib.request.urlopen(asked, timeout=60) as answer:
        ids = json.load(answer)["tokens"]
    for form in (ids, [ids]):
        r = client.completions.create(model=model, prompt=form, max_tokens=20, temperature=0, echo=True)
        check(f"completions of '{prompt}' as token ids", r.choices[0].text == prompt + want and
              r.usage.prompt_tokens == len(ids), repr(r.choices[0].text))
refused("several prompts", lambda: client.completions.create(model=model, prompt=["a", "b"], max_tokens=2),
        "several prompts")
refused("a token id outside the vocabulary", lambda: client.completions.create(model=model, prompt=[1, 10 ** 6],
                                                                                max_tokens=2), "vocabulary")

# structured output: response_format json_schema as a dict and from a pydantic model (the client's
# parse(), which sends a strict schema with titles and $defs and parses the answer back), the text
# validated by jsonschema. gpt2-tiny (64 positions) pads JSON with whitespace wherever it may: its
# whitespace-only tokens are banned through logit_bias.
import jsonschema  # noqa: E402 - installed beside openai by make test-server
import pydantic  # noqa: E402 - the openai package's own dependency

with open("test/fixtures/gpt2-tiny/tokenizer.json", encoding="utf-8") as f:
    no_spaces = {str(i): -100 for t, i in json.load(f)["model"]["vocab"].items() if t and set(t) <= set("ĠĊĉč")}
answer_schema = {"type": "object", "properties": {"ok": {"type": "boolean"}, "color": {"enum": ["red", "blue"]},
                                                  "size": {"type": ["integer", "null"]}},
                 "required": ["ok", "color", "size"], "additionalProperties": False}
for stream in (False, True):
    kwargs = dict(model=model, messages=[{"role": "user", "content": "a"}], max_tokens=50, temperature=0,
                  logit_bias=no_spaces,
                  response_format={"type": "json_schema", "json_schema": {"name": "answer", "strict": True,
                                                                          "schema": answer_schema}})
    if stream:
        text = "".join(c.choices[0].delta.content or "" for c in client.chat.completions.create(stream=True, **kwargs)
                       if c.choices)
    else:
        text = client.chat.completions.create(**kwargs).choices[0].message.content
    try:
        jsonschema.validate(json.loads(text), answer_schema)
        check(f"json_schema output (stream {stream}) validates", True)
    except (ValueError, jsonschema.ValidationError) as e:
        check(f"json_schema output (stream {stream}) validates", False, f"{text!r}: {e}")


class Color(pydantic.BaseModel):
    name: typing.Literal["red", "blue"]  # an enum: a free string might run past the tiny model's positions
    bright: bool


class Answer(pydantic.BaseModel):
    ok: bool
    color: Color


short = [{"role": "user", "content": "a"}]  # the most of the 64 positions left to the answer
parsed = client.chat.completions.parse(model=model, messages=short, max_tokens=60, temperature=0,
                                       logit_bias=no_spaces, response_format=Answer)
message = parsed.choices[0].message
check("parse() with a pydantic model gives the model's instance", isinstance(message.parsed, Answer) and
      parsed.choices[0].finish_reason == "stop", repr(message.content))

# what the server does not do is refused by name, never ignored
refused("an unknown field", lambda: client.completions.create(model=model, prompt="a", max_tokens=2,
                                                               extra_body={"frobnicate": 1}), "frobnicate")
refused("top_logprobs above 20", lambda: client.chat.completions.create(model=model, messages=messages, max_tokens=2,
                                                                         logprobs=True, top_logprobs=21), "top_logprobs")
refused("top_logprobs without logprobs", lambda: client.chat.completions.create(
    model=model, messages=messages, max_tokens=2, top_logprobs=2), "top_logprobs")
refused("completions logprobs above 5", lambda: client.completions.create(model=model, prompt="a", max_tokens=2,
                                                                           logprobs=6), "logprobs")
refused("response_format with an unsupported keyword", lambda: client.chat.completions.create(
    model=model, messages=messages, max_tokens=2, response_format={"type": "json_schema", "json_schema": {
        "name": "t", "schema": {"type": "string", "format": "email"}}}), "format")
refused("tools", lambda: client.chat.completions.create(model=model, messages=messages, max_tokens=2, tools=[
    {"type": "function", "function": {"name": "f", "parameters": {"type": "object", "properties": {}}}}]), "tools")
refused("presence_penalty 3", lambda: client.completions.create(model=model, prompt="a", max_tokens=2,
                                                                 presence_penalty=3), "presence_penalty")
refused("embeddings from a decoder", lambda: client.embeddings.create(model=model, input="a"), "embeddings")

# embeddings (all-MiniLM-L6-v2): equal build/embed's, as the client asks by default (base64, which it
# decodes), in base64 asked for (then ours to decode) and in floats
for encoding in (None, "base64", "float"):
    extra = {"encoding_format": encoding} if encoding else {}
    r = embedder.embeddings.create(model="m", input=expected["embed_inputs"], **extra)
    got = [d.embedding for d in r.data]
    if encoding == "base64":
        got = [list(struct.unpack(f"<{len(base64.b64decode(g)) // 4}f", base64.b64decode(g))) for g in got]
    worst = max(abs(x - y) for g, w in zip(got, expected["embeddings"]) for x, y in zip(g, w))
    check(f"embeddings ({encoding}) equal build/embed's", len(got) == len(expected["embeddings"]) and worst < 1e-6,
          f"max difference {worst}")
    check(f"embeddings ({encoding}) are unit vectors", all(abs(math.hypot(*g) - 1) < 1e-5 for g in got))
check("embeddings usage", r.usage.prompt_tokens > 0, str(r.usage))
refused("completions from an encoder", lambda: embedder.completions.create(model="m", prompt="a", max_tokens=2),
        "does not generate")

checks.finish()
