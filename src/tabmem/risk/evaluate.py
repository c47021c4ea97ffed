"""``evaluate_risk``: the three WP29 anonymisation risks of a synthetic table, as anonymeter measures them.

Each attack runs against training targets (rows the generator saw), control targets (real rows
it never saw) and as a naive baseline; the risk is the training success beyond the control's
(:mod:`tabmem.risk.rates`). Every attack draws from its own random stream (the seed and the
attack's name), so adding a secret column leaves the other attacks' numbers unchanged, and the
same seed gives the same bytes.
"""

from __future__ import annotations

import time
import zlib
from collections.abc import Sequence

import numpy as np
import pandas as pd

from tabmem._checks import check_n_jobs, check_positive_int
from tabmem.data.schema import Schema, validate
from tabmem.errors import ParameterError, TabmemError
from tabmem.risk import singling_out as so
from tabmem.risk.inference import correct_guesses
from tabmem.risk.linkability import count_links, fit_index, query, random_links
from tabmem.risk.summary import RiskEstimate, RiskSummary, estimate

__all__ = ["N_ATTACKS", "default_aux", "default_secrets", "evaluate_risk"]

#: attacks per risk by default (anonymeter's n_attacks default)
N_ATTACKS = 2000


def _rng(seed: int, name: str) -> np.random.Generator:
    """The attack ``name``'s own stream of the run's seed."""
    return np.random.default_rng(np.random.SeedSequence([seed, zlib.crc32(name.encode())]))


def default_secrets(schema: Schema) -> tuple[list[str], str]:
    """The schema's target when it names one, else every column; with the reason."""
    if schema.target is not None:
        return [schema.target], f"the schema's target {schema.target!r} (what a model of the synthetic data predicts)"
    return list(schema.columns), "every column (the schema names no target)"


def default_aux(schema: Schema) -> tuple[tuple[list[str], list[str]], str]:
    """The columns' first half and second half in table order; with the reason."""
    cols = list(schema.columns)
    half = (len(cols) + 1) // 2
    return (cols[:half], cols[half:]), "the columns' first half and second half in table order"


def _check_columns(names: Sequence[str], schema: Schema, option: str) -> list[str]:
    names = [str(c) for c in names]
    for c in names:
        if c not in schema.columns:
            raise ParameterError(f"{option}: column {c!r} is not in the training table")
    dupes = sorted({c for c in names if names.count(c) > 1})
    if dupes:
        raise ParameterError(f"{option}: column {dupes[0]!r} is named twice")
    return names


def _sample(n: int, size: int, rng: np.random.Generator) -> np.ndarray:
    return np.sort(rng.choice(n, size=min(size, n), replace=False))


def _singling_out(
    mode: str,
    train: pd.DataFrame,
    syn: pd.DataFrame,
    control: pd.DataFrame,
    schema: Schema,
    *,
    n_attacks: int,
    n_cols: int,
    confidence: float,
    seed: int,
    max_attempts: int,
    warn: list[str],
) -> RiskEstimate:
    rng = _rng(seed, f"singling_out_{mode}")
    tr, sy, co = (t.drop_duplicates(ignore_index=True) for t in (train, syn, control))
    vocab = so.vocabulary([tr, sy, co], schema)
    c_tr, c_sy, c_co = (so.Coded(t, schema, vocab) for t in (tr, sy, co))
    if mode == "univariate":
        queries = so.univariate_queries(c_sy, n_attacks, rng)
        base_cols = 1
    else:
        queries, attempts = so.multivariate_queries(c_sy, n_attacks, n_cols, rng, max_attempts=max_attempts)
        base_cols = n_cols
    if len(queries) < n_attacks:
        warn.append(
            f"singling out ({mode}): found {len(queries)} singling-out queries of the {n_attacks} asked for; "
            "the risk may be underestimated"
        )
    baseline = so.random_queries(c_sy, n_attacks, base_cols, rng)
    n_success = so.count_singling_out(c_tr, queries)
    n_base = so.count_singling_out(c_tr, baseline)
    n_control = so.count_singling_out(c_co, queries)
    correction = None
    if c_co.n != c_tr.n:
        correction = so.control_correction(c_co, queries, c_tr.n, rng)
    return estimate(
        n_attacks=n_attacks,
        n_success=n_success,
        n_control_attacks=n_attacks,
        n_control_success=n_control,
        n_baseline_attacks=n_attacks,
        n_baseline_success=n_base,
        confidence=confidence,
        control_correction=correction,
    )


