"""Writes test/fixtures/gpt2-tiny/logprobs.txt: transformers' log_softmax of gpt2-tiny's raw logits
(generate(output_logits=True), before any processor) at each greedy step, with a repetition penalty
so that the processed and raw distributions differ. test_generation's logprobs test reads it."""
import os, torch, transformers
from transformers import AutoModelForCausalLM

here = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures", "gpt2-tiny")
model = AutoModelForCausalLM.from_pretrained(here, attn_implementation="eager").float().eval()
prompt = [15, 107, 3, 250, 42, 7]
top = 5
out = model.generate(torch.tensor([prompt]), max_new_tokens=8, do_sample=False, repetition_penalty=1.5,
                     output_logits=True, return_dict_in_generate=True, pad_token_id=499)
new = out.sequences[0, len(prompt):].tolist()
with open(os.path.join(here, "logprobs.txt"), "w") as f:
    f.write(f"# transformers {transformers.__version__} greedy, repetition_penalty 1.5; written by test/make_logprobs_reference.py\n")
    f.write("# prompt, then per new token: token logprob, then top ids and logprobs of log_softmax(raw logits)\n")
    f.write(" ".join(map(str, prompt)) + "\n")
    for step, token in enumerate(new):
        lp = torch.log_softmax(out.logits[step][0].double(), -1)
        values, ids = torch.topk(lp, top)
        f.write(f"{token} {lp[token].item():.9g}")
        for v, i in zip(values.tolist(), ids.tolist()):
            f.write(f" {i} {v:.9g}")
        f.write("\n")
