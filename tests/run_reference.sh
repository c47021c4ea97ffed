#!/usr/bin/env bash
# The reference comparisons (pytest -m reference) in their own virtualenv: sdmetrics pins
# pandas < 3, so it cannot sit beside the pandas 3 that `pip install -e ".[all,test]"` installs.
# A missing reference library fails this run (TABMEM_REQUIRE_REFERENCE=1) instead of skipping.
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x .venv-ref/bin/python ] || python3 -m venv .venv-ref
.venv-ref/bin/pip install -q torch==2.13.0
.venv-ref/bin/pip install -q -e ".[all,test,reference]"
TABMEM_REQUIRE_REFERENCE=1 .venv-ref/bin/python -m pytest -q -m reference