def _linkability(
    train: pd.DataFrame,
    syn: pd.DataFrame,
    control: pd.DataFrame,
    schema: Schema,
    aux: tuple[list[str], list[str]],
    *,
    n_attacks: int,
    n_neighbors: int,
    confidence: float,
    seed: int,
    n_jobs: int | None,
) -> RiskEstimate:
    rng = _rng(seed, "linkability")
    index_0, index_1 = (fit_index(syn, schema, cols, n_jobs, n_neighbors) for cols in aux)

    def links(real: pd.DataFrame) -> tuple[int, int]:
        targets = real.iloc[_sample(len(real), n_attacks, rng)]
        return len(targets), count_links(query(index_0, targets), query(index_1, targets))

    n_train, n_success = links(train)
    n_ctrl, n_control = links(control)
    base = count_links(
        random_links(len(syn), n_train, n_neighbors, rng), random_links(len(syn), n_train, n_neighbors, rng)
    )
    return estimate(
        n_attacks=n_train,
        n_success=n_success,
        n_control_attacks=n_ctrl,
        n_control_success=n_control,
        n_baseline_attacks=n_train,
        n_baseline_success=base,
        confidence=confidence,
    )


def _inference(
    secret: str,
    train: pd.DataFrame,
    syn: pd.DataFrame,
    control: pd.DataFrame,
    schema: Schema,
    *,
    n_attacks: int,
    tolerance: float,
    confidence: float,
    seed: int,
    n_jobs: int | None,
) -> RiskEstimate:
    rng = _rng(seed, f"inference:{secret}")
    aux = [c for c in schema.columns if c != secret]
    numerical = secret in schema.numerical
    truth = syn[secret].reset_index(drop=True)
    index = fit_index(syn, schema, aux, n_jobs) if aux else None

    def successes(real: pd.DataFrame) -> tuple[int, int]:
        targets = real.iloc[_sample(len(real), n_attacks, rng)]
        if index is not None:
            idx = query(index, targets)[:, 0]
        else:  # a one-column table: nothing to match on, the first synthetic row
            idx = np.zeros(len(targets), dtype=np.int64)
        guesses = truth.iloc[idx].reset_index(drop=True)
        ok = correct_guesses(guesses, targets[secret].reset_index(drop=True), numerical=numerical, tolerance=tolerance)
        return len(targets), int(ok.sum())

    n_train, n_success = successes(train)
    n_ctrl, n_control = successes(control)
    n_base = min(len(syn), n_train)
    base_targets = train.iloc[_sample(len(train), n_base, rng)][secret].reset_index(drop=True)
    base_guesses = truth.iloc[rng.choice(len(syn), size=n_base, replace=False)].reset_index(drop=True)
    n_baseline = int(correct_guesses(base_guesses, base_targets, numerical=numerical, tolerance=tolerance).sum())
    return estimate(
        n_attacks=n_train,
        n_success=n_success,
        n_control_attacks=n_ctrl,
        n_control_success=n_control,
        n_baseline_attacks=n_base,
        n_baseline_success=n_baseline,
        confidence=confidence,
    )


