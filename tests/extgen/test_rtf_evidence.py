"""Plumbing of ``studies/defences/rtf_evidence.py`` (the REaLTabFormer evidence of docs/generators.md).

A tiny REaLTabFormer (2 layers x 32, 2 epochs) on 40 diabetes rows: the per-epoch curve has one line
per tracked epoch, DynamicCut prunes exactly the top 10% of the tracked run's warm-up ranking, the
random arm 10% of the rows, and LevAtt is judged against the ORIGINAL members (pruned ones included).
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from reference_libs import require

pytestmark = [pytest.mark.extgen, pytest.mark.filterwarnings("ignore")]

STUDY = Path(__file__).resolve().parents[2] / "studies" / "defences"


@pytest.fixture(scope="module", autouse=True)
def _package():
    require("realtabformer", env="TABMEM_REQUIRE_EXTGEN")


def test_rtf_evidence_arms_rank_prune_and_judge_against_the_original_members(tmp_path, monkeypatch, capsys):
    sys.path.insert(0, str(STUDY))
    import rtf_evidence

    from tabmem.generators import load_generator
    from tabmem.mitigation.ranking import Ranking

    out = tmp_path / "ev"
    argv = ["rtf_evidence.py", "--dataset", "diabetes", "--n-train", "40", "--preset", "tiny", "--epochs", "2",
            "--track-every", "1", "--warmup", "2", "--seeds", "0", "--out", str(out)]  # fmt: skip
    monkeypatch.setattr(sys, "argv", argv)
    rtf_evidence.main()
    root = out / "diabetes40"
    curve = pd.read_csv(root / "none" / "seed0" / "curve.csv")
    assert curve.epoch.tolist() == [1, 2]
    assert curve[["replica_rate", "exact_copy_rate", "paper_sft_auc"]].apply(lambda c: c.between(0, 1)).all().all()

    top = Ranking.load(root / "none" / "seed0" / "intensity_ranking.csv").top(0.10)
    dc = pd.read_csv(root / "dc10" / "seed0" / "dc" / "ranking.csv")
    assert sorted(dc.loc[dc.pruned.astype(bool), "train_row"]) == sorted(top)
    rand = pd.read_csv(root / "rand10" / "seed0" / "dc" / "ranking.csv")
    assert rand.pruned.astype(bool).sum() == math.ceil(0.1 * 40)

    # the judged LevAtt: the retrained model's 4x sample against all 40 original members vs the holdout
    train, hold, _, schema = rtf_evidence.data("diabetes", 40, rtf_evidence.default_data_dir())
    result = json.loads((root / "dc10" / "seed0" / "result.json").read_text())
    assert (result["n_train"], result["n_holdout"]) == (40, 40)
    gen = load_generator(root / "dc10" / "seed0" / "dc" / "retrain" / "model.pt", device="cpu")
    big = gen.sample(160, random_state=int(np.random.SeedSequence([0, 2024]).generate_state(1)[0]))
    again = rtf_evidence.levatt(train, hold, big, schema, 0)
    assert again == pytest.approx(result["levatt_4x"])

    capsys.readouterr()
    monkeypatch.setattr(sys, "argv", ["rtf_evidence.py", "--report", "--out", str(out)])
    rtf_evidence.main()
    text = capsys.readouterr().out
    assert "| dc10 − rand10 | 1 |" in text and "| 2 |" in text
