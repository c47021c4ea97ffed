"""synthcity's nearest-neighbour privacy and sanity metrics on the benchmark tables (``_driver.py``).

Through its public ``Metrics.evaluate`` (maintained fork ``schneiderkamplab-synthcity``; the original
``synthcity`` pins an old torch): ``identifiability_score`` (privacy) and
``nearest_syn_neighbor_distance``, ``close_values_probability``, ``distant_values_probability``
(sanity), the training table as the real data.
"""

from __future__ import annotations

import sys
from pathlib import Path

from _driver import main

METRICS = {
    "sanity": ["nearest_syn_neighbor_distance", "close_values_probability", "distant_values_probability"],
    "privacy": ["identifiability_score"],
}


def run(cfg, train, holdout, synthetic):  # noqa: ANN001, ANN201
    import synthcity.logger as log
    from synthcity.metrics import Metrics

    log.add(sink=sys.stderr, level="ERROR")  # Metrics.evaluate logs a metric that raised, and drops it
    out = Path(sys.argv[2]).parent
    scores = Metrics.evaluate(train, synthetic, metrics=METRICS, use_cache=False, workspace=out / "workspace")
    result = {str(k): float(v) for k, v in scores["mean"].items()}
    # a metric missing from the result raised (its error is in the log above): the call failed
    missing = [m for group in METRICS.values() for m in group if not any(f".{m}." in k for k in result)]
    if missing:
        raise SystemExit(f"synthcity returned no {', '.join(missing)} (Metrics.evaluate drops a metric that raised)")
    return result


if __name__ == "__main__":
    main(run)
