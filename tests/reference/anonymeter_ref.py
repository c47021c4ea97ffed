"""Run anonymeter's four evaluators on CSV tables and write their numbers as JSON (runs in ``.venv-anon``).

anonymeter pins numpy < 1.27, so it lives in its own virtualenv and tabmem's tests call this
script as a subprocess (``tests/risk/test_anonymeter_reference.py``, ``benchmarks/bench_risk.py``):

    .venv-anon/bin/python tests/reference/anonymeter_ref.py CONFIG.json OUT.json

``CONFIG.json``: ``{"train": csv, "synthetic": csv, "control": csv, "numerical": [...],
"categorical": [...], "secrets": [...], "aux": [[...], [...]], "n_attacks": int, "n_cols": int,
"n_neighbors": int, "confidence": float, "seed": int, "attacks": [...], "n_jobs": int, "warmup": bool}`` (``attacks`` a subset of
``singling_out_univariate``, ``singling_out_multivariate``, ``linkability``, ``inference``; default
all). ``OUT.json``: per attack ``risk``, ``risk_ci``, the three rates with their intervals and
``seconds``; inference per secret column. No tabmem import: this interpreter has none.
"""

from __future__ import annotations

import json
import logging
import sys
import time
import warnings

import numpy as np
import pandas as pd


def _read(path: str, numerical: list[str], categorical: list[str]) -> pd.DataFrame:
    df = pd.read_csv(path, dtype={c: str for c in categorical}, keep_default_na=False, na_values=[""])
    for c in numerical:
        df[c] = pd.to_numeric(df[c])
    return df


def _record(evaluator, confidence: float, seconds: float) -> dict:
    res = evaluator.results(confidence_level=confidence)
    risk = res.risk()
    out = {"risk": risk.value, "risk_ci": list(risk.ci), "seconds": seconds}
    for name, rate in (("attack", res.attack_rate), ("control", res.control_rate), ("baseline", res.baseline_rate)):
        r = rate.to_risk()
        out[f"{name}_rate"] = r.value
        out[f"{name}_rate_ci"] = list(r.ci)
    out["n_success"] = int(res.n_success)
    out["n_control_success"] = float(res.n_control)
    out["n_baseline_success"] = int(res.n_baseline)
    return out


def main(config_path: str, out_path: str) -> None:
    """Evaluate the configured attacks and write the JSON (module docstring)."""
    from anonymeter.evaluators import InferenceEvaluator, LinkabilityEvaluator, SinglingOutEvaluator

    logging.disable(logging.WARNING)
    warnings.simplefilter("ignore")
    cfg = json.loads(open(config_path).read())
    num, cat = cfg["numerical"], cfg["categorical"]
    train, syn, control = (_read(cfg[k], num, cat) for k in ("train", "synthetic", "control"))
    n, conf, seed = cfg["n_attacks"], cfg.get("confidence", 0.95), cfg.get("seed", 0)
    np.random.seed(seed)  # noqa: NPY002 - anonymeter samples targets with numpy's global state
    attacks = cfg.get("attacks") or ["singling_out_univariate", "singling_out_multivariate", "linkability", "inference"]
    out: dict = {"versions": {"numpy": np.__version__, "pandas": pd.__version__}}
    try:
        from importlib.metadata import version

        out["versions"]["anonymeter"] = version("anonymeter")
    except Exception:  # noqa: BLE001 - informational only
        pass
    if cfg.get("warmup"):  # compile numba's distance kernels before any timing (benchmarks)
        from anonymeter.neighbors.mixed_types_kneighbors import MixedTypeKNeighbors

        small = train.head(20)
        MixedTypeKNeighbors(n_neighbors=1, n_jobs=1).fit(small).kneighbors(small)
    for mode in ("univariate", "multivariate"):
        if f"singling_out_{mode}" not in attacks:
            continue
        t = time.perf_counter()
        ev = SinglingOutEvaluator(
            ori=train, syn=syn, control=control, n_attacks=n, n_cols=cfg.get("n_cols", 3), seed=seed
        ).evaluate(mode=mode)
        out[f"singling_out_{mode}"] = _record(ev, conf, time.perf_counter() - t)
    if "linkability" in attacks:
        t = time.perf_counter()
        aux = (list(cfg["aux"][0]), list(cfg["aux"][1]))
        ev = LinkabilityEvaluator(
            ori=train, syn=syn, control=control, aux_cols=aux, n_attacks=n, n_neighbors=cfg.get("n_neighbors", 1)
        ).evaluate(n_jobs=cfg.get("n_jobs", 1))
        out["linkability"] = _record(ev, conf, time.perf_counter() - t)
    if "inference" in attacks:
        out["inference"] = {}
        for secret in cfg["secrets"]:
            t = time.perf_counter()
            aux_cols = [c for c in train.columns if c != secret]
            ev = InferenceEvaluator(
                ori=train,
                syn=syn,
                control=control,
                aux_cols=aux_cols,
                secret=secret,
                regression=secret in num,
                n_attacks=n,
            ).evaluate(n_jobs=cfg.get("n_jobs", 1))
            out["inference"][secret] = _record(ev, conf, time.perf_counter() - t)
    with open(out_path, "w") as fh:
        json.dump(out, fh, indent=1)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
