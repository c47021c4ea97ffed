#!/usr/bin/env bash
# The generators backed by the real packages (pytest -m extgen: realtabformer, be_great) in their own virtualenv:
# realtabformer 0.2.4 needs transformers<5 (its TrainingArguments pass overwrite_output_dir,
# removed in 5), datasets<4.5 and huggingface-hub<1, which cannot sit beside the transformers 5
# that `pip install -e ".[all,test]"` installs. A missing package fails this run
# (TABMEM_REQUIRE_EXTGEN=1) instead of skipping. torch first, as the CPU wheel (unpinned, pip
# would pull a CUDA build).
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x .venv-rtf/bin/python ] || python3 -m venv .venv-rtf
.venv-rtf/bin/pip install -q torch==2.13.0
.venv-rtf/bin/pip install -q -e ".[realtabformer,great,test]"
TABMEM_REQUIRE_EXTGEN=1 .venv-rtf/bin/python -m pytest -q -m extgen tests/extgen --durations=10
