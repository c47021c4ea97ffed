"""Shadow generators for the shadow-model attacks: planned, trained in parallel, cached and resumable.

The auditor owns the training procedure, so it can play the game of Carlini et al. (S&P 2022,
"LiRA") and of the MIDST challenge (SaTML 2025): train ``S`` copies of the released generator
(same model, preset, parameters) on tables drawn like its training table, and record which
targets each copy saw. :func:`train_shadows` does that and returns a
:class:`~tabmem.attacks.shadows.ShadowSet` for the attacks.

Plan (:func:`plan_shadows`; targets = members followed by non-members, ``n_train`` rows per shadow):

* ``design="online"``: shadows come in complementary pairs; pair ``j`` splits the targets at
  random into two halves and each shadow of the pair trains on one half, topped up with random
  population rows to ``n_train`` rows. Every target is thus in exactly half of the shadows of
  each complete pair (an odd last shadow takes one half of its pair).
* ``design="offline"``: every shadow trains on ``n_train`` random population rows; no target
  is in any shadow (the offline LiRA of Carlini et al.).

The plan of shadow ``i`` depends only on ``(seed, i)`` and the table sizes, so asking for more
shadows later reuses the ones already trained. Each shadow's training seed and sampling seed
are derived from ``(seed, i)`` too: same seed, same shadows.

Layout of ``out_dir`` (``DIR/shadows/`` under ``tabmem attack --out DIR``)::

    plan.json             settings, fingerprints of the targets and the population, the plan
    NNN/synthetic.parquet the shadow's synthetic table (written last, atomically)
    NNN/done.json         wall and CPU seconds, epochs, final loss of the finished shadow
    NNN/checkpoint.pt     while it trains (a killed run resumes from it bit-exactly)

Only synthetic tables and row positions are written, never a training row.

Executors (:func:`tabmem.runs.pool.run_pool`, the pool of the study executors too): ``"local"``
(``jobs`` spawned worker processes; ``jobs=1`` runs in this process) or ``"ray"`` (one Ray task per
shadow with ``threads`` CPUs, at most ``jobs`` at once; ``address`` joins a running cluster, else a
local instance starts when none is running). A shadow that fails (or whose worker dies) fails
alone: the others finish and are kept, and the error names it.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from tabmem._checks import check_choice, check_positive_int, check_random_state
from tabmem._io import DAMAGE, damage, read_frame, read_json, reading, write_frame, write_json
from tabmem.attacks.shadows import ShadowSet, row_keys
from tabmem.data.schema import Schema, ValidatedTable, raw_frame, validate
from tabmem.errors import ParameterError, TabmemError, name_setting
from tabmem.runs.pool import check_pool, run_pool
from tabmem.runs.protocol import SHADOW_RUN, SHADOWS_RUN, RunDirectory

__all__ = ["MIN_SHADOWS", "ShadowPlan", "plan_shadows", "train_shadows", "load_shadows"]

#: LiRA estimates a mean and a variance per target from the shadows: fewer than 4 cannot do both
MIN_SHADOWS = 4
PLAN_FORMAT = 1
_DROP = "overlap='drop'"
#: the shadow set (``plan.json`` and one sub-directory per shadow) and one shadow, as run types
SHADOW_DONE = ("done.json", "synthetic.parquet")
_SETTINGS = ("model", "preset", "dataset", "params", "design", "n_train", "n_synthetic", "seed")


@dataclass(frozen=True)
class ShadowPlan:
    """Which target and population rows (positions) each shadow trains on."""

    targets: tuple[np.ndarray, ...]
    population: tuple[np.ndarray, ...]
    design: str

    @property
    def n_shadows(self) -> int:
        return len(self.targets)

    def membership(self, n_targets: int) -> np.ndarray:
        """``(S, n_targets)`` booleans: target ``t`` is in shadow ``s``."""
        m = np.zeros((self.n_shadows, n_targets), dtype=bool)
        for s, rows in enumerate(self.targets):
            m[s, rows] = True
        return m


def plan_shadows(
    n_targets: int,
    n_population: int,
    *,
    n_shadows: int,
    n_train: int,
    design: str = "online",
    random_state: int = 0,
) -> ShadowPlan:
    """The training rows of every shadow (module docstring); errors name what is too small."""
    check_choice("design", design, ("online", "offline"))
    check_positive_int("n_train", n_train)
    seed = check_random_state(random_state) or 0
    n_shadows = check_positive_int("n_shadows", n_shadows) or 0
    if n_shadows < MIN_SHADOWS:
        raise ParameterError(
            f"n_shadows must be at least {MIN_SHADOWS} (LiRA fits a mean and a variance per target from the shadows), "
            f"got {n_shadows}"
        )
    targets: list[np.ndarray] = []
    population: list[np.ndarray] = []
    if design == "online":
        half = (n_targets + 1) // 2
        if half > n_train:
            raise ParameterError(
                f"online shadows train on half of the {n_targets} targets ({half} rows), more than n_train={n_train} "
                "rows per shadow: pass fewer targets, a larger shadow training size, or design='offline'"
            )
        need = n_train - n_targets // 2
        if need > n_population:
            raise ParameterError(
                f"the population has {n_population} rows; every online shadow needs up to {need} population rows "
                f"(n_train={n_train} minus half of the {n_targets} targets)"
            )
        for i in range(n_shadows):
            perm = np.random.default_rng(np.random.SeedSequence([seed, 0, i // 2])).permutation(n_targets)
            rows = perm[: n_targets // 2] if i % 2 == 0 else perm[n_targets // 2 :]
            targets.append(np.sort(rows))
            population.append(_draw(n_population, n_train - rows.size, seed, i))
    else:
        if n_train > n_population:
            raise ParameterError(
                f"offline shadows train on population rows only: the population has {n_population} rows, "
                f"fewer than n_train={n_train}"
            )
        for i in range(n_shadows):
            targets.append(np.zeros(0, dtype=np.int64))
            population.append(_draw(n_population, n_train, seed, i))
    return ShadowPlan(tuple(targets), tuple(population), design)


def _draw(n: int, k: int, seed: int, i: int) -> np.ndarray:
    rng = np.random.default_rng(np.random.SeedSequence([seed, 3, i]))
    return np.sort(rng.choice(n, size=k, replace=False)) if k > 0 else np.zeros(0, dtype=np.int64)


def _shadow_seed(seed: int, purpose: int, i: int) -> int:
    return int(np.random.SeedSequence([seed, purpose, i]).generate_state(1, np.uint32)[0])


def _fingerprint(keys: np.ndarray) -> str:
    return hashlib.sha256(np.ascontiguousarray(keys).tobytes()).hexdigest()[:16]


def check_population(
    population: ValidatedTable, target_keys: np.ndarray, *, overlap: str = "error"
) -> tuple[ValidatedTable, int]:
    """The population without rows equal to a target; ``overlap="error"`` refuses such rows.

    A population row identical to a target would put that target into shadows planned without it
    (an "out" shadow that saw it), so the attack's "out" distribution would be wrong.
    """
    check_choice("overlap", overlap, ("error", "drop"))
    clash = np.flatnonzero(np.isin(row_keys(population), target_keys))
    if clash.size and overlap == "error":
        raise TabmemError(
            f"population: {clash.size} row(s) equal a target row (member or non-member), first population rows "
            f"{clash[:5].tolist()}; a shadow planned without that target would see it. Remove them from the "
            f"population (or pass {name_setting(_DROP, '--population-overlap', 'drop')})"
        )
    if not clash.size:
        return population, 0
    keep = np.setdiff1d(np.arange(len(population)), clash)
    data = population.data.iloc[keep].reset_index(drop=True)
    source = None if population.source is None else population.source.iloc[keep].reset_index(drop=True)
    return (
        ValidatedTable(
            data,
            population.schema,
            population.name,
            population.nan,
            population.unseen,
            population.categories,
            population.dtypes,
            population.has_nan,
            source,
        ),
        int(clash.size),
    )


def _check_generator(
    model: str,
    preset: str | None,
    dataset: str | None,
    params: dict[str, Any],
    probe: pd.DataFrame | None,
    schema: Schema,
) -> dict[str, Any]:
    """Build the generator and (with ``probe`` rows) train it for one epoch, so that a generator that
    cannot be built fails once, here, with one line (not in every worker). Returns its resolved parameters."""
    from tabmem.generators import get_generator

    try:
        gen = get_generator(model, preset=preset, dataset=dataset, **params)
        resolved = {k: (list(v) if isinstance(v, tuple) else v) for k, v in gen.get_params().items()}
        if "epochs" in resolved:
            check_positive_int("epochs", resolved["epochs"])
        if probe is not None:
            gen.set_params(epochs=1)
            gen.fit(probe, schema, random_state=0)
    except TabmemError as exc:
        raise TabmemError(f"shadow generator {model!r} cannot be built: {_one_line(exc)}") from None
    except Exception as exc:  # noqa: BLE001 - any failure of a third-party model becomes one line
        raise TabmemError(
            f"shadow generator {model!r} cannot be built: {type(exc).__name__}: {_one_line(exc)}"
        ) from None
    return resolved


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__


def train_shadow(task: dict[str, Any]) -> dict[str, Any]:
    """Train one shadow and write its synthetic table (runs in a worker; resumes from its checkpoint)."""
    import torch

    from tabmem.generators import get_generator

    torch.set_num_threads(int(task["threads"]))
    d = Path(task["dir"])
    done = d / "done.json"
    state = RunDirectory(d.parent, SHADOWS_RUN).stage(d.name, SHADOW_RUN, done=SHADOW_DONE, intact=shadow_damage)
    if state.done:
        return read_json(done, require=("shadow", "seconds"))
    d.mkdir(parents=True, exist_ok=True)
    schema = Schema.from_dict(task["schema"])
    gen = get_generator(task["model"], preset=task["preset"], dataset=task["dataset"], **task["params"])
    ckpt = d / "checkpoint.pt"
    every = task["checkpoint_every"] or max(1, int(gen.epochs) // 10)
    t0, c0 = time.perf_counter(), time.process_time()
    gen.fit(
        task["train"],
        schema,
        random_state=task["train_seed"],
        resume_from=ckpt if state.resume else None,
        checkpoint_every=every,
        checkpoint_path=ckpt,
    )
    syn = gen.sample(int(task["n_synthetic"]), random_state=task["sample_seed"])
    write_frame(d / "synthetic.parquet", syn)
    info = {
        "shadow": task["index"],
        "seconds": time.perf_counter() - t0,
        "cpu_seconds": time.process_time() - c0,
        "epochs": int(gen.epoch_),
        "final_loss": gen.history_[-1].get("loss") if gen.history_ else None,
        "n_train": len(task["train"]),
        "n_synthetic": len(syn),
    }
    write_json(done, info)
    ckpt.unlink(missing_ok=True)
    return info


def train_shadows(
    targets: ValidatedTable,
    population: pd.DataFrame | ValidatedTable,
    schema: Schema,
    out_dir: str | Path,
    *,
    model: str = "tabddpm",
    preset: str | None = "small",
    params: dict[str, Any] | None = None,
    dataset: str | None = None,
    n_shadows: int = 16,
    design: str = "online",
    n_train: int | None = None,
    n_synthetic: int | None = None,
    seed: int = 0,
    executor: str = "local",
    jobs: int = 1,
    threads: int = 1,
    address: str | None = None,
    checkpoint_every: int | None = None,
    overlap: str = "error",
    progress: Callable[[str], None] | None = None,
) -> ShadowSet:
    """Plan, train (or reuse) and load ``n_shadows`` shadow generators; see the module docstring.

    ``targets`` are the members followed by the non-members, validated. ``n_train`` (rows per
    shadow) and ``n_synthetic`` (rows each shadow samples) default to the number of members and
    to the released synthetic table's size, which the caller passes. Re-running with the same
    settings reuses every finished shadow and resumes an interrupted one; different settings in
    an existing directory are an error naming them. ``executor``, ``jobs`` and ``address`` are
    :func:`~tabmem.runs.pool.run_pool`'s; each shadow trains with ``threads`` torch threads.
    """
    check_pool(executor, address)
    check_positive_int("jobs", jobs)
    check_positive_int("threads", threads)
    check_positive_int("checkpoint_every", checkpoint_every, allow_none=True)
    if n_train is None or n_synthetic is None:
        raise ParameterError("train_shadows: pass n_train (rows per shadow) and n_synthetic (rows each shadow samples)")
    check_positive_int("n_synthetic", n_synthetic)
    params = dict(params or {})
    pop = validate(population, schema, name="population", nan="error", extra="ignore")
    target_keys = row_keys(targets)
    pop, n_dropped = check_population(pop, target_keys, overlap=overlap)
    plan = plan_shadows(len(targets), len(pop), n_shadows=n_shadows, n_train=n_train, design=design, random_state=seed)
    out = Path(out_dir)
    shadows = RunDirectory(out, SHADOWS_RUN)
    pending = []
    for i in range(plan.n_shadows):
        state = shadows.stage(f"{i:03d}", SHADOW_RUN, done=SHADOW_DONE, intact=shadow_damage)
        if state.damaged is not None and progress is not None:
            progress(f"warning: shadow {i}: {state.damaged}: training it again")
        if not state.done:
            pending.append(i)
    probe = (raw_frame(targets) if design == "online" else raw_frame(pop)).iloc[:64].reset_index(drop=True)
    resolved = _check_generator(model, preset, dataset, params, probe if pending else None, schema)
    from tabmem.generators import resolve_preset

    preset = resolve_preset(model, preset)  # recorded as resolved: None for the class defaults
    settings = {
        "model": model,
        "preset": preset,
        "dataset": dataset,
        "params": resolved,
        "design": design,
        "n_train": int(n_train),
        "n_synthetic": int(n_synthetic),
        "seed": int(seed),
        "targets": _fingerprint(target_keys),
        "population": _fingerprint(row_keys(pop)),
    }
    _check_settings(out, settings)
    plan_doc = {
        "format": PLAN_FORMAT,
        "settings": settings,
        "n_shadows": plan.n_shadows,
        "n_targets": len(targets),
        "n_population": len(pop),
        "n_population_dropped": n_dropped,
        "shadows": [{"targets": t.tolist(), "population": p.tolist()} for t, p in zip(plan.targets, plan.population)],
    }
    write_json(out / "plan.json", plan_doc)
    t_raw, p_raw = raw_frame(targets).reset_index(drop=True), raw_frame(pop).reset_index(drop=True)
    tasks = []
    for i in pending:
        d = out / f"{i:03d}"
        train = pd.concat([t_raw.iloc[plan.targets[i]], p_raw.iloc[plan.population[i]]], ignore_index=True)
        tasks.append(
            {
                "index": i,
                "dir": str(d),
                "train": train,
                "schema": schema.to_dict(),
                "model": model,
                "preset": preset,
                "dataset": dataset,
                "params": params,
                "train_seed": _shadow_seed(seed, 1, i),
                "sample_seed": _shadow_seed(seed, 2, i),
                "n_synthetic": int(n_synthetic),
                "threads": int(threads),
                "checkpoint_every": checkpoint_every,
            }
        )
    errors: list[str] = []
    finished = [plan.n_shadows - len(tasks)]

    def on_done(_: int, info: dict[str, Any]) -> None:
        finished[0] += 1
        if progress is not None:
            progress(f"shadow {info['shadow']} done in {info['seconds']:.0f} s ({finished[0]}/{plan.n_shadows})")

    def on_failed(k: int, why: str) -> None:
        errors.append(f"shadow {tasks[k]['index']}: {why}")

    run_pool(
        train_shadow,
        tasks,
        on_done=on_done,
        on_failed=on_failed,
        executor=executor,
        jobs=int(jobs),
        address=address,
        num_cpus=int(threads),
        resources_from="--threads",
    )
    if errors:
        raise TabmemError(f"{len(errors)} shadow(s) failed; {errors[0]} (finished shadows are kept: rerun to resume)")
    return load_shadows(out, targets)


def shadow_damage(d: Path) -> str | None:
    """What is wrong with the files of a finished shadow ``d`` (None: nothing): ``done.json`` not a
    tabmem record, or ``synthetic.parquet`` unreadable (truncated) or of another size."""
    import pyarrow.parquet as pq

    try:
        info = read_json(d / "done.json", require=("shadow", "seconds", "n_synthetic"))
    except TabmemError as exc:
        return str(exc)
    path = d / "synthetic.parquet"
    try:
        rows = pq.ParquetFile(path).metadata.num_rows
    except DAMAGE as exc:
        return f"{str(path)!r} is damaged ({damage(exc)})"
    if rows != info["n_synthetic"]:
        return f"{str(path)!r} has {rows} rows, not the {info['n_synthetic']} its done.json records"
    return None


def _check_settings(out: Path, settings: dict[str, Any]) -> None:
    path = out / "plan.json"
    if not path.is_file():
        return
    old = read_json(path, require=("settings",))["settings"]
    if not isinstance(old, dict):
        raise TabmemError(f"{str(path)!r} is damaged: its settings are not a JSON object")
    diff = [k for k in (*_SETTINGS, "targets", "population") if old.get(k) != settings.get(k)]
    if diff:
        raise TabmemError(
            f"{str(out)!r} holds shadows made with other settings ({', '.join(diff)} differ): "
            f"choose another {name_setting('out_dir', '--out')} or remove that directory"
        )


def load_shadows(out_dir: str | Path, targets: ValidatedTable | pd.DataFrame | None = None) -> ShadowSet:
    """The :class:`ShadowSet` of a finished shadow directory (``targets``, if given, must be the planned ones)."""
    out = Path(out_dir)
    doc = read_json(out / "plan.json", require=("n_targets", "shadows", "settings"))
    with reading(out / "plan.json"):
        n_t = int(doc["n_targets"])
        plan = ShadowPlan(
            tuple(np.asarray(s["targets"], dtype=np.int64) for s in doc["shadows"]),
            tuple(np.asarray(s["population"], dtype=np.int64) for s in doc["shadows"]),
            doc["settings"]["design"],
        )
    missing = [i for i in range(plan.n_shadows) if not (out / f"{i:03d}" / "synthetic.parquet").is_file()]
    if missing:
        raise TabmemError(f"{str(out)!r}: shadow(s) {missing[:5]} are not finished (rerun the attack to resume)")
    synthetic = tuple(read_frame(out / f"{i:03d}" / "synthetic.parquet") for i in range(plan.n_shadows))
    keys = row_keys(targets) if targets is not None else np.zeros(n_t, dtype=np.uint64)
    if targets is not None and _fingerprint(keys) != doc["settings"]["targets"]:
        raise TabmemError(f"{str(out)!r}: the shadows were planned for other targets (fingerprints differ)")
    infos = [read_json(out / f"{i:03d}" / "done.json", require=("seconds",)) for i in range(plan.n_shadows)]
    meta = {
        **{k: doc["settings"][k] for k in _SETTINGS},
        "n_shadows": plan.n_shadows,
        "n_population_dropped": doc.get("n_population_dropped", 0),
        "shadow_seconds": [i.get("seconds") for i in infos],
    }
    return ShadowSet(synthetic, plan.membership(n_t), keys, plan.design, meta)
