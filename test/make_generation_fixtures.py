#!/usr/bin/env python3
"""Record transformers' `generate` outputs for the C generation tests (issue 4).

Run as `python3 test/make_generation_fixtures.py` after test/make_fixtures.py. It writes only
test/fixtures/gpt2-tiny/generation_cases.txt and test/fixtures/gpt2-hub/generation_cases.txt.

Each model dir is loaded with transformers (float32, eval, eager attention) and its tokenizer.
Every case is run twice:
  * with `model.generate` (KV cache, return_dict_in_generate=True, output_scores=True): this is
    what gets recorded;
  * with a plain reimplementation written here (no cache, one prompt at a time, the whole
    sequence recomputed each step), which must give the same ids (beam scores within 1e-4, relative above 1)
    and measures how decisive every choice was: greedy steps need top1 - top2 > 1e-3 (after the
    logits processors), beam steps need adjacent candidates (the top K+1 accumulated scores, the
    kept finished scores, and the early-stop comparison) to differ by > 1e-4.

Cases: greedy, beam5_ngram4, beam4_lp, beam3_lp_neg, repetition, ngram3_greedy, min_new, batch3,
batch3_beam, bad_words, eos_multi, and extras for what those do not reach on these models:
ngram2_greedy, beam5_ngram2 (n-gram bans that change the result), beam3_eos_heuristic and
beam3_eos_early (beams that finish early, with a frequent token as a second eos).

File format (one block per case, blank line between blocks):
  # comment lines
  case=<name>
  options=<one-line JSON: the generation kwargs passed to generate besides input_ids,
          attention_mask, return_dict_in_generate=True and output_scores=True>
  prompt=<comma ids>      one line per prompt (unpadded), in batch order
  output=<comma ids>      new tokens of each returned sequence (batch-major, then
                          num_return_sequences), cut after the first eos (a row that stopped at eos
                          keeps that eos and nothing after it)
  score=<float>           beam cases only: sequences_scores, same order as output
"""

import json
import math
from collections import Counter
from pathlib import Path

import torch
import transformers
from transformers import AutoTokenizer, GPT2LMHeadModel
from transformers.utils import logging as hf_logging

FIXTURES = Path(__file__).resolve().parent / "fixtures"
MODEL_DIRS = ("gpt2-tiny", "gpt2-hub")
GREEDY_MIN_MARGIN = 1e-3
BEAM_MIN_GAP = 1e-4
SCORE_TOL = 1e-4  # relative above 1
LIVE = -1.0e8  # accumulated scores below this are the -1e9 placeholders of unused beams

# Candidate texts for the short batch prompts; the first whose encoding has the wanted length
# (and whose generations are not near ties) is used.
BATCH_TEXTS = {
    3: ["Hello world!", "The quick brown", "Pi is 3", "Hello again", "It works", "They're here"],
    7: ["The quick brown", "world, words, work", "Is this a test?!", "Hello again, world.", "the answer is 42."],
}


# ----------------------------------------------------------------------------
# plain reimplementation (reference for the checks, not what is recorded)
# ----------------------------------------------------------------------------


def last_logits(model, ids):
    with torch.no_grad():
        return model(torch.tensor([ids])).logits[0, -1].to(torch.float32)


def process(ids, scores, opts, prompt_len, eos_ids):
    """The logits processors that `opts` turns on, applied to one sequence (no padding)."""
    scores = scores.clone()
    vocab = scores.shape[-1]
    pen = opts.get("repetition_penalty", 1.0)
    if pen != 1.0:
        seen = torch.tensor(sorted(set(t for t in ids if t < vocab)), dtype=torch.long)
        s = scores[seen]
        scores[seen] = torch.where(s < 0, s * pen, s / pen)
    n = opts.get("no_repeat_ngram_size", 0)
    if n > 0 and len(ids) >= n:
        prefix = ids[len(ids) - n + 1:]
        for i in range(len(ids) - n + 1):
            if ids[i:i + n - 1] == prefix and ids[i + n - 1] < vocab:
                scores[ids[i + n - 1]] = -math.inf
    for seq in opts.get("bad_words_ids", []):
        if len(seq) == 1 and seq[0] in eos_ids:
            continue  # transformers drops single-token bad words that are an eos
        if len(seq) <= len(ids) + 1 and (len(seq) == 1 or ids[len(ids) - len(seq) + 1:] == seq[:-1]):
            scores[seq[-1]] = -math.inf
    if len(ids) - prompt_len < opts.get("min_new_tokens", 0):
        scores[eos_ids] = -math.inf
    return scores


