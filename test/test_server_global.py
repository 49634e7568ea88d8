#!/usr/bin/env python3
"""examples/server's completions field "global_attention" (prompt token positions given Longformer's
global attention, for LED), driven by the `openai` package through extra_body as a user would.
Run by test/test_server.sh (make test-server) with the URL of a server of led-text-s2s:

  test_server_global.py URL FIXTURE_DIR

FIXTURE_DIR/server_global.txt (test/make_seq2seq_fixtures.py): the prompt's ids, its global
positions, and transformers' greedy text (10 new tokens) with generate(global_attention_mask=...)
and without it, which differ. Prints one line per failed check and ends with "N passed, N
failed"; exits 1 on a failure."""

import json
import sys

import openai

from server_checks import Checks  # test/server_checks.py, beside this script

checks = Checks("test_server_global.py")
check, refused = checks.check, checks.refused

url, fixture = sys.argv[1:3]
lines = dict(line.split("=", 1) for line in open(f"{fixture}/server_global.txt", encoding="utf-8").read().splitlines())
prompt = [int(t) for t in lines["prompt"].split(",")]
positions = [int(t) for t in lines["global"].split(",")]
with_global, without = json.loads(lines["with"]), json.loads(lines["without"])
client = openai.OpenAI(base_url=url + "/v1", api_key="none", max_retries=0, timeout=60)
model = client.models.list().data[0].id




def complete(**extra):
    return client.completions.create(model=model, prompt=prompt, max_tokens=10, temperature=0, **extra)


check("the fixture's texts differ (the global tokens matter)", with_global != without)
text = complete(extra_body={"global_attention": positions}).choices[0].text
check("greedy text with global_attention is transformers' with the mask", text == with_global, repr(text))
text = complete().choices[0].text
check("greedy text without it is transformers' without a mask", text == without, repr(text))
text = complete(extra_body={"global_attention": []}).choices[0].text
check("an empty global_attention is none", text == without, repr(text))
streamed = "".join(c.choices[0].text for c in complete(stream=True, extra_body={"global_attention": positions})
                   if c.choices)
check("streamed with global_attention: the same text", streamed == with_global, repr(streamed))
refused("a position past the prompt is refused", lambda: complete(extra_body={"global_attention": [len(prompt)]}),
        f"'global_attention': position {len(prompt)} is past the prompt's {len(prompt)} tokens")
refused("a negative position is refused", lambda: complete(extra_body={"global_attention": [-1]}),
        "'global_attention': entry 0 is not a prompt token position")
refused("global_attention that is not a list is refused", lambda: complete(extra_body={"global_attention": 3}),
        "'global_attention' must be a list")
refused("chat takes no global_attention", lambda: client.chat.completions.create(
    model=model, messages=[{"role": "user", "content": "hi"}], max_tokens=2, extra_body={"global_attention": [0]}),
        "'global_attention' is not a field of /v1/chat/completions")
refused("an unknown field beside it is refused, not ignored",
        lambda: complete(extra_body={"global_attention": positions, "global_attentions": [0]}),
        "'global_attentions' is not a field of /v1/completions")
checks.finish()
