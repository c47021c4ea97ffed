"""SDMetrics' two DCR metrics on the benchmark tables, no subsampling (``_driver.py``).

``DCRBaselineProtection`` (synthetic vs training, against a random baseline) and
``DCROverfittingProtection`` (synthetic closer to training than to the holdout), both on every row.
"""

from __future__ import annotations

import time

from _driver import main


def run(cfg, train, holdout, synthetic):  # noqa: ANN001, ANN201
    from sdmetrics.single_table import DCRBaselineProtection, DCROverfittingProtection

    cols = {c: {"sdtype": "numerical"} for c in cfg["numerical"]}
    cols |= {c: {"sdtype": "categorical"} for c in cfg["categorical"]}
    metadata = {"tables": {"adult": {"columns": cols}}}
    t0 = time.perf_counter()
    baseline = DCRBaselineProtection.compute(train, synthetic, metadata, "adult")
    t1 = time.perf_counter()
    overfitting = DCROverfittingProtection.compute(train, synthetic, holdout, metadata, "adult")
    t2 = time.perf_counter()
    return {
        "DCRBaselineProtection": baseline,
        "DCROverfittingProtection": overfitting,
        "seconds_baseline": t1 - t0,
        "seconds_overfitting": t2 - t1,
    }


if __name__ == "__main__":
    main(run)
