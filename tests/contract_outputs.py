"""Record what a fixed set of tabmem commands writes, to show that a refactoring changes no output.

    python tests/contract_outputs.py record DIR          # run the commands into DIR, write DIR/manifest.json
    python tests/contract_outputs.py compare A B         # the files whose content differs between two records

The commands (tiny sizes, a few minutes on 2 cores): ``train`` with tracking and a holdout, ``audit``
with a holdout, ``attack`` with shadow-model attacks, ``quality``, ``dynamiccut``, a small study under
the local executor and under Ray, and ``report`` on the study. Each file is hashed after removing
what legitimately changes between runs: wall-clock timings, absolute paths, dates and versions.
"""

from __future__ import annotations

import hashlib
import io
import json
import re
import sys
from pathlib import Path

import numpy as np
import pandas as pd

TINY = ["--param", "layers=[16]", "--param", "dim_t=8", "--param", "num_timesteps=4", "--param", "batch_size=32"]
_VOLATILE_KEY = re.compile(r"(seconds|timings|_time|^time$|elapsed|updated|^versions$|^started|^finished|^pid$|^run$)")
_VOLATILE_COLUMN = re.compile(r"(seconds|time)")
STUDY = """
[study]
name = "contract"
steps = ["train", "audit", "attack", "quality"]
seeds = [0]
threads = 1

[[datasets]]
label = "toy"
path = "{train}"
test = "{test}"
target = "label"
categorical = ["city", "label"]

[[generators]]
name = "tabddpm"
preset = "small"
epochs = 2
label = "ddpm"
params = {{ batch_size = 32, layers = [16], dim_t = 8, num_timesteps = 4 }}

[train]
holdout = false

[audit]
distances = ["fang2024", "gower"]
n_bootstrap = 50

[attack]
attacks = ["levatt", "dcr", "lira_offline"]
n_bootstrap = 20
n_members = 40
n_non_members = 20
shadows = 4

[quality]
metrics = ["shape", "trend"]
"""


def _tables() -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    rng = np.random.default_rng(0)
    n = 260
    df = pd.DataFrame(
        {
            "age": rng.integers(20, 70, n),
            "income": rng.normal(1e4, 3e3, n).round(2),
            "hours": rng.normal(40, 8, n).round(1),
            "city": rng.choice(["Paris", "Oslo", "Lima", "Rome"], n),
            "label": rng.choice(["yes", "no"], n),
        }
    )
    return df.iloc[:100].reset_index(drop=True), df.iloc[100:160].reset_index(drop=True), df.iloc[160:]


def _run(argv: list[str]) -> None:
    from tabmem.cli import main

    try:
        main(argv)
    except SystemExit as exc:
        if exc.code:
            raise RuntimeError(f"tabmem {' '.join(argv)} exited with {exc.code}") from None