def eos_list(opts, model):
    e = opts.get("eos_token_id", model.generation_config.eos_token_id)
    return list(e) if isinstance(e, (list, tuple)) else [e]


def max_new(opts, prompt_len):
    return opts["max_new_tokens"] if "max_new_tokens" in opts else opts["max_length"] - prompt_len


def ref_greedy(model, prompt, opts):
    eos = eos_list(opts, model)
    ids, new, margin, bites = list(prompt), [], math.inf, []
    for _ in range(max_new(opts, len(prompt))):
        raw = last_logits(model, ids)
        s = process(ids, raw, opts, len(prompt), eos)
        top = torch.topk(s, 2).values
        if torch.isfinite(top[1]):
            margin = min(margin, float(top[0] - top[1]))
        tok = int(s.argmax())
        if int(raw.argmax()) != tok:
            bites.append((len(new), int(raw.argmax()), tok))  # (step, unconstrained choice, choice)
        ids.append(tok)
        new.append(tok)
        if tok in eos:
            break
    return new, margin, bites


def ref_beam(model, prompt, opts):
    """Beam search with transformers 5.23's rules, one prompt, no cache."""
    eos = eos_list(opts, model)
    nb = opts["num_beams"]
    lp = float(opts.get("length_penalty", 1.0))
    early = opts.get("early_stopping", False)
    nret = opts.get("num_return_sequences", 1)
    plen = len(prompt)
    max_len = plen + max_new(opts, plen)
    k = max(2, 1 + len(eos)) * nb
    f32 = lambda x: torch.tensor(x, dtype=torch.float32)  # noqa: E731

    running = [(list(prompt), f32(0.0 if b == 0 else -1e9)) for b in range(nb)]
    done = [(None, f32(-1e9), False) for _ in range(nb)]  # (ids, score, finished)
    open_ = True  # "is_early_stop_heuristic_unsatisfied"
    gaps = {"candidates": math.inf, "finished": math.inf, "early_stop": math.inf}
    eos_hyps = 0  # hypotheses ending in eos that entered the finished list
    cur = plen
    while True:
        rows = []
        for ids, score in running:
            lprobs = torch.log_softmax(last_logits(model, ids), dim=-1)
            rows.append(process(ids, lprobs, opts, plen, eos) + score)
        acc = torch.stack(rows).reshape(-1)
        vals, idx = torch.topk(acc, k + 1)
        live = vals[vals > LIVE]
        live = live[torch.isfinite(live)]
        if len(live) > 1:
            gaps["candidates"] = min(gaps["candidates"], float((live[:-1] - live[1:]).min()))
        vocab = acc.shape[0] // nb
        cands = []
        for v, i in zip(vals[:k], idx[:k]):
            b, tok = int(i) // vocab, int(i) % vocab
            seq = running[b][0] + [tok]
            cands.append((seq, v, tok in eos or len(seq) >= max_len))

        # next running beams: best nb candidates, finished ones pushed down by 1e9
        pushed = [(s, v + (f32(-1e9) if fin else 0)) for s, v, fin in cands]
        order = sorted(range(k), key=lambda j: -float(pushed[j][1]))[:nb]
        running = [pushed[j] for j in order]

        # finished hypotheses: only the first nb candidates may enter, score / new_len ** lp
        full = all(f for _, _, f in done) and early is True
        new_len = cur + 1 - plen
        merged = list(done)
        for j, (s, v, fin) in enumerate(cands):
            ok = fin and j < nb and not full and open_
            eos_hyps += ok and s[-1] in eos
            sc = v / (new_len ** lp)
            merged.append((s, sc if ok else f32(-math.inf), ok))  # blocked ones can never be kept
        merged.sort(key=lambda h: -float(h[1]))
        done = merged[:nb]
        real = [float(h[1]) for h in done if h[2]]
        if len(real) > 1:
            gaps["finished"] = min(gaps["finished"], min(a - b for a, b in zip(real, real[1:])))
        if len(merged) > nb and merged[nb][2] and done[-1][2]:
            gaps["finished"] = min(gaps["finished"], float(done[-1][1] - merged[nb][1]))

        cur += 1
        if open_ and all(h[2] for h in done) and float(running[0][1]) > LIVE:
            hyp_len = (max_len - plen) if (early == "never" and lp > 0) else (cur - plen)
            best = float(running[0][1] / (hyp_len ** lp))
            worst = min(float(h[1]) for h in done)
            gaps["early_stop"] = min(gaps["early_stop"], abs(best - worst))
            open_ = best > worst
        if not open_ or (all(h[2] for h in done) and early is True) or all(f for _, _, f in cands):
            break
    out = [(h[0][plen:], float(h[1])) for h in done[:nret]]
    return out, gaps, eos_hyps, cur - plen


