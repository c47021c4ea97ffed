"""mostlyai-qa's report on the benchmark tables, for its distance metrics (``_driver.py``).

``qa.report`` is its public entry point: the distance metrics (identical-match share, DCR, NNDR of
synthetic vs training and vs holdout, on its embeddings of every row: no ``max_sample_size_embeddings``
cap) come with its accuracy and similarity sections, which this call also computes. Its embedding
model is bundled with the package (no download at run time).
"""

from __future__ import annotations

import sys
from pathlib import Path

from _driver import main


def run(cfg, train, holdout, synthetic):  # noqa: ANN001, ANN201
    from mostlyai import qa

    out = Path(sys.argv[2]).parent
    _, metrics = qa.report(
        syn_tgt_data=synthetic,
        trn_tgt_data=train,
        hol_tgt_data=holdout,
        report_path=out / "report.html",
    )
    return {"distances": metrics.distances.model_dump()}


if __name__ == "__main__":
    main(run)