def record(root: Path) -> None:
    import torch

    torch.set_num_threads(1)
    root.mkdir(parents=True, exist_ok=False)
    train, hold, pop = _tables()
    paths = {name: root / f"{name}.csv" for name in ("train", "holdout", "population")}
    for name, df in zip(paths, (train, hold, pop)):
        df.to_csv(paths[name], index=False)
    tr, ho, po = (str(paths[k]) for k in ("train", "holdout", "population"))
    cat = ["--categorical", "city,label"]
    out = root / "out"
    _run(
        ["train", "--train", tr, "--holdout", ho, *cat, "--epochs", "4", "--track-every", "1", "--seed", "1"]
        + ["--threads", "1", "--quiet", "--out", str(out / "train"), *TINY]
    )
    syn = str(out / "train" / "synthetic.csv")
    _run(
        ["audit", "--train", tr, "--synthetic", syn, "--holdout", ho, *cat, "--unseen", "mismatch", "--n-jobs", "1"]
        + ["--out", str(out / "audit")]
    )
    _run(
        ["attack", "--members", tr, "--non-members", ho, "--synthetic", syn, "--population", po, *cat]
        + ["--attacks", "levatt,dcr,mc,lira_offline", "--model", "tabddpm", "--n-shadows", "4", "--epochs", "2"]
        + ["--n-bootstrap", "50", "--n-jobs", "1", *TINY, "--out", str(out / "attack")]
    )
    _run(
        ["quality", "--real", tr, "--synthetic", syn, "--test", ho, "--holdout", ho, *cat, "--target", "label"]
        + ["--metrics", "shape,trend,mle,dcr_share", "--mle-grid", "tiny", "--out", str(out / "quality")]
    )
    _run(
        ["dynamiccut", "--train", tr, "--holdout", ho, "--test", ho, *cat, "--target", "label", "--epochs", "4"]
        + ["--warmup-epochs", "2", "--track-every", "1", "--mle-grid", "tiny", "--threads", "1", *TINY]
        + ["--out", str(out / "dynamiccut")]
    )
    study = root / "contract.toml"
    study.write_text(STUDY.format(train=tr, test=ho))
    for executor in ("local", "ray"):
        _run(["run", str(study), "--executor", executor, "--jobs", "2", "--out", str(out / f"study-{executor}")])
    _run(["report", str(out / "study-local"), "--out", str(out / "report.html")])
    manifest = {str(p.relative_to(out)): _digest(p, out) for p in sorted(out.rglob("*")) if p.is_file()}
    (root / "manifest.json").write_text(json.dumps(manifest, indent=1, sort_keys=True))
    print(f"{len(manifest)} files recorded in {root / 'manifest.json'}")


def _clean(obj, root: str):
    if isinstance(obj, dict):
        return {k: _clean(v, root) for k, v in obj.items() if not _VOLATILE_KEY.search(str(k))}
    if isinstance(obj, list):
        return [_clean(v, root) for v in obj]
    if isinstance(obj, str):
        return obj.replace(root, "<ROOT>")
    return obj


def _digest(path: Path, out: Path) -> str:
    root = str(out.parent)
    data = path.read_bytes()
    if path.suffix == ".json":
        try:
            data = json.dumps(_clean(json.loads(data), root), sort_keys=True).encode()
        except ValueError:
            pass
    elif path.suffix == ".csv":
        try:
            df = pd.read_csv(io.BytesIO(data), keep_default_na=False, dtype=str)
            df = df[[c for c in df.columns if not _VOLATILE_COLUMN.search(c)]]
            data = df.to_csv(index=False).encode()
        except (ValueError, pd.errors.EmptyDataError):
            pass
    elif path.suffix == ".html":
        text = data.decode("utf-8", "replace").replace(root, "<ROOT>")
        text = re.sub(r"\d+(\.\d+)? ?(s|min) (of )?(wall|training|total)", "<T>", text)
        data = re.sub(r"20\d\d-\d\d-\d\d[T ][\d:.+]+", "<DATE>", text).encode()
    elif path.name == ".lock":
        return "lock"
    elif path.suffix in (".toml", ".txt"):
        data = data.decode().replace(root, "<ROOT>").encode()
    elif path.suffix == ".parquet":  # its metadata holds versions: compare the values
        df = pd.read_parquet(path)
        data = df[[c for c in df.columns if not _VOLATILE_COLUMN.search(c)]].to_csv(index=False).encode()
    elif path.suffix == ".pt":
        return "binary"  # torch pickles hold paths and times
    return hashlib.sha256(data).hexdigest()


def compare(a: Path, b: Path) -> int:
    ma, mb = (json.loads((p / "manifest.json").read_text()) for p in (a, b))
    only_a, only_b = sorted(set(ma) - set(mb)), sorted(set(mb) - set(ma))
    differ = sorted(k for k in set(ma) & set(mb) if ma[k] != mb[k])
    print(f"{len(ma)} vs {len(mb)} files; only in first: {only_a}; only in second: {only_b}; differ: {differ}")
    return 1 if (only_a or only_b or differ) else 0


if __name__ == "__main__":
    if sys.argv[1:2] == ["record"]:
        record(Path(sys.argv[2]))
    elif sys.argv[1:2] == ["compare"]:
        sys.exit(compare(Path(sys.argv[2]), Path(sys.argv[3])))
    else:
        sys.exit(__doc__)
