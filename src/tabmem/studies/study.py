"""Study files (TOML): axes, a pipeline of steps, and the grid of cells they define.

A study file::

    [study]
    name = "memorization-quick"
    steps = ["train", "audit", "quality"]     # the pipeline, names from STEPS (in order)
    seeds = [0, 1]
    threads = 1            # torch/BLAS threads per task; "auto" = available CPUs / jobs
    gpus = 0               # GPUs per task (Ray)
    plugins = []           # modules to import first (they may register steps, generators, ...)

    [[datasets]]           # a registered dataset ...
    name = "adult"
    n_train = 2000         # seeded subsample of the training rows (subsample_seed, default 0)
    [[datasets]]           # ... or files (paths relative to this file)
    path = "data/train.csv"
    test = "data/test.csv"
    target = "y"
    categorical = ["a", "b"]

    [[generators]]
    name = "tabddpm"       # GENERATORS name
    preset = "small"
    epochs = 100
    params = { lr = 0.002 }
    label = "tabddpm"      # default: name, or name-preset

    [[sampling]]           # optional axis: needs the "sample" step
    label = "tlp-9"
    options = { tendency = 9.0 }
    defenses = [{ name = "digit_modifier", p_min = 0.05, p_max = 0.1 }]

    [[mitigations]]        # optional axis: an entry names a step with a placement
    label = "none"

    [train]                # one table per step of the pipeline: that step's options
    track_every = 10
    [audit]
    distances = ["fang2024", "gower"]

    [[exclude]]            # drop cells of the product: every key given must match
    dataset = "wilt"
    generator = ["ctgan", "tvae"]
    [[include]]            # add cells (even excluded ones); omitted keys range over their axis
    dataset = "adult"
    seed = [1, 2]

    [[published]]          # reference numbers kept next to the results (manifest.json)
    dataset = "adult"
    generator = "tabddpm"
    metric = "memorization_rate"
    value = 0.3101
    source = "Fang et al. 2024 (DynamicCut), Table 1"

The grid is datasets x generators x mitigations x sampling x seeds, minus ``exclude``, plus
``include``. Each cell's pipeline is ``[study] steps`` with its mitigation's step placed as that
step says. Each step's config is resolved per cell (:meth:`Step.configure`) and hashed with the
dataset identity, the seed and the keys of the steps that produced the artifacts it receives
(its inputs); the cell id hashes every step key. So changing any value that reaches a step makes
new cells and new directories for that step and the steps that read its outputs, and every
other step is reused (changing an audit setting retrains nothing).

Every problem is reported as one line naming the file, the table and the key
(``study.toml: [audit] unknown key 'distnce' (allowed: ...)``).
"""

from __future__ import annotations

import fnmatch
import hashlib
import importlib
import itertools
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tabmem._io import jsonable
from tabmem.errors import ParameterError, TabmemError
from tabmem.studies._fields import (
    REQUIRED,
    Field,
    check_table,
    integer,
    number,
    string,
    string_list,
    table,
)
from tabmem.studies.inputs import DatasetEntry, parse_dataset
from tabmem.studies.steps.base import STEPS, CellInfo, Step

try:  # Python >= 3.11
    import tomllib
except ModuleNotFoundError:  # pragma: no cover - Python 3.10
    import tomli as tomllib  # type: ignore[no-redef]

__all__ = ["AXES", "Cell", "Study", "StepSpec", "load_study", "select_cells", "short_hash"]

#: axis name in the study file -> column of results.parquet
AXES: dict[str, str] = {
    "datasets": "dataset",
    "generators": "generator",
    "mitigations": "mitigation",
    "sampling": "sampling",
}
_TOP_LEVEL = ("study", *AXES, "exclude", "include", "published")


def short_hash(obj: Any, n: int = 12) -> str:
    """First ``n`` hex digits of the sha256 of ``obj``'s canonical JSON (sorted keys, no spaces)."""
    text = json.dumps(jsonable(obj), sort_keys=True, separators=(",", ":"), allow_nan=False)
    return hashlib.sha256(text.encode()).hexdigest()[:n]


def _threads(key: str, v: Any) -> Any:
    if v == "auto":
        return v
    return integer(1)(key, v)


