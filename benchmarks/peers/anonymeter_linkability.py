"""anonymeter's linkability attack (its nearest-neighbour search) on the benchmark tables (``_driver.py``).

Every training row is a target (``n_attacks`` = the rows), the holdout the control; the auxiliary
columns are split in two halves, as ``bench_risk.py`` does.
"""

from __future__ import annotations

from _driver import main


def run(cfg, train, holdout, synthetic):  # noqa: ANN001, ANN201
    from anonymeter.evaluators import LinkabilityEvaluator

    cols = list(train.columns)
    half = len(cols) // 2
    ev = LinkabilityEvaluator(
        ori=train,
        syn=synthetic,
        control=holdout,
        n_attacks=min(len(train), len(holdout)),
        aux_cols=(cols[:half], cols[half:]),
        n_neighbors=1,
    )
    ev.evaluate(n_jobs=1)
    return {"risk": ev.risk().value}


if __name__ == "__main__":
    main(run)
