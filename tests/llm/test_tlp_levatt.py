"""The paper's t search wired to the attacks API: sample with TLP, score with LevAtt, evaluate.

Every number the search sees is recomputed independently (edit distances with rapidfuzz, AUC and
TPR at FPR 0.1 with scikit-learn), and the sequence of tried tendencies is replayed with the paper's
schedule written out here (``realtabformer_generate.py::evaluate_tlp``: start 3.0, step by the
relative margin, stop at the first AUC < 0.55).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from rapidfuzz.distance import Levenshtein
from sklearn.metrics import roc_auc_score, roc_curve

from tabmem.attacks import evaluate_membership, get_attack
from tabmem.data.schema import Schema
from tabmem.data.serialization import get_serializer
from tabmem.defenses import search_tendency
from tabmem.generators.llm import LLMGenerator


def paper_schedule(aucs: list[float], start: float = 3.0, cap: float = 20.0) -> tuple[list[float], float | None]:
    """The tendencies the paper's loop tries given the AUC each produced, and the next t (None once met)."""
    tried, t = [], start
    for auc in aucs:
        if t > cap:
            break
        tried.append(t)
        if auc < 0.55:
            return tried, None
        r = (auc - 0.55) / 0.55
        t += 3.0 if r >= 0.30 else 1.5 if r >= 0.20 else 1.25 if r >= 0.10 else 1.0 if r >= 0.05 else 0.5
    return tried, t


def test_search_tendency_with_levatt(small_table):
    schema = Schema.infer(small_table, categorical=["sex"], numerical=["age", "income"])
    members, non_members = small_table.iloc[:24], small_table.iloc[24:]
    gen = LLMGenerator(epochs=3, n_layer=1, n_head=2, n_embd=32, batch_size=8, lr=3e-3, random_state=0)
    gen.fit(members, schema)
    targets = pd.concat([members, non_members], ignore_index=True)
    labels = np.r_[np.ones(len(members), bool), np.zeros(len(non_members), bool)]
    trials: list[tuple[float, float]] = []

    def evaluate(t):
        syn = gen.sample(len(members), random_state=100, tendency=t)
        scores = get_attack("levatt", n_jobs=1).fit(syn, schema).score(targets)
        res = evaluate_membership(scores, labels, n_bootstrap=0)
        # independent recomputation of what the search is given
        ser = get_serializer("canonical").fit(syn, schema)
        strings = ser.serialize(syn)
        ref_scores = np.array([-min(Levenshtein.distance(x, s) for s in strings) for x in ser.serialize(targets)])
        np.testing.assert_array_equal(scores, ref_scores)
        fpr, tpr, _ = roc_curve(labels, ref_scores)
        assert res.auc == pytest.approx(roc_auc_score(labels, ref_scores), abs=1e-12)
        assert res.tpr_at_fpr[0.1] == pytest.approx(float(np.interp(0.1, fpr, tpr)), abs=1e-12)
        trials.append((t, res.auc))
        return res.auc, res.tpr_at_fpr[0.1]

    result = search_tendency(evaluate, "auc", max_tendency=7.0)
    tried = [t for t, _ in trials]
    expected, next_t = paper_schedule([a for _, a in trials], cap=7.0)
    assert tried == expected
    assert result.met or next_t > 7.0  # the search stops only when met or past the cap
    assert len(tried) >= 2  # the schedule really stepped (the untuned model leaks at t = 3)
    if result.met:
        assert result.tendency == tried[-1] and result.auc < 0.55
    else:  # none met the target within the cap: the trial with the lowest AUC is returned
        best = min(trials, key=lambda x: x[1])
        assert (result.tendency, result.auc) == best
    assert result.trials["tendency"].tolist() == tried