#: largest seed: results.parquet stores seeds as 64-bit signed integers, and the generators derive
#: their streams from the seed modulo 2**63 (a larger seed would repeat a smaller one's cells)
MAX_SEED = 2**63 - 1


def _seeds(key: str, v: Any) -> list[int]:
    items = v if isinstance(v, list) else [v]
    out = [integer(0, MAX_SEED)(key, s) for s in items]
    if not out:
        raise ParameterError(f"{key} must list at least one seed")
    if len(set(out)) != len(out):
        raise ParameterError(f"{key} lists a seed twice")
    return out


def _step_names() -> list[str]:
    return STEPS.names()


STUDY_FIELDS: dict[str, Field] = {
    "name": Field(REQUIRED, string(), "study name (results, manifest)"),
    "description": Field("", string(empty=True)),
    "variant": Field("", string(empty=True), "e.g. quick or full"),
    "steps": Field(REQUIRED, string_list(_step_names), "the pipeline, in order"),
    "seeds": Field([0], _seeds),
    "threads": Field("auto", _threads, "torch/BLAS threads per task, or auto"),
    "gpus": Field(0, number(0), "GPUs per task (Ray)"),
    "data_dir": Field(None, string(), "dataset directory (default: $TABMEM_DATA_DIR)"),
    "plugins": Field([], string_list(empty=True), "modules imported first"),
    "estimate": Field("", string(empty=True), "free text: the expected cost on the intended hardware"),
}
GENERATOR_FIELDS: dict[str, Field] = {
    "name": Field(REQUIRED, string(), "generator (GENERATORS)"),
    "label": Field(None, string()),
    "preset": Field(None, string(), "named preset; none = class defaults"),
    "epochs": Field(None, integer(1, none=True)),
    "params": Field({}, table, "constructor parameters"),
}
SAMPLING_FIELDS: dict[str, Field] = {
    "label": Field(REQUIRED, string()),
    "options": Field({}, table, "keyword arguments of sample() (the generator's sampling_options)"),
    "defenses": Field([], lambda k, v: _table_list(k, v), "defences (DEFENSES) with their parameters"),
    "n": Field(None, integer(1, none=True), "rows to draw"),
    "draw": Field(0, integer(0), "index of an independent draw (its sampling seed differs)"),
}
_LABELS = {"dataset", "generator", "mitigation", "sampling"}
PUBLISHED_FIELDS: dict[str, Field] = {
    "dataset": Field(REQUIRED, string()),
    "generator": Field(REQUIRED, string()),
    "step": Field("audit", string()),
    "component": Field("", string(empty=True)),
    "metric": Field(REQUIRED, string()),
    "value": Field(REQUIRED, number()),
    "source": Field(REQUIRED, string()),
    "note": Field("", string(empty=True)),
}


def _table_list(key: str, v: Any) -> list[dict[str, Any]]:
    if not isinstance(v, list) or not all(isinstance(x, Mapping) for x in v):
        raise ParameterError(f"{key} must be a list of tables ([{{ name = ..., ... }}]), got {v!r}")
    return [dict(x) for x in v]


def _match_value(key: str, v: Any) -> list[Any]:
    items = v if isinstance(v, list) else [v]
    if key == "seed":
        return [integer(0, MAX_SEED)(key, s) for s in items]
    return [string()(key, s) for s in items]


MATCH_FIELDS: dict[str, Field] = {k: Field(None, _match_value) for k in (*sorted(_LABELS), "seed")}


@dataclass(frozen=True)
class StepSpec:
    """One step of a cell's pipeline: its name, its key (directory ``steps/<name>/<key>``), its config."""

    name: str
    key: str
    config: dict[str, Any]


