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
    from synthcity.metrics import Metrics

    out = Path(sys.argv[2]).parent
    scores = Metrics.evaluate(train, synthetic, metrics=METRICS, use_cache=False, workspace=out / "workspace")
    return {str(k): float(v) for k, v in scores["mean"].items()}


if __name__ == "__main__":
    main(run)
