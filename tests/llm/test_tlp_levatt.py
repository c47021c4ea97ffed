"""The paper's t search wired to the attacks API: sample with TLP, score with LevAtt, evaluate."""

from __future__ import annotations

import numpy as np
import pandas as pd

from tabmem.attacks import evaluate_membership, get_attack
from tabmem.data.schema import Schema
from tabmem.defenses import search_tendency
from tabmem.generators.llm import LLMGenerator


def test_search_tendency_with_levatt(small_table):
    schema = Schema.infer(small_table, categorical=["sex"], numerical=["age", "income"])
    members, non_members = small_table.iloc[:24], small_table.iloc[24:]
    gen = LLMGenerator(epochs=3, n_layer=1, n_head=2, n_embd=32, batch_size=8, lr=3e-3, random_state=0)
    gen.fit(members, schema)
    targets = pd.concat([members, non_members], ignore_index=True)
    labels = np.r_[np.ones(len(members), bool), np.zeros(len(non_members), bool)]
    seen = []

    def evaluate(t):
        syn = gen.sample(len(members), random_state=100, tendency=t)
        res = evaluate_membership(get_attack("levatt", n_jobs=1).fit(syn, schema).score(targets), labels, n_bootstrap=0)
        seen.append(t)
        return res.auc, res.tpr_at_fpr[0.1]

    result = search_tendency(evaluate, "auc", max_tendency=7.0)
    assert seen[0] == 3.0 and all(t <= 7.0 for t in seen)
    assert result.tendency in seen and len(result.trials) == len(seen)
    assert 0.0 <= result.auc <= 1.0 and 0.0 <= result.tpr_at_0_1 <= 1.0
    assert result.met == (result.auc < 0.55)