# ----------------------------------------------------------------------------
# transformers' generate (what is recorded)
# ----------------------------------------------------------------------------


def cut_at_eos(new, eos):
    for i, t in enumerate(new):
        if t in eos:
            return new[:i + 1]
    return new


def hf_generate(model, tok, prompts, opts):
    """Returns [(new ids, score or None)] in generate's order."""
    if len(prompts) == 1:
        input_ids = torch.tensor(prompts)
        mask = torch.ones_like(input_ids)
    else:
        tok.padding_side = "left"
        tok.pad_token = tok.eos_token
        enc = tok.pad({"input_ids": prompts}, padding=True, return_tensors="pt")
        input_ids, mask = enc["input_ids"], enc["attention_mask"]
        for row, p in zip(input_ids.tolist(), prompts):
            assert row[len(row) - len(p):] == p and all(t == tok.pad_token_id for t in row[: len(row) - len(p)])
    with torch.no_grad():
        out = model.generate(
            input_ids, attention_mask=mask, return_dict_in_generate=True, output_scores=True, **opts
        )
    eos = eos_list(opts, model)
    width = input_ids.shape[1]
    seqs = [cut_at_eos(row[width:], eos) for row in out.sequences.tolist()]
    scores = getattr(out, "sequences_scores", None)
    scores = [None] * len(seqs) if scores is None else [float(s) for s in scores]
    return list(zip(seqs, scores))


# ----------------------------------------------------------------------------


