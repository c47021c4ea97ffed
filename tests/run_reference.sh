#!/usr/bin/env bash
# The reference comparisons (pytest -m reference) in their own virtualenv: sdmetrics pins
# pandas < 3, so it cannot sit beside the pandas 3 that `pip install -e ".[all,test]"` installs.
# anonymeter (tabmem.risk's reference) pins numpy < 1.27, below the numpy 2 that tabmem itself needs
# (np.trapezoid, ...) even in .venv-ref, so it gets a third virtualenv of its own, .venv-anon, with
# nothing but anonymeter; tests/risk/test_anonymeter_reference.py runs it as a subprocess
# (tests/reference/anonymeter_ref.py: CSV in, JSON out) through $TABMEM_ANONYMETER_PYTHON.
# A missing reference library fails this run (TABMEM_REQUIRE_REFERENCE=1) instead of skipping.
# The same .venv-ref holds the `ctgan` package (extra tabmem[ctgan]: its rdt pins pandas < 3 too), and
# runs the generators backed by it (sdv_ctgan, sdv_tvae: pytest -m sdv tests/extgen), where a missing
# package fails (TABMEM_REQUIRE_EXTGEN=1). It also holds synthcity (extra tabmem[synthcity]: the maintained
# fork schneiderkamplab-synthcity, which needs transformers>=5, so not .venv-rtf, and pandas<4) and runs
# the generators backed by its plugins (synthcity_ddpm/_ctgan/_tvae: pytest -m synthcity tests/extgen).
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x .venv-ref/bin/python ] || python3 -m venv .venv-ref
.venv-ref/bin/pip install -q torch==2.13.0
# torch pinned on the same line: synthcity pulls torchvision (through fastai), whose newest release needs
# torch 2.14, and pip would replace the CPU torch with a CUDA build (7.9 GB) to satisfy it
.venv-ref/bin/pip install -q -e ".[all,test,reference,ctgan,synthcity]" torch==2.13.0
[ -x .venv-anon/bin/python ] || python3 -m venv .venv-anon
.venv-anon/bin/pip install -q anonymeter==1.1.0
TABMEM_ANONYMETER_PYTHON="$PWD/.venv-anon/bin/python" TABMEM_REQUIRE_REFERENCE=1 .venv-ref/bin/python -m pytest -q -m reference
TABMEM_REQUIRE_EXTGEN=1 .venv-ref/bin/python -m pytest -q -m "sdv or synthcity" tests/extgen --durations=5