@dataclass(frozen=True)
class Cell:
    """One point of the grid: its id, readable name, axis labels, seed, axis entries and pipeline."""

    id: str
    name: str
    labels: dict[str, str]
    seed: int
    info: CellInfo
    steps: tuple[StepSpec, ...]

    def row(self) -> dict[str, Any]:
        """The cell columns of results.parquet (store docstring)."""
        g = self.info.generator
        train = next((s for s in self.steps if s.name == "train"), None)
        epochs = (train.config["resolved"].get("epochs") if train else None) or g.get("epochs")
        return {
            "cell": self.id,
            "name": self.name,
            "dataset": self.labels["dataset"],
            "generator": self.labels["generator"],
            "mitigation": self.labels["mitigation"],
            "sampling": self.labels["sampling"],
            "seed": self.seed,
            "model": g["name"],
            "preset": g.get("preset"),
            "epochs": epochs,
            "n_train": self.info.dataset.n_rows,
        }

    def to_dict(self) -> dict[str, Any]:
        """JSON-able form (``config.json``; what a worker receives)."""
        return {
            "id": self.id,
            "name": self.name,
            "labels": dict(self.labels),
            "seed": self.seed,
            "dataset": self.info.dataset.to_dict(),
            "generator": self.info.generator,
            "mitigation": self.info.mitigation,
            "sampling": self.info.sampling,
            "steps": [{"name": s.name, "key": s.key, "config": s.config} for s in self.steps],
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Cell:
        info = CellInfo(
            dataset=DatasetEntry.from_dict(d["dataset"]),
            generator=d["generator"],
            mitigation=d["mitigation"],
            sampling=d["sampling"],
            seed=int(d["seed"]),
        )
        steps = tuple(StepSpec(s["name"], s["key"], s["config"]) for s in d["steps"])
        return cls(id=d["id"], name=d["name"], labels=dict(d["labels"]), seed=int(d["seed"]), info=info, steps=steps)


@dataclass
class Study:
    """A parsed, validated study file and its cells (:func:`load_study`)."""

    name: str
    path: Path
    description: str
    variant: str
    steps: list[str]
    seeds: list[int]
    threads: int | str
    gpus: float
    data_dir: str | None
    plugins: list[str]
    estimate_note: str
    cells: list[Cell]
    published: list[dict[str, Any]] = field(default_factory=list)

    @property
    def hash(self) -> str:
        """Hash of every cell's resolved config (the manifest's study hash)."""
        return short_hash(sorted(c.id for c in self.cells), 16)

    @property
    def axes_present(self) -> list[str]:
        names = ["dataset", "generator"]
        if any(c.info.mitigation is not None for c in self.cells):
            names.append("mitigation")
        if any(c.info.sampling is not None for c in self.cells):
            names.append("sampling")
        return names


def import_plugins(modules: Iterable[str], where: str = "") -> None:
    """Import plugin modules (they register steps, generators, ... into the registries)."""
    for module in modules:
        try:
            importlib.import_module(module)
        except Exception as exc:  # noqa: BLE001 - any import failure of a user module is reported in one line
            raise ParameterError(f"{where}plugins: cannot import {module!r} ({type(exc).__name__}: {exc})") from None


def load_study(path: str | Path) -> Study:
    """Read and check a study file; every error is one :class:`ParameterError` line naming file, table and key."""
    p = Path(path)
    if not p.is_file():
        raise TabmemError(f"study file not found: {str(p)!r}")
    try:
        doc = tomllib.loads(p.read_text(encoding="utf-8-sig"))  # a byte-order mark (Windows editors) is dropped
    except tomllib.TOMLDecodeError as exc:
        raise ParameterError(f"{p.name}: not valid TOML ({exc})") from None
    except UnicodeDecodeError:
        raise ParameterError(f"{p.name}: not a UTF-8 text file") from None
    try:
        return _parse(doc, p)
    except TabmemError as exc:  # one line, prefixed with the file (a SchemaError lists its problems on lines)
        text = "; ".join(part.strip(" -") for part in str(exc).splitlines() if part.strip())
        raise ParameterError(f"{p.name}: {text}") from None


def _entries(doc: Mapping[str, Any], key: str) -> list[Mapping[str, Any]]:
    v = doc.get(key, [])
    if not isinstance(v, list) or not all(isinstance(x, Mapping) for x in v):
        raise ParameterError(f"{key} must be an array of tables ([[{key}]] entries)")
    return v


def _unique_labels(axis: str, labels: Sequence[str]) -> None:
    for label in labels:
        if "/" in label:
            raise ParameterError(f"[[{axis}]] label {label!r} must not contain '/' (cell names use it)")
    dupes = sorted({x for x in labels if labels.count(x) > 1})
    if dupes:
        raise ParameterError(f"[[{axis}]] label {dupes[0]!r} is used twice (give each entry its own label)")


def _parse(doc: Mapping[str, Any], path: Path) -> Study:
    base = path.parent
    if "study" not in doc:
        raise ParameterError("missing the [study] table (name, steps, ...)")
    head = check_table(doc["study"], STUDY_FIELDS, where="[study] ")
    import_plugins(head["plugins"], "[study] ")
    pipeline = head["steps"]
    step_classes: dict[str, type[Step]] = {name: STEPS.get(name) for name in pipeline}
    for name, cls in step_classes.items():
        if cls.placement is not None:
            raise ParameterError(
                f"[study] steps: {name!r} is a mitigation step; name it in a [[mitigations]] entry (step = {name!r})"
            )
    allowed = set(_TOP_LEVEL) | set(pipeline)
    for key in doc:
        if key not in allowed:
            if key in STEPS:
                raise ParameterError(f"[{key}] is given but {key!r} is not in [study] steps")
            raise ParameterError(f"unknown table [{key}] (allowed: {', '.join(sorted(allowed))})")
    step_options = {name: cls.check_options(doc.get(name, {}), f"[{name}] ") for name, cls in step_classes.items()}

    datasets = [
        parse_dataset(dict(v), base, f"[[datasets]] #{i + 1}: ") for i, v in enumerate(_entries(doc, "datasets"))
    ]
    if not datasets:
        raise ParameterError("no [[datasets]] entry: give at least one dataset")
    _unique_labels("datasets", [d.label for d in datasets])
    generators = [_parse_generator(dict(v), i) for i, v in enumerate(_entries(doc, "generators"))]
    if not generators:
        raise ParameterError("no [[generators]] entry: give at least one generator")
    _unique_labels("generators", [g["label"] for g in generators])
    mitigations = [_parse_mitigation(dict(v), i) for i, v in enumerate(_entries(doc, "mitigations"))]
    _unique_labels("mitigations", [m["label"] for m in mitigations])
    sampling = [_parse_sampling(dict(v), i) for i, v in enumerate(_entries(doc, "sampling"))]
    _unique_labels("sampling", [s["label"] for s in sampling])
    if sampling and not any(c.axis == "sampling" for c in step_classes.values()):
        raise ParameterError("[[sampling]] entries need a sampling step in [study] steps (add 'sample' after 'train')")

    axes: dict[str, list[Any]] = {
        "dataset": datasets,
        "generator": generators,
        "mitigation": mitigations or [None],
        "sampling": sampling or [None],
    }
    labels_of = {
        "dataset": [d.label for d in datasets],
        "generator": [g["label"] for g in generators],
        "mitigation": [m["label"] for m in mitigations],
        "sampling": [s["label"] for s in sampling],
    }
    excludes = [_parse_match(dict(v), "exclude", i, labels_of) for i, v in enumerate(_entries(doc, "exclude"))]
    includes = [_parse_match(dict(v), "include", i, labels_of) for i, v in enumerate(_entries(doc, "include"))]
    published = [
        check_table(dict(v), PUBLISHED_FIELDS, where=f"[[published]] #{i + 1}: ")
        for i, v in enumerate(_entries(doc, "published"))
    ]
    for i, pub in enumerate(published):
        for key in ("dataset", "generator"):
            if pub[key] not in labels_of[key]:
                raise ParameterError(
                    f"[[published]] #{i + 1}: {key} {pub[key]!r} is not a label of [[{key}s]] "
                    f"({', '.join(labels_of[key])})"
                )

    combos = _grid(axes, head["seeds"], excludes, includes, labels_of)
    cells: list[Cell] = []
    seen: dict[str, str] = {}
    for d, g, m, s, seed in combos:
        cell = _make_cell(d, g, m, s, seed, pipeline, step_options, bool(mitigations), bool(sampling))
        if cell.id in seen:
            raise ParameterError(
                f"cells {seen[cell.id]!r} and {cell.name!r} have the same resolved config "
                "(two entries differ only by their label?)"
            )
        seen[cell.id] = cell.name
        cells.append(cell)
    if not cells:
        raise ParameterError("the grid is empty (every cell is excluded)")
    return Study(
        name=head["name"],
        path=path.resolve(),
        description=head["description"],
        variant=head["variant"],
        steps=pipeline,
        seeds=head["seeds"],
        threads=head["threads"],
        gpus=head["gpus"],
        data_dir=head["data_dir"],
        plugins=head["plugins"],
        estimate_note=head["estimate"],
        cells=cells,
        published=published,
    )


def _parse_generator(values: dict[str, Any], i: int) -> dict[str, Any]:
    where = f"[[generators]] #{i + 1}: "
    g = check_table(values, GENERATOR_FIELDS, where=where)
    from tabmem.generators import GENERATORS

    try:
        cls = GENERATORS.get(g["name"])
    except TabmemError as exc:
        raise ParameterError(f"{where}name: {exc}") from None
    if g["preset"] is not None and g["preset"].lower() == "none":
        g["preset"] = None
    if g["preset"] is not None and g["preset"] not in cls.PRESETS:
        raise ParameterError(
            f"{where}preset: {g['name']} has no preset {g['preset']!r} (available: {', '.join(sorted(cls.PRESETS)) or 'none'})"
        )
    valid = cls._param_names()
    for key in g["params"]:
        if key not in valid:
            raise ParameterError(f"{where}params.{key}: not a parameter of {g['name']} (valid: {', '.join(valid)})")
    if "epochs" in g["params"]:
        raise ParameterError(f"{where}params.epochs: give epochs = N in the entry itself")
    g["label"] = g["label"] or (g["name"] if g["preset"] is None else f"{g['name']}-{g['preset']}")
    return g


def _parse_mitigation(values: dict[str, Any], i: int) -> dict[str, Any]:
    where = f"[[mitigations]] #{i + 1}: "
    label = values.get("label")
    if not isinstance(label, str) or not label:
        raise ParameterError(f"{where}missing required key 'label'")
    step = values.get("step")
    if step is None:
        extra = sorted(set(values) - {"label"})
        if extra:
            raise ParameterError(f"{where}unknown key {extra[0]!r} (an entry without step is the no-mitigation arm)")
        return {"label": label, "step": None, "options": {}}
    if not isinstance(step, str) or step not in STEPS:
        known = [n for n in STEPS.names() if STEPS.get(n).placement is not None]
        raise ParameterError(f"{where}step: unknown mitigation step {step!r} (available: {', '.join(known) or 'none'})")
    cls = STEPS.get(step)
    if cls.placement is None:
        raise ParameterError(f"{where}step: {step!r} is not a mitigation step (it has no placement)")
    options = cls.check_options({k: v for k, v in values.items() if k not in ("label", "step")}, where)
    return {"label": label, "step": step, "options": options}


def _parse_sampling(values: dict[str, Any], i: int) -> dict[str, Any]:
    return check_table(values, SAMPLING_FIELDS, where=f"[[sampling]] #{i + 1}: ")


def _parse_match(values: dict[str, Any], kind: str, i: int, labels_of: Mapping[str, list[str]]) -> dict[str, list[Any]]:
    where = f"[[{kind}]] #{i + 1}: "
    m = {k: v for k, v in check_table(values, MATCH_FIELDS, where=where).items() if v is not None}
    if not m:
        raise ParameterError(f"{where}give at least one of dataset, generator, mitigation, sampling, seed")
    for key, vals in m.items():
        if key == "seed":
            continue
        for v in vals:
            if v not in labels_of[key]:
                raise ParameterError(
                    f"{where}{key}: {v!r} is not a label of [[{key}s]] (labels: {', '.join(labels_of[key]) or 'none'})"
                    if key != "sampling"
                    else f"{where}{key}: {v!r} is not a label of [[sampling]] (labels: {', '.join(labels_of[key]) or 'none'})"
                )
    return m


def _label(entry: Any) -> str | None:
    if entry is None:
        return None
    return entry.label if isinstance(entry, DatasetEntry) else entry["label"]


def _matches(match: Mapping[str, list[Any]], combo: tuple[Any, ...]) -> bool:
    d, g, m, s, seed = combo
    values = {
        "dataset": _label(d),
        "generator": _label(g),
        "mitigation": _label(m),
        "sampling": _label(s),
        "seed": seed,
    }
    return all(values[k] in allowed for k, allowed in match.items())


def _grid(
    axes: Mapping[str, list[Any]],
    seeds: list[int],
    excludes: list[dict[str, list[Any]]],
    includes: list[dict[str, list[Any]]],
    labels_of: Mapping[str, list[str]],
) -> list[tuple[Any, ...]]:
    """Product of the axes minus excluded combinations, plus included ones (in a stable order)."""
    product = list(itertools.product(axes["dataset"], axes["generator"], axes["mitigation"], axes["sampling"], seeds))
    out = [c for c in product if not any(_matches(ex, c) for ex in excludes)]
    keys = {_combo_key(c) for c in out}
    for inc in includes:
        extra_seeds = sorted(set(inc.get("seed", [])) - set(seeds))
        pool = product + list(
            itertools.product(axes["dataset"], axes["generator"], axes["mitigation"], axes["sampling"], extra_seeds)
        )
        for c in pool:
            if _matches(inc, c) and _combo_key(c) not in keys:
                keys.add(_combo_key(c))
                out.append(c)
    return out


def _combo_key(c: tuple[Any, ...]) -> tuple[Any, ...]:
    return (_label(c[0]), _label(c[1]), _label(c[2]), _label(c[3]), c[4])


def _make_cell(
    d: DatasetEntry,
    g: dict[str, Any],
    m: dict[str, Any] | None,
    s: dict[str, Any] | None,
    seed: int,
    pipeline: list[str],
    step_options: Mapping[str, dict[str, Any]],
    has_mitigations: bool,
    has_sampling: bool,
) -> Cell:
    labels = {
        "dataset": d.label,
        "generator": g["label"],
        "mitigation": m["label"] if m else "none",
        "sampling": s["label"] if s else "default",
    }
    parts = [d.label, g["label"]] + ([labels["mitigation"]] if has_mitigations else [])
    parts += [labels["sampling"]] if has_sampling else []
    name = "/".join(parts) + f"/seed={seed}"
    info = CellInfo(dataset=d, generator=g, mitigation=m, sampling=s, seed=seed)
    steps = list(pipeline)
    options = dict(step_options)
    if m is not None and m["step"] is not None:
        cls = STEPS.get(m["step"])
        where_, anchor = cls.placement  # type: ignore[misc]
        if anchor not in steps:
            raise ParameterError(
                f"[[mitigations]] {m['label']!r}: step {m['step']!r} goes {where_} {anchor!r}, which is not in [study] steps"
            )
        i = steps.index(anchor)
        if where_ == "before":
            steps.insert(i, m["step"])
        elif where_ == "after":
            steps.insert(i + 1, m["step"])
        elif where_ == "instead":
            steps[i] = m["step"]
        else:
            raise ParameterError(f"step {m['step']!r}: placement must be before, after or instead, got {where_!r}")
        options[m["step"]] = m["options"]
    producers: dict[str, str] = {}  # artifact -> key of the step that produced it
    specs: list[StepSpec] = []
    root = short_hash({"dataset": d.identity, "seed": seed})
    for step in steps:
        cls = STEPS.get(step)
        missing = [a for a in cls.needs if a not in producers]
        if missing:
            raise ParameterError(
                f"[study] steps: {step!r} needs {missing[0]!r}, which no earlier step of cell {name!r} produces"
            )
        config = jsonable(cls.configure(options[step], info, f"[{step}] "))
        key = short_hash({"root": root, "step": step, "config": config, "inputs": producers})
        specs.append(StepSpec(step, key, config))
        producers.update({artifact: key for artifact in cls.produces})
    cell_id = short_hash({"cell": [s.key for s in specs]})
    return Cell(id=cell_id, name=name, labels=labels, seed=seed, info=info, steps=tuple(specs))


def select_cells(cells: Sequence[Cell], patterns: Iterable[str]) -> list[Cell]:
    """Cells whose name matches one of the glob patterns (``adult/*``) or whose id starts with one."""
    pats = [p.strip() for item in patterns for p in str(item).split(",") if p.strip()]
    if not pats:
        return list(cells)
    return [c for c in cells if any(fnmatch.fnmatchcase(c.name, p) or c.id.startswith(p) for p in pats)]