class Model:
    def __init__(self, name):
        self.name = name
        self.path = FIXTURES / name
        self.model = GPT2LMHeadModel.from_pretrained(
            self.path, dtype=torch.float32, attn_implementation="eager"
        ).eval()
        self.tok = AutoTokenizer.from_pretrained(self.path)
        ref = dict(line.split("=", 1) for line in (self.path / "reference.txt").read_text().splitlines() if "=" in line)
        self.prompt_text = ref["prompt_text"]
        self.prompt = [int(x) for x in ref["prompt_ids"].split(",")]
        self.ref_greedy = [int(x) for x in ref["greedy_ids"].split(",")]
        assert self.tok.encode(self.prompt_text, add_special_tokens=False) == self.prompt
        self.eos = self.model.generation_config.eos_token_id
        assert self.eos == self.tok.eos_token_id
        self.n_positions = self.model.config.n_positions
        self.blocks = []

    def run(self, prompts, opts):
        """generate + the reference; asserts they agree and the choices are decisive."""
        got = hf_generate(self.model, self.tok, prompts, opts)
        nret = opts.get("num_return_sequences", 1)
        info = {"greedy_margin": math.inf, "bites": [], "gaps": {}, "eos_hyps": 0, "steps": []}
        for r, prompt in enumerate(prompts):
            if opts.get("num_beams", 1) == 1:
                new, margin, bites = ref_greedy(self.model, prompt, opts)
                assert got[r][0] == new, (self.name, opts, r, got[r][0], new)
                info["greedy_margin"] = min(info["greedy_margin"], margin)
                info["bites"].append(bites)
            else:
                hyps, gaps, eos_hyps, steps = ref_beam(self.model, prompt, opts)
                info["eos_hyps"] += eos_hyps
                info["steps"].append(steps)
                for j, (new, score) in enumerate(hyps):
                    g_new, g_score = got[r * nret + j]
                    assert g_new == new, (self.name, opts, r, j, g_new, new)
                    assert abs(g_score - score) <= SCORE_TOL * max(1.0, abs(score)), (self.name, opts, r, j, g_score, score)
                for key, v in gaps.items():
                    info["gaps"][key] = min(info["gaps"].get(key, math.inf), v)
        return got, info

    def decisive(self, info):
        if info["greedy_margin"] <= GREEDY_MIN_MARGIN:
            return False
        return all(v > BEAM_MIN_GAP for v in info["gaps"].values())

    def add(self, case, prompts, opts, comments=(), got=None, info=None):
        if got is None:
            got, info = self.run(prompts, opts)
        assert self.decisive(info), (self.name, case, info)
        lines = [f"# {c}" for c in comments]
        if opts.get("num_beams", 1) == 1:
            lines.append(f"# min greedy margin (top1 - top2 after logits processors): {info['greedy_margin']:.6g}")
        else:
            g = info["gaps"]
            lines.append(
                "# min beam gaps: adjacent top-K+1 candidates {:.6g}, adjacent kept finished scores {:.6g}, "
                "early-stop comparison {}".format(
                    g["candidates"], g["finished"], "n/a" if math.isinf(g["early_stop"]) else f"{g['early_stop']:.6g}"
                )
            )
        if opts.get("num_beams", 1) > 1:
            ended = sum(1 for new, _ in got if new and new[-1] in eos_list(opts, self.model))
            lines.append(f"# {info['eos_hyps']} hypotheses ending in eos entered the finished list; "
                         f"{ended} returned sequence(s) end in eos; beam steps run: "
                         + ",".join(map(str, info["steps"])) + f" of {max_new(opts, len(prompts[-1]))}")
        lines.append(f"case={case}")
        lines.append("options=" + json.dumps(opts))
        lines += ["prompt=" + ",".join(map(str, p)) for p in prompts]
        lines += ["output=" + ",".join(map(str, new)) for new, _ in got]
        if opts.get("num_beams", 1) > 1:
            lines += [f"score={s:.9g}" for _, s in got]
        self.blocks.append("\n".join(lines))
        first = got[0][0]
        print(f"  {self.name} {case}: {len(got)} output(s), first {first}"
              + (f" score {got[0][1]:.6g}" if got[0][1] is not None else ""))
        return got, info

    def write(self):
        header = [
            f"# transformers {transformers.__version__} generate() on this dir (float32, eager attention, torch "
            f"{torch.__version__.split('+')[0]}); written by test/make_generation_fixtures.py",
            f"# eos_token_id={self.eos} (generation_config), pad = eos; single-prompt cases use reference.txt's "
            f"prompt ({self.prompt_text!r})",
        ]
        text = "\n".join(header) + "\n\n" + "\n\n".join(self.blocks) + "\n"
        (self.path / "generation_cases.txt").write_text(text, encoding="ascii")


def first_eos(m, prompt):
    new, _, _ = ref_greedy(m.model, prompt, {"max_new_tokens": m.n_positions - len(prompt)})
    return next((i for i, t in enumerate(new) if t == m.eos), None)