def evaluate_risk(
    train: pd.DataFrame,
    synthetic: pd.DataFrame,
    control: pd.DataFrame,
    *,
    schema: Schema | None = None,
    secrets: Sequence[str] | None = None,
    aux: tuple[Sequence[str], Sequence[str]] | None = None,
    n_attacks: int = N_ATTACKS,
    n_neighbors: int = 1,
    n_cols: int = 3,
    confidence: float = 0.95,
    seed: int = 0,
    tolerance: float = 0.05,
    max_attempts: int | None = None,
    n_jobs: int | None = None,
) -> RiskSummary:
    """Singling out (univariate, multivariate), linkability and inference risks of ``synthetic``.

    ``train`` holds the rows the generator was fitted on, ``control`` real rows it never saw
    (same columns). ``schema`` defaults to :meth:`Schema.infer` on ``train``; ``secrets``
    (inference targets) to the schema's target, else every column; ``aux`` (linkability's two
    column sets) to the columns' two halves. What was chosen is in ``summary.chosen``.
    ``n_attacks`` targets (or queries) per attack, at most the table's rows; ``n_neighbors``
    nearest synthetic rows per half (linkability); ``n_cols`` columns per multivariate query;
    ``tolerance`` the relative error of a right numerical guess; ``max_attempts`` caps the
    multivariate query draws (default ``max(100_000, 500 · n_attacks)``).
    """
    start = time.perf_counter()
    n_attacks = int(check_positive_int("n_attacks", n_attacks))  # type: ignore[arg-type]
    check_positive_int("n_neighbors", n_neighbors)
    check_positive_int("n_cols", n_cols)
    check_n_jobs(n_jobs)
    if not 0.0 < float(confidence) < 1.0:
        raise ParameterError(f"confidence must lie strictly between 0 and 1, got {confidence!r}")
    if not float(tolerance) >= 0.0:
        raise ParameterError(f"tolerance must be >= 0, got {tolerance!r}")
    if max_attempts is None:
        max_attempts = max(100_000, 500 * n_attacks)
    check_positive_int("max_attempts", max_attempts)
    for name, table in (("training", train), ("synthetic", synthetic), ("control", control)):
        if not isinstance(table, pd.DataFrame):
            raise ParameterError(f"the {name} table must be a pandas DataFrame, got {type(table).__name__}")
        if len(table) == 0:
            raise TabmemError(f"the {name} table is empty: the risks need rows in it")
    if schema is None:
        schema = Schema.infer(train)
    chosen: dict[str, str] = {}
    if secrets is None:
        secret_list, why = default_secrets(schema)
        chosen["secrets"] = why
    else:
        if isinstance(secrets, str):
            secrets = [secrets]
        secret_list = _check_columns(secrets, schema, "secrets")
        if not secret_list:
            raise ParameterError("secrets: name at least one column")
    if aux is None:
        aux_sets, why = default_aux(schema)
        chosen["aux"] = why
    else:
        if isinstance(aux, str) or len(aux) != 2:
            raise ParameterError("aux: give two column sets (the attacker's two tables)")
        aux_sets = (_check_columns(aux[0], schema, "aux"), _check_columns(aux[1], schema, "aux"))
        both = [c for c in aux_sets[0] if c in aux_sets[1]]
        if both:
            raise ParameterError(f"aux: column {both[0]!r} is in both column sets")
        if not aux_sets[0] or not aux_sets[1]:
            raise ParameterError("aux: each column set needs at least one column")
    if not aux_sets[1]:
        raise ParameterError("aux: linkability needs at least two columns (one per column set)")
    tr = validate(train, schema, name="training", nan="match", extra="ignore").data
    sy = validate(synthetic, schema, name="synthetic", nan="match", extra="ignore").data
    co = validate(control, schema, name="control", nan="match", extra="ignore").data
    warn: list[str] = []
    for name, n in (("training", len(tr)), ("control", len(co))):
        if n < n_attacks:
            warn.append(
                f"the {name} table has {n} rows: linkability and inference attack each of them (n_attacks={n_attacks})"
            )
    common = dict(confidence=float(confidence), seed=int(seed))
    so_kw = dict(n_attacks=n_attacks, n_cols=n_cols, max_attempts=max_attempts, warn=warn, **common)
    uni = _singling_out("univariate", tr, sy, co, schema, **so_kw)  # type: ignore[arg-type]
    multi = _singling_out("multivariate", tr, sy, co, schema, **so_kw)  # type: ignore[arg-type]
    link = _linkability(
        tr, sy, co, schema, aux_sets, n_attacks=n_attacks, n_neighbors=n_neighbors, n_jobs=n_jobs, **common
    )  # type: ignore[arg-type]
    inference = {
        s: _inference(s, tr, sy, co, schema, n_attacks=n_attacks, tolerance=float(tolerance), n_jobs=n_jobs, **common)  # type: ignore[arg-type]
        for s in secret_list
    }
    for name, est in [
        ("singling out (univariate)", uni),
        ("singling out (multivariate)", multi),
        ("linkability", link),
    ] + [(f"inference ({s})", e) for s, e in inference.items()]:
        if est.baseline_rate >= est.attack_rate:
            warn.append(
                f"{name}: the attack does no better than the naive baseline "
                f"(attack {est.attack_rate:.4f}, baseline {est.baseline_rate:.4f}): its risk cannot be trusted"
            )
    return RiskSummary(
        singling_out_univariate=uni,
        singling_out_multivariate=multi,
        linkability=link,
        inference=inference,
        secrets=secret_list,
        aux=[list(aux_sets[0]), list(aux_sets[1])],
        chosen=chosen,
        n_train=len(tr),
        n_synthetic=len(sy),
        n_control=len(co),
        n_attacks=n_attacks,
        confidence=float(confidence),
        seed=int(seed),
        warnings=warn,
        seconds=round(time.perf_counter() - start, 3),
    )
