#!/usr/bin/env bash
# sdv_ctgan (the ctgan package, through tabmem's generator interface) next to tabmem's own ctgan
# (preset paper: the reference code's behaviour) on 1,000 Adult training rows, same epochs, seed and
# tracking; docs/generators.md shows the table. Run it where `import ctgan` works (the extra's
# virtualenv, e.g. .venv-ref from tests/run_reference.sh):
#     PYTHON=.venv-ref/bin/python studies/ctgan_tvae/sdv_ctgan_adult.sh [EPOCHS] [OUT]
# MODELS="sdv_tvae:package tvae:paper" compares the TVAEs instead (default "sdv_ctgan:package ctgan:paper").
# Writes OUT/{train,holdout}.csv (1,000 rows each, drawn with seed 0 from Adult's train and test
# splits), OUT/<model>/ (tabmem train's run: summary.json, tracking/, history.csv), OUT/<model>/quality/
# (Shape) and OUT/<model>/wall_s.
set -euo pipefail
cd "$(dirname "$0")/../.."
PY=${PYTHON:-python}
EPOCHS=${1:-300}
OUT=${2:-runs/sdv_ctgan_adult}
mkdir -p "$OUT"
"$PY" - "$OUT" <<'PY'
import sys
from pathlib import Path
from tabmem.data.datasets import load_dataset
out = Path(sys.argv[1])
ds = load_dataset("adult")
ds.train.sample(1000, random_state=0).to_csv(out / "train.csv", index=False)
ds.test.sample(1000, random_state=0).to_csv(out / "holdout.csv", index=False)
PY
for spec in ${MODELS:-sdv_ctgan:package ctgan:paper}; do
  model=${spec%%:*} preset=${spec#*:}
  t0=$(date +%s.%N)
  OMP_NUM_THREADS=1 nice -n 10 "$PY" -m tabmem train --train "$OUT/train.csv" --holdout "$OUT/holdout.csv" --target income \
    --model "$model" --preset "$preset" --epochs "$EPOCHS" --track-every 10 --seed 0 --threads 1 --distance gower \
    --out "$OUT/$model" --overwrite --quiet
  echo "$(date +%s.%N) - $t0" | bc > "$OUT/$model/wall_s"
  OMP_NUM_THREADS=1 nice -n 10 "$PY" -m tabmem quality --real "$OUT/train.csv" --synthetic "$OUT/$model/synthetic.csv" \
    --target income --metrics shape --seed 0 --threads 1 --out "$OUT/$model/quality" >/dev/null
done