def make_cases(m: Model):
    P = [m.prompt]
    ctx = m.n_positions - len(m.prompt)

    greedy_opts = {"max_new_tokens": 20}
    greedy, _ = m.add("greedy", P, greedy_opts, ["plain greedy"])
    g = greedy[0][0]
    assert g == m.ref_greedy, (g, m.ref_greedy)

    m.add("beam5_ngram4", P, {"num_beams": 5, "no_repeat_ngram_size": 4, "max_length": 15},
          ["parallelformers README example; max_length counts the prompt; early_stopping=False (default)"])
    m.add("beam4_lp", P, {"num_beams": 4, "length_penalty": 2.0, "num_return_sequences": 3,
                          "max_new_tokens": 12, "early_stopping": True})
    m.add("beam3_lp_neg", P, {"num_beams": 3, "length_penalty": -1.0, "num_return_sequences": 2,
                              "max_new_tokens": 10})

    rep, _ = m.add("repetition", P, {"repetition_penalty": 1.3, "max_new_tokens": 20})
    assert rep[0][0] != g
    ng_opts = {"no_repeat_ngram_size": 3, "max_new_tokens": 20}
    ng, info = m.run(P, ng_opts)
    note = "differs from plain greedy" if ng[0][0] != g else "same as plain greedy: no 3-gram repeats here"
    m.add("ngram3_greedy", P, ng_opts, [note], ng, info)

    # min_new: the brief's min_new_tokens=15 / max_new_tokens=20 only if eos gets suppressed.
    e = first_eos(m, m.prompt)
    choices = [(15, 20)]
    if e is not None:
        choices += [(e + 2, min(e + 8, ctx)), (e + 1, min(e + 8, ctx))]
    for mn, mx in choices:
        opts = {"min_new_tokens": mn, "max_new_tokens": mx}
        got, info = m.run(P, opts)
        plain, _, _ = ref_greedy(m.model, m.prompt, {"max_new_tokens": mx})
        eos_suppressed = [b for b in info["bites"][0] if b[1] == m.eos]
        if eos_suppressed and got[0][0] != plain and m.decisive(info):
            m.add("min_new", P, opts, [
                f"plain greedy emits eos as new token #{e + 1}; min_new_tokens suppresses eos at steps "
                f"{[b[0] for b in eos_suppressed]} (0-based); plain greedy with max_new_tokens={mx}: "
                + ",".join(map(str, plain))], got, info)
            break
    else:
        raise AssertionError(f"{m.name}: no min_new setting suppresses eos")

    # batch3: prompts of 3, 7 and 11 tokens
    batch = None
    for t3 in BATCH_TEXTS[3]:
        for t7 in BATCH_TEXTS[7]:
            p3 = m.tok.encode(t3, add_special_tokens=False)
            p7 = m.tok.encode(t7, add_special_tokens=False)
            if len(p3) != 3 or len(p7) != 7:
                continue
            prompts = [p3, p7, m.prompt]
            o1 = {"max_new_tokens": 10, "pad_token_id": m.eos}
            o2 = {"num_beams": 3, "max_new_tokens": 8, "pad_token_id": m.eos}
            r1, i1 = m.run(prompts, o1)
            r2, i2 = m.run(prompts, o2)
            if m.decisive(i1) and m.decisive(i2):
                batch = (t3, t7, prompts, o1, r1, i1, o2, r2, i2)
                break
        if batch:
            break
    assert batch, f"{m.name}: no decisive batch prompts"
    t3, t7, prompts, o1, r1, i1, o2, r2, i2 = batch
    texts = f"prompt texts {t3!r}, {t7!r}, {m.prompt_text!r}"
    pad_note = ("left padding with pad = eos, attention_mask passed; each row equals that prompt run alone "
                "(checked against the unpadded reference)")
    m.add("batch3", prompts, o1, [texts, pad_note], r1, i1)
    m.add("batch3_beam", prompts, o2, [texts, pad_note], r2, i2)

    # bad_words: [[a], [b, c]] with both bans changing a greedy choice
    found = None
    for i in range(2, len(g)):
        b, c = (m.prompt + g)[len(m.prompt) + i - 1], g[i]
        if c == m.eos:
            continue
        g2, _, _ = ref_greedy(m.model, m.prompt, {"bad_words_ids": [[b, c]], "max_new_tokens": 15})
        for j in range(i + 2, len(g2)):
            a = g2[j]
            if a in (m.eos, b, c):
                continue
            opts = {"bad_words_ids": [[a], [b, c]], "max_new_tokens": 15}
            got, info = m.run(P, opts)
            seq = m.prompt + got[0][0]
            bit_a = [s for s, raw, _ in info["bites"][0] if raw == a]
            bit_bc = [s for s, raw, _ in info["bites"][0] if raw == c and seq[len(m.prompt) + s - 1] == b]
            if bit_a and bit_bc and m.decisive(info):
                found = (opts, got, info, bit_a, bit_bc)
                break
        if found:
            break
    assert found, f"{m.name}: no bad_words choice bites"
    opts, got, info, bit_a, bit_bc = found
    a, (b, c) = opts["bad_words_ids"][0][0], opts["bad_words_ids"][1]
    m.add("bad_words", P, opts, [
        f"[{a}] bans a greedy choice at step(s) {bit_a}; [{b}, {c}] bans {c} after {b} at step(s) {bit_bc} (0-based)"
    ], got, info)

    # eos_multi: the first token greedy produces from the 8th step on that it has not produced before
    j = next(j for j in range(7, len(g)) if g[j] not in g[:j] and g[j] != m.eos)
    x = g[j]
    opts = {"eos_token_id": [x, m.eos], "max_new_tokens": 20}
    got, info = m.run(P, opts)
    assert got[0][0] == g[: j + 1]
    m.add("eos_multi", P, opts, [f"{x} is greedy's new token #{j + 1}: generation stops there"], got, info)


