#!/usr/bin/env python3
"""Static throughput of the ARM64 Q8/Q4 inner loops, ours beside llama.cpp's, by llvm-mca.

Both sides are compiled here by the same compiler with the same flags to assembly, and the same
extraction takes each function's hot loop: the innermost loop (a label and the one backward
branch to it, with no other loop inside) that holds the most of the loop's key instruction
(sdot for decode's row products, smmla for prompts' tiles). llvm-mca runs that loop body for
each processor model; cycles per block product = cycles per iteration / block products per
iteration (a block product: one 32-value block of one weight row against one row of x).

usage: tool/arm_mca.py GGML_DIR [LLVM_MCA]   (GGML_DIR: a checkout of ggml, or llama.cpp's ggml/;
       LLVM_MCA defaults to llvm-mca-19, Debian's llvm-19, whose models include Neoverse V1/N2)
Read BENCHMARKS.md ("ARM64: ... (issue 39, items 2-3)") for the table and what it does not say.
"""
import os
import re
import subprocess
import sys
import tempfile

CC = os.environ.get("ARM64_CC", "aarch64-linux-gnu-gcc")
FLAGS = ["-O2", "-march=armv8.2-a+dotprod+i8mm+fp16", "-S", "-o", "-"]
CPUS = ["neoverse-v1", "neoverse-n2", "apple-m1"]
APPLE_I8MM = "apple-m2"  # the M1 has no FEAT_I8MM (llvm-mca will not assemble smmla for it): its successor's model
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# (row label, side, function, key instruction, block products per loop iteration)
LOOPS = [
    ("Q8 decode row product (sdot)", "ours", "pf__q8_rows_sdot", "sdot", 4),    # 4 weight rows x 1 block
    ("Q8 decode row product (sdot)", "llama.cpp", "ggml_vec_dot_q8_0_q8_0", "sdot", 2),  # 2 blocks
    ("Q4 decode row product (sdot)", "ours", "pf__q4_rows_sdot", "sdot", 4),
    ("Q4 decode row product (sdot)", "llama.cpp", "ggml_vec_dot_q4_0_q8_0", "sdot", 2),
    ("Q8 prompt tile (smmla)", "ours", "pf__q8_rows_mmla", "smmla", 16),       # 4 rows x 4 weight rows
    ("Q8 prompt tile (smmla)", "llama.cpp", "ggml_vec_dot_q8_0_q8_0", "smmla", 4),  # 2 x 2 (nrc 2)
    ("Q4 prompt tile (smmla)", "ours", "pf__q4_rows_mmla", "smmla", 16),
    ("Q4 prompt tile (smmla)", "llama.cpp", "ggml_vec_dot_q4_0_q8_0", "smmla", 4),
]


def assembly(side, ggml):
    if side == "ours":
        cmd = [CC, "-std=c99", "-I" + ROOT] + FLAGS + [os.path.join(ROOT, "src", "cpu_backend.c")]
    else:
        cmd = [CC, "-std=c11", "-I" + ggml + "/include", "-I" + ggml + "/src", "-I" + ggml + "/src/ggml-cpu"] + FLAGS + [
            os.path.join(ggml, "src", "ggml-cpu", "arch", "arm", "quants.c")]
    return subprocess.run(cmd, check=True, capture_output=True, text=True).stdout.splitlines()


def function_lines(asm, name):
    start = asm.index(name + ":")
    end = next(i for i in range(start, len(asm)) if asm[i].strip().startswith(".size\t" + name))
    return asm[start + 1:end]


def hot_loop(lines, key):
    labels = {l.strip()[:-1]: i for i, l in enumerate(lines) if re.match(r"^\.L\w+:$", l.strip())}
    loops = []
    for j, l in enumerate(lines):
        m = re.match(r"^\s+(b\.?(?:eq|ne|cs|hs|cc|lo|mi|pl|vs|vc|hi|ls|ge|lt|gt|le)|b|cbn?z|tbn?z)\s+(?:.*,\s*)?(\.L\w+)$", l)
        if m and m.group(2) in labels and labels[m.group(2)] < j:
            loops.append((labels[m.group(2)], j))
    innermost = [(a, b) for a, b in loops if not any(a <= c and d <= b for c, d in loops if (c, d) != (a, b))]
    body = lambda a, b: [l for l in lines[a + 1:b + 1] if l.startswith("\t") and not l.strip().startswith(".")]
    count = lambda a, b: sum(1 for l in body(a, b) if l.split()[0] == key)
    best = max(innermost, key=lambda ab: count(*ab))
    if count(*best) == 0:
        raise SystemExit("no innermost loop with %s" % key)
    return body(*best)


def mca(mca_tool, instructions, cpu):
    if cpu == "apple-m1" and any(l.split()[0] == "smmla" for l in instructions):
        cpu = APPLE_I8MM
    with tempfile.NamedTemporaryFile("w", suffix=".s", delete=False) as f:
        f.write("\n".join(instructions) + "\n")
    out = subprocess.run([mca_tool, "-mtriple=aarch64", "-mcpu=" + cpu, "-iterations=200", f.name],
                         check=True, capture_output=True, text=True).stdout
    os.unlink(f.name)
    cycles = int(re.search(r"Total Cycles:\s+(\d+)", out).group(1))
    return cycles / 200.0


def main():
    ggml = sys.argv[1]
    mca_tool = sys.argv[2] if len(sys.argv) > 2 else "llvm-mca-19"
    asm = {"ours": assembly("ours", None), "llama.cpp": assembly("llama.cpp", ggml)}
    print("| loop | code | instructions / iteration | block products / iteration | " +
          " | ".join("%s cycles / block" % c for c in CPUS[:-1]) + " | apple-m1 (smmla: %s) cycles / block" % APPLE_I8MM + " |")
    print("|---|---|---|---|" + "---|" * len(CPUS))
    for label, side, name, key, products in LOOPS:
        loop = hot_loop(function_lines(asm[side], name), key)
        per_block = [mca(mca_tool, loop, cpu) / products for cpu in CPUS]
        print("| %s | %s (`%s`) | %d | %d | %s |" % (label, side, name, len(loop), products,
                                                    " | ".join("%.2f" % c for c in per_block)))


if __name__ == "__main__":
    main()