def make_extra_cases(m: Model):
    """Cases beyond the brief's list, for behaviour the listed ones do not reach on these models."""
    P = [m.prompt]
    g = m.ref_greedy

    opts = {"no_repeat_ngram_size": 2, "max_new_tokens": 20}
    got, info = m.run(P, opts)
    assert got[0][0] != g
    m.add("ngram2_greedy", P, opts, ["extra case: no_repeat_ngram_size=3 never bites in 20 greedy steps here, 2 does"],
          got, info)

    opts = {"num_beams": 5, "no_repeat_ngram_size": 2, "max_new_tokens": 10}
    got, info = m.run(P, opts)
    plain = hf_generate(m.model, m.tok, P, {"num_beams": 5, "max_new_tokens": 10})
    assert [s for s, _ in got] != [s for s, _ in plain]
    m.add("beam5_ngram2", P, opts, ["extra case: no_repeat_ngram_size changes the beam result here (4 does not in "
                                    "beam5_ngram4); the prompt's tokens count for the n-grams"], got, info)

    # Beams that finish: a frequent greedy token is made a second eos, so that hypotheses end early,
    # the finished list fills up and the early-stop rules decide when the search ends.
    for x, _ in Counter(g).most_common():
        if x == m.eos:
            continue
        base = {"num_beams": 3, "num_return_sequences": 3, "eos_token_id": [x, m.eos], "max_new_tokens": 20}
        heur, i_heur = m.run(P, base)
        early, i_early = m.run(P, {**base, "early_stopping": True})
        ends = sum(1 for s, _ in heur if s[-1] in (x, m.eos))
        if (m.decisive(i_heur) and m.decisive(i_early) and not math.isinf(i_heur["gaps"]["early_stop"])
                and ends > 0 and [s for s, _ in heur] != [s for s, _ in early]):
            break
    else:
        raise AssertionError(f"{m.name}: no token makes a useful beam eos case")
    m.add("beam3_eos_heuristic", P, base, [
        f"extra case: {x} (a frequent greedy token) is a second eos; early_stopping=False (default): the search "
        "ends when the best running beam, divided by (steps so far) ** length_penalty, is not above the worst "
        "kept finished score"], heur, i_heur)
    m.add("beam3_eos_early", P, {**base, "early_stopping": True}, [
        f"extra case: as beam3_eos_heuristic with early_stopping=True: the search ends once num_beams hypotheses "
        "have finished"], early, i_early)


def main():
    torch.set_num_threads(1)
    hf_logging.set_verbosity_error()
    hf_logging.disable_progress_bar()
    for name in MODEL_DIRS:
        print(name)
        m = Model(name)
        make_cases(m)
        make_extra_cases(m)
        m.write()


if __name__ == "__main__":
    main()
