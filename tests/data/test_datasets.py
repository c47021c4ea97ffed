"""Dataset registry: every dataset against independent reads of the files and the SOURCE.md facts,
the split procedures against naive re-implementations, the download path offline (monkeypatched fetch)."""

from __future__ import annotations

import hashlib
import json
import urllib.error
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

import tabmem.data.datasets as ds
from tabmem.data.datasets import (
    DATASETS,
    ChecksumMismatchError,
    DataFile,
    Dataset,
    catalogue,
    list_datasets,
    load_dataset,
    load_table_with_schema,
    register_dataset,
)
from tabmem.data.datasets import files as ds_files
from tabmem.data.io import EXACT_FLOATS
from tabmem.data.schema import validate_table
from tabmem.errors import DataUnavailableError, SchemaError, TabmemError

ALL = ["adult", "default", "shoppers", "cardio", "wilt", "california", "casp", "diabetes"]
SIZES = {
    "adult": (32_561, None, 16_281),
    "default": (27_000, None, 3_000),
    "shoppers": (11_097, None, 1_233),
    "cardio": (44_800, 14_000, 11_200),
    "wilt": (3_096, 775, 968),
    "california": (13_209, 3_303, 4_128),
    "casp": (36_584, None, 9_146),
    "diabetes": (353, None, 89),
}
# (numerical features, categorical features, target) as the SOURCE.md tables say
KINDS = {
    "adult": (6, 8, "income"),
    "default": (14, 9, "default payment next month"),
    "shoppers": (10, 7, "Revenue"),
    "cardio": (5, 6, "cardio"),
    "wilt": (5, 0, "Class"),
    "california": (8, 0, "MedHouseVal"),
    "casp": (9, 0, "RMSD"),
    "diabetes": (9, 1, "target"),
}
TASKS = {n: "regression" if n in ("california", "casp", "diabetes") else "binclass" for n in ALL}


@pytest.fixture(scope="module")
def loaded(shared_data_dir: Path) -> dict[str, Dataset]:
    return {name: load_dataset(name, data_dir=shared_data_dir, download=False) for name in ALL}


def _all_rows(d: Dataset) -> pd.DataFrame:
    return pd.concat(list(d.splits.values()), ignore_index=True)


# ------------------------------------------------------------------------------ sizes, kinds, values
@pytest.mark.parametrize("name", ALL)
def test_sizes_schema_and_no_nan(loaded, name):
    d = loaded[name]
    n_train, n_val, n_test = SIZES[name]
    assert len(d.train) == n_train and len(d.test) == n_test
    assert (d.val is None) if n_val is None else len(d.val) == n_val
    n_num, n_cat, target = KINDS[name]
    s = d.schema
    assert s.target == target and s.task == TASKS[name] and s.name == name
    assert sum(c != target for c in s.numerical) == n_num
    assert sum(c != target for c in s.categorical) == n_cat
    assert (target in s.categorical) == (TASKS[name] != "regression")
    for split, frame in d.splits.items():
        assert list(frame.columns) == list(s.columns)
        assert isinstance(frame.index, pd.RangeIndex) and frame.index.start == 0
        assert not frame.isna().any().any(), f"{name}/{split} has NaN"
        for col in s.numerical:
            assert pd.api.types.is_numeric_dtype(frame[col]) and not pd.api.types.is_bool_dtype(frame[col])
        assert len(d.source_rows[split]) == len(frame)
    # splits are disjoint sets of source records (adult's two splits come from two files)
    if name == "adult":
        assert all(np.array_equal(d.source_rows[k], np.arange(len(d.splits[k]))) for k in d.splits)
    else:
        every = np.concatenate([d.source_rows[k] for k in d.splits])
        assert len(np.unique(every)) == len(every)


@pytest.mark.parametrize("name", ALL)
def test_holdout_splits_validate_against_the_training_schema(loaded, name):
    """val/test pass tabmem's schema check against train: no unseen category, no NaN, right dtypes."""
    d = loaded[name]
    clean = validate_table(d.train, d.schema, name="train")
    categories = {c: set(clean[c]) for c in d.schema.categorical}
    for split, frame in d.splits.items():
        out = validate_table(frame, d.schema, name=split, categories=categories)
        assert len(out) == len(frame)


@pytest.mark.parametrize("name", ["adult", "default", "shoppers", "cardio", "wilt"])
def test_kinds_match_tabcutmix_metadata(shared_data_dir, loaded, name):
    """Column kinds and target equal the indices of the TabCutMix info json (read independently)."""
    info = json.loads((shared_data_dir / name / "info_tabcutmix.json").read_text())
    columns = list(loaded[name].schema.columns)
    if name == "wilt":  # the json indexes UCI's order (class first); wilt.csv has the class last
        columns = [columns[-1], *columns[:-1]]
    if info["column_names"]:
        assert info["column_names"] == columns
    assert {columns[i] for i in info["num_col_idx"]} == set(loaded[name].schema.numerical)
    assert {columns[i] for i in info["cat_col_idx"] + info["target_col_idx"]} == set(loaded[name].schema.categorical)
    assert [columns[i] for i in info["target_col_idx"]] == [loaded[name].schema.target]


def test_adult_values(shared_data_dir, loaded):
    d = loaded["adult"]
    ref = pd.read_csv(shared_data_dir / "adult/adult.data", header=None, skipinitialspace=True)
    np.testing.assert_array_equal(d.train.to_numpy(dtype=object), ref.to_numpy(dtype=object))
    assert d.train["income"].value_counts().to_dict() == {"<=50K": 24_720, ">50K": 7_841}
    assert d.test["income"].value_counts().to_dict() == {"<=50K": 12_435, ">50K": 3_846}  # trailing '.' stripped
    assert (d.train["workclass"] == "?").sum() == 1_836 and (d.test["native.country"] == "?").sum() == 274
    assert d.train.duplicated().sum() == 24
    first_test = "25, Private, 226802, 11th, 7, Never-married, Machine-op-inspct, Own-child, Black, Male, 0, 0, 40, United-States, <=50K"
    assert ", ".join(map(str, d.test.iloc[0].tolist())) == first_test  # first record not lost as a header


def test_default_and_shoppers_targets(loaded):
    assert _all_rows(loaded["default"])["default payment next month"].value_counts().to_dict() == {0: 23_364, 1: 6_636}
    assert "ID" not in loaded["default"].train.columns
    assert set(loaded["default"].train["EDUCATION"]) == set(range(7))
    shoppers = _all_rows(loaded["shoppers"])
    assert shoppers["Revenue"].value_counts().to_dict() == {False: 10_422, True: 1_908}
    assert shoppers.duplicated().sum() == 125


def test_cardio_wilt_california_values(shared_data_dir, loaded):
    cardio = loaded["cardio"]
    assert "id" not in cardio.train.columns
    assert _all_rows(cardio)["cardio"].value_counts().to_dict() == {0: 35_021, 1: 34_979}
    split_map = pd.read_csv(shared_data_dir / "cardio/split_tabddpm.csv")
    for split in ("train", "val", "test"):
        np.testing.assert_array_equal(
            cardio.source_rows[split], split_map.loc[split_map.split == split, "row"].to_numpy()
        )
    wilt = loaded["wilt"]
    counts = {s: f.Class.value_counts().sort_index().tolist() for s, f in wilt.splits.items()}
    assert counts == {"train": [2_929, 167], "val": [733, 42], "test": [916, 52]}  # SOURCE.md, y = Class - 1
    cal = _all_rows(loaded["california"])
    means = [3.870671, 28.639486, 5.429000, 1.096675, 1425.476744, 3.070655, 35.631861, -119.569704, 2.068558]
    np.testing.assert_allclose(cal.mean().to_numpy(), means, atol=5e-6)
    assert cal["MedHouseVal"].max() == 5.00001 and (cal["MedHouseVal"] == 5.00001).sum() == 965


def test_tabddpm_split_rows_equal_the_npy_files(shared_data_dir, loaded):
    """Each TabDDPM split holds exactly the records of X_num_<split>.npy / y_<split>.npy (as multisets)."""
    for name, offset, dtype in (("wilt", 1, np.float64), ("california", 0, np.float32)):
        d = loaded[name]
        for split, frame in d.splits.items():
            x = np.load(shared_data_dir / name / f"tabddpm_split/X_num_{split}.npy")
            y = np.load(shared_data_dir / name / f"tabddpm_split/y_{split}.npy")
            ours = frame.to_numpy(dtype=np.float64).copy()
            ours[:, -1] -= offset
            theirs = np.column_stack([x, y]).astype(np.float64)
            ours, theirs = ours.astype(dtype), theirs.astype(dtype)
            if dtype == np.float64:
                ours, theirs = np.round(ours, 5), np.round(theirs, 5)
            np.testing.assert_array_equal(ours[np.lexsort(ours.T)], theirs[np.lexsort(theirs.T)])


def test_casp_and_diabetes_splits_match_sklearn(shared_data_dir, loaded):
    from sklearn.datasets import load_diabetes
    from sklearn.model_selection import train_test_split

    casp = pd.read_csv(shared_data_dir / "casp/CASP.csv", **EXACT_FLOATS)
    tr, te = train_test_split(np.arange(len(casp)), train_size=0.8, random_state=42)
    np.testing.assert_array_equal(loaded["casp"].source_rows["train"], tr)
    np.testing.assert_array_equal(loaded["casp"].test.to_numpy(), casp.to_numpy()[te])
    assert loaded["casp"].schema.columns[0] == "RMSD"
    assert abs(_all_rows(loaded["casp"])["RMSD"].mean() - 7.7485) < 5e-4
    raw = load_diabetes(scaled=False)
    tr, te = train_test_split(np.arange(442), train_size=0.8, random_state=42)
    diab = loaded["diabetes"]
    np.testing.assert_array_equal(diab.train.drop(columns="target").to_numpy(), raw.data[tr])
    np.testing.assert_array_equal(diab.test["target"].to_numpy(), raw.target[te])
    assert set(diab.train["sex"]) == {1, 2} and diab.train["sex"].dtype == np.int64  # raw units, not scaled


def test_raw_values_parsed_exactly(shared_data_dir, loaded):
    """Values equal Python's float() of the file text (pandas' default parser is off by an ulp sometimes)."""
    lines = (shared_data_dir / "california/california.csv").read_text().splitlines()[1:]
    exact = np.array([[float(v) for v in line.split(",")] for line in lines])
    d = loaded["california"]
    for split, frame in d.splits.items():
        np.testing.assert_array_equal(frame.to_numpy(), exact[d.source_rows[split]])


# ------------------------------------------------------------------------------ split procedures
def _naive_tabcutmix(table: pd.DataFrame, categorical, seed: int):
    """Literal transcription of the procedure in SOURCE.md (cumulative in-place shuffles)."""
    n = len(table)
    n_train = int(0.9 * n)
    idx = list(range(n))
    while True:
        rs = np.random.RandomState(seed)
        arr = np.array(idx)
        rs.shuffle(arr)
        idx = arr.tolist()
        train = idx[:n_train]
        if all(len(set(table[c].iloc[train])) == len(set(table[c])) for c in categorical):
            return idx[:n_train], idx[n - (n - n_train) :], seed
        seed += 1


@pytest.mark.parametrize("name", ["default", "shoppers"])
def test_seed82_split_equals_file_and_keeps_paper_order(shared_data_dir, loaded, name):
    d = loaded[name]
    perm = np.random.RandomState(82).permutation(SIZES[name][0] + SIZES[name][2])
    np.testing.assert_array_equal(d.source_rows["train"], perm[: SIZES[name][0]])
    np.testing.assert_array_equal(d.source_rows["test"], perm[SIZES[name][0] :])
    stored = pd.read_csv(shared_data_dir / name / "split_tabcutmix_seed82.csv")
    np.testing.assert_array_equal(np.sort(d.source_rows["test"]), stored.loc[stored.split == "test", "row"].to_numpy())


def test_tabcutmix_split_seed_increment_matches_naive():
    rng = np.random.default_rng(0)
    last_test_slot = np.random.RandomState(82).permutation(30)[-1]
    seeds = []
    for trial in range(12):
        table = pd.DataFrame({"a": rng.integers(0, 3, 30).astype(str), "b": rng.normal(size=30)})
        # a one-off category; on even trials it sits where seed 82 sends it to test, so the seed must move on
        table.loc[last_test_slot if trial % 2 == 0 else int(rng.integers(30)), "a"] = "z"
        ours = ds.tabcutmix_split(table, ["a"], seed=82)
        ref = _naive_tabcutmix(table, ["a"], 82)
        assert ours[2] == ref[2]
        np.testing.assert_array_equal(ours[0], ref[0])
        np.testing.assert_array_equal(ours[1], ref[1])
        assert len(ours[0]) == 27 and len(ours[1]) == 3 and "z" in set(table["a"].iloc[ours[0]])
        seeds.append(ours[2])
    assert all(s > 82 for s in seeds[::2])


def test_loading_leaves_the_global_rng_alone(shared_data_dir):
    np.random.seed(123)  # noqa: NPY002 (the point is the legacy global state)
    before = np.random.get_state()[1].copy()  # noqa: NPY002
    load_dataset("shoppers", data_dir=shared_data_dir, download=False)
    np.testing.assert_array_equal(np.random.get_state()[1], before)  # noqa: NPY002


def _link_dataset(src: Path, dest: Path, keep) -> None:
    dest.mkdir(parents=True)
    for f in src.rglob("*"):
        rel = f.relative_to(src)
        if f.is_file() and keep(str(rel)):
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            (dest / rel).symlink_to(f)


@pytest.mark.parametrize("name", ["wilt", "california", "default"])
def test_derived_files_are_rederived_when_absent(shared_data_dir, loaded, tmp_path, name):
    """Without split_tabddpm.csv / california.csv / the seed-82 file, code re-derives the same splits."""
    derived = {"split_tabddpm.csv", "california.csv", "split_tabcutmix_seed82.csv"}
    _link_dataset(shared_data_dir / name, tmp_path / "data" / name, lambda rel: rel not in derived)
    d = load_dataset(name, data_dir=tmp_path / "data", cache_dir=tmp_path / "cache", download=False)
    ref = loaded[name]
    for split, frame in ref.splits.items():
        if name == "wilt":  # 10 duplicate pairs straddle splits: compare contents, ambiguous copies are identical
            a, b = frame.to_numpy(), d.splits[split].to_numpy()
            np.testing.assert_array_equal(a[np.lexsort(a.T)], b[np.lexsort(b.T)])
        else:
            pd.testing.assert_frame_equal(d.splits[split], frame, check_exact=True)
            np.testing.assert_array_equal(d.source_rows[split], ref.source_rows[split])
    if name == "wilt":
        stored = pd.read_csv(shared_data_dir / "wilt/split_tabddpm.csv")
        files = {
            s: (
                np.load(shared_data_dir / f"wilt/tabddpm_split/X_num_{s}.npy"),
                np.load(shared_data_dir / f"wilt/tabddpm_split/y_{s}.npy"),
            )
            for s in ("train", "val", "test")
        }
        table = pd.read_csv(shared_data_dir / "wilt/wilt.csv")
        again = ds.derive_tabddpm_split(table, catalogue.WILT_COLUMNS[:5], "Class", files, target_offset=1.0)
        np.testing.assert_array_equal(again["ambiguous"], stored["ambiguous"])
        clear = stored["ambiguous"] == 0
        np.testing.assert_array_equal(again.loc[clear, "split"], stored.loc[clear, "split"])


def test_stale_split_file_is_rejected(shared_data_dir, tmp_path):
    _link_dataset(shared_data_dir / "shoppers", tmp_path / "shoppers", lambda rel: rel != "split_tabcutmix_seed82.csv")
    stored = pd.read_csv(shared_data_dir / "shoppers/split_tabcutmix_seed82.csv")
    stored["split"] = np.where(stored["row"] < 11_097, "train", "test")  # an ordered 90/10 cut, not seed 82
    stored.to_csv(tmp_path / "shoppers/split_tabcutmix_seed82.csv", index=False)
    with pytest.raises(TabmemError, match="differ from the re-derived split"):
        load_dataset("shoppers", data_dir=tmp_path, cache_dir=tmp_path / "cache", download=False)


# ------------------------------------------------------------------------------ download path (offline)
class FakeWeb:
    """Serves files of the shared data dir by URL; records the URLs asked for."""

    def __init__(self, root: Path, fail: set[str] = frozenset(), corrupt: set[str] = frozenset()):
        self.root, self.fail, self.corrupt, self.calls = root, fail, corrupt, []

    def __call__(self, url: str, timeout: float) -> bytes:
        self.calls.append(url)
        assert timeout > 0
        if any(f in url for f in self.fail):
            raise urllib.error.URLError("[Errno -3] Temporary failure in name resolution")
        for spec in DATASETS.in_order():
            for f in spec.files:
                if url in f.urls:
                    payload = (self.root / spec.name / f.path).read_bytes()
                    return payload[:-10] + b"garbage!!\n" if any(c in url for c in self.corrupt) else payload
        raise AssertionError(f"unexpected URL {url}")


def test_download_into_cache_verified_and_atomic(shared_data_dir, tmp_path, monkeypatch, loaded):
    web = FakeWeb(shared_data_dir)
    monkeypatch.setattr(ds_files, "_fetch", web)
    d = load_dataset("adult", data_dir=tmp_path / "empty", cache_dir=tmp_path / "cache")
    assert len(web.calls) == 2 and all(u.startswith("https://archive.ics.uci.edu/") for u in web.calls)
    for name in ("adult.data", "adult.test"):
        cached = tmp_path / "cache/adult" / name
        assert hashlib.sha256(cached.read_bytes()).hexdigest() == ds.get_dataset_spec("adult").file(name).sha256
    assert not list((tmp_path / "cache/adult").glob("*.part"))
    pd.testing.assert_frame_equal(d.train, loaded["adult"].train, check_exact=True)
    assert next(
        i for i in list_datasets(data_dir=tmp_path / "empty", cache_dir=tmp_path / "cache") if i.name == "adult"
    ).available_locally
    load_dataset("adult", data_dir=tmp_path / "empty", cache_dir=tmp_path / "cache", verify=True)
    assert len(web.calls) == 2  # served from the cache the second time


def test_download_falls_back_to_the_mirror(shared_data_dir, tmp_path, monkeypatch):
    web = FakeWeb(shared_data_dir, fail={"archive.ics.uci.edu"})
    monkeypatch.setattr(ds_files, "_fetch", web)
    d = load_dataset("casp", cache_dir=tmp_path / "cache", data_dir=tmp_path / "empty")
    assert len(d.train) == 36_584
    assert [u.split("/")[2] for u in web.calls] == ["archive.ics.uci.edu", "raw.githubusercontent.com"]


def test_download_rederives_wilt_split_from_npy(shared_data_dir, tmp_path, monkeypatch, loaded):
    web = FakeWeb(shared_data_dir)
    monkeypatch.setattr(ds_files, "_fetch", web)
    d = load_dataset("wilt", cache_dir=tmp_path / "cache", data_dir=tmp_path / "empty")
    assert len(web.calls) == 7 and not (tmp_path / "cache/wilt/split_tabddpm.csv").exists()
    assert {s: len(f) for s, f in d.splits.items()} == {"train": 3_096, "val": 775, "test": 968}


def test_interrupted_stream_leaves_no_partial_file(shared_data_dir, tmp_path, monkeypatch):
    """A connection dropped mid-body falls through to the mirror; chunks are streamed, never a .part left."""
    payload = (shared_data_dir / "casp/CASP.csv").read_bytes()
    calls = []

    def chunked(url, timeout):
        calls.append(url)
        for i in range(0, len(payload), 1 << 16):
            if "archive.ics.uci.edu" in url and i > len(payload) // 2:
                raise ConnectionResetError("Connection reset by peer")
            yield payload[i : i + (1 << 16)]

    monkeypatch.setattr(ds_files, "_fetch", chunked)
    d = load_dataset("casp", cache_dir=tmp_path / "cache", data_dir=tmp_path / "empty")
    assert len(d.test) == 9_146 and len(calls) == 2
    assert sorted(p.name for p in (tmp_path / "cache/casp").iterdir()) == ["CASP.csv"]


def test_checksum_mismatch_saves_nothing(shared_data_dir, tmp_path, monkeypatch):
    monkeypatch.setattr(ds_files, "_fetch", FakeWeb(shared_data_dir, corrupt={"shoppers", "00468"}))
    with pytest.raises(ChecksumMismatchError, match="checksum is wrong") as err:
        load_dataset("shoppers", cache_dir=tmp_path / "cache", data_dir=tmp_path / "empty")
    assert "b3055ee355f59134d851d32641183cb4a8b45def7124d2f50442a042f358e0d9" in str(err.value)
    assert not (tmp_path / "cache/shoppers").exists() or not any((tmp_path / "cache/shoppers").iterdir())


def test_offline_gives_clear_error(shared_data_dir, tmp_path, monkeypatch):
    monkeypatch.setattr(ds_files, "_fetch", FakeWeb(shared_data_dir, fail={"https://"}))
    with pytest.raises(DataUnavailableError) as err:
        load_dataset("adult", cache_dir=tmp_path / "cache", data_dir=tmp_path / "mydata")
    msg = str(err.value)
    assert "could not download 'adult.data'" in msg and "name resolution" in msg
    assert str(tmp_path / "mydata" / "adult") in msg and "TABMEM_DATA_DIR" in msg


def test_no_download_when_disabled_or_impossible(shared_data_dir, tmp_path, monkeypatch):
    web = FakeWeb(shared_data_dir)
    monkeypatch.setattr(ds_files, "_fetch", web)
    with pytest.raises(DataUnavailableError, match="download=False"):
        load_dataset("adult", cache_dir=tmp_path / "cache", data_dir=tmp_path / "empty", download=False)
    with pytest.raises(DataUnavailableError, match="Kaggle"):
        load_dataset("cardio", cache_dir=tmp_path / "cache", data_dir=tmp_path / "empty")
    assert web.calls == []


def test_verify_detects_corrupted_local_file(shared_data_dir, tmp_path):
    _link_dataset(shared_data_dir / "casp", tmp_path / "casp", lambda rel: rel != "CASP.csv")
    text = (shared_data_dir / "casp/CASP.csv").read_bytes()
    (tmp_path / "casp/CASP.csv").write_bytes(text.replace(b"17.284", b"17.285", 1))
    with pytest.raises(ChecksumMismatchError, match="CASP.csv"):
        load_dataset("casp", data_dir=tmp_path, cache_dir=tmp_path / "cache", download=False, verify=True)
    assert ds.verify_local_files("casp", data_dir=tmp_path, cache_dir=tmp_path / "cache") == {"CASP.csv": False}
    # without verify a same-size edit loads (documented); a truncated file is caught by the row-count check
    (tmp_path / "casp/CASP.csv").write_bytes(text[: len(text) // 2].rsplit(b"\n", 1)[0] + b"\n")
    with pytest.raises(TabmemError, match="rows, expected"):
        load_dataset("casp", data_dir=tmp_path, cache_dir=tmp_path / "cache", download=False)


def test_corrupted_npy_gives_clear_error(shared_data_dir, tmp_path):
    _link_dataset(
        shared_data_dir / "wilt",
        tmp_path / "wilt",
        lambda rel: rel not in ("split_tabddpm.csv", "tabddpm_split/y_val.npy"),
    )
    (tmp_path / "wilt/tabddpm_split/y_val.npy").write_bytes(b"not a numpy file")
    with pytest.raises(TabmemError, match="y_val.npy: not a readable .npy file"):
        load_dataset("wilt", data_dir=tmp_path, cache_dir=tmp_path / "cache", download=False)


def test_directory_resolution(monkeypatch, tmp_path, shared_data_dir):
    monkeypatch.setenv("TABMEM_DATA_DIR", str(shared_data_dir))
    monkeypatch.setenv("TABMEM_CACHE_DIR", str(tmp_path / "c"))
    assert ds.resolve_data_dir() == shared_data_dir and ds.resolve_cache_dir() == tmp_path / "c"
    assert ds.resolve_data_dir(tmp_path) == tmp_path
    assert len(load_dataset("wilt", download=False).train) == 3_096
    monkeypatch.delenv("TABMEM_DATA_DIR")
    monkeypatch.delenv("TABMEM_CACHE_DIR")
    assert ds.resolve_data_dir() is None and ds.resolve_cache_dir() == Path.home() / ".cache" / "tabmem"


# ------------------------------------------------------------------------------ registry, listing, any file
def test_list_datasets(shared_data_dir, tmp_path):
    infos = {i.name: i for i in list_datasets(data_dir=shared_data_dir)}
    assert list(infos) == ALL
    for name, (n_train, n_val, n_test) in SIZES.items():
        i = infos[name]
        assert (i.n_train, i.n_val, i.n_test) == (n_train, n_val, n_test)
        assert i.n_rows == n_train + (n_val or 0) + n_test
        assert (i.n_numerical, i.n_categorical, i.target) == KINDS[name] and i.available_locally
        assert i.source and i.split
    assert infos["adult"].n_rows == 48_842 and infos["casp"].n_rows == 45_730
    empty = {i.name: i.available_locally for i in list_datasets(data_dir=tmp_path, cache_dir=tmp_path)}
    assert empty == {n: n == "diabetes" for n in ALL}


def test_register_dataset_and_errors(tmp_path):
    (tmp_path / "toy_dataset").mkdir()
    (tmp_path / "toy_dataset/toy.csv").write_text("x,c,y\n1.5,a,0\n2.5,b,1\n3.5,a,1\n")

    def toy(files):
        t = pd.read_csv(files.path("toy.csv"))
        return {"train": t.iloc[:2], "test": t.iloc[2:]}

    kwargs = dict(task="binclass", target="y", columns=["x", "c", "y"], categorical=["c", "y"])
    try:
        register_dataset("toy_dataset", files=[DataFile("toy.csv")], sizes={"train": 2, "test": 1}, **kwargs)(toy)
        d = load_dataset("toy_dataset", data_dir=tmp_path, download=False)
        assert d.schema.numerical == ("x",) and d.schema.categorical == ("c", "y")
        assert d.test["x"].tolist() == [3.5] and d.source_rows["test"].tolist() == [2]
        assert "toy_dataset" in [i.name for i in list_datasets(data_dir=tmp_path)]
        with pytest.raises(ValueError, match="already registered"):
            register_dataset("toy_dataset", **kwargs)(toy)
        register_dataset("toy_dataset", sizes={"train": 5}, overwrite=True, files=[DataFile("toy.csv")], **kwargs)(toy)
        with pytest.raises(TabmemError, match="train split has 2 rows, expected 5"):
            load_dataset("toy_dataset", data_dir=tmp_path, download=False)
        with pytest.raises(DataUnavailableError, match="no anonymous public download"):
            load_dataset("toy_dataset", data_dir=tmp_path / "elsewhere", cache_dir=tmp_path / "c")
        register_dataset("toy_dataset", overwrite=True, **kwargs)(lambda files: {"train": 1, "validation": 2})
        with pytest.raises(TabmemError, match=r"missing \['test'\], unknown \['validation'\]"):
            load_dataset("toy_dataset", data_dir=tmp_path)
    finally:
        if "toy_dataset" in DATASETS:
            DATASETS.unregister("toy_dataset")
    with pytest.raises(ValueError, match="categorical exactly when"):
        register_dataset("bad", task="regression", target="y", columns=["y"], categorical=["y"])
    with pytest.raises(ValueError, match="not one of the columns"):
        register_dataset("bad", task="regression", target="z", columns=["y"], categorical=[])
    with pytest.raises(TabmemError, match="unknown dataset 'adultt'.*adult"):
        load_dataset("adultt")


def test_load_table_with_schema(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text("age,city,code,score,label\n30,Paris,1,0.5,yes\n41,Rome,2,0.7,no\n29,Paris,1,0.1,no\n")
    table, schema = load_table_with_schema(path, target="label")
    # documented rule: strings, and integers with <= 20 distinct values that repeat (at most half as many
    # distinct values as rows), are categorical; the rest numerical. Three rows: age and code do not repeat enough.
    assert len(table) == 3 and schema.categorical == ("city", "label") and schema.task == "binclass"
    assert schema.numerical == ("age", "code", "score")
    table, schema = load_table_with_schema(path, categorical="age, score", numerical=["code"], target="score")
    assert schema.categorical == ("age", "city", "score", "label") and schema.numerical == ("code",)
    pq = tmp_path / "t.parquet"
    table.to_parquet(pq)
    assert load_table_with_schema(pq)[1].columns == schema.columns
    with pytest.raises(SchemaError, match="'nope'"):
        load_table_with_schema(path, categorical="nope")
    with pytest.raises(TabmemError, match="not found"):
        load_table_with_schema(tmp_path / "missing.csv")


def test_cli_datasets(shared_data_dir, tmp_path):
    from tabmem.cli import cli

    result = CliRunner().invoke(cli, ["datasets", "--data-dir", str(shared_data_dir), "--verify"], terminal_width=200)
    assert result.exit_code == 0, result.output
    lines = {line.split()[1]: line for line in result.output.splitlines() if line.startswith("│")}
    assert set(lines) == set(ALL)
    assert "44,800/14,000/11,200" in lines["cardio"] and "32,561/-/16,281" in lines["adult"]
    assert all(" yes " in line for line in lines.values()) and "MISMATCH" not in result.output
    result = CliRunner().invoke(cli, ["datasets", "--data-dir", str(tmp_path), "--cache-dir", str(tmp_path)])
    assert result.exit_code == 0
    lines = {line.split()[1]: line for line in result.output.splitlines() if line.startswith("│")}
    assert " no " in lines["adult"] and " yes " in lines["diabetes"]


# ------------------------------------------------------------------------------ property: TabDDPM matching
@settings(max_examples=40, deadline=None)
@given(
    pool=st.lists(st.tuples(st.integers(-500, 500), st.integers(0, 99_999), st.integers(0, 1)), min_size=1, max_size=8),
    data=st.data(),
)
def test_derive_tabddpm_split_recovers_any_assignment(pool, data):
    """Random records with many duplicates, a random split and shuffled split files: the derived map puts
    exactly the split files' records in each split, and flags ambiguity exactly when identical records straddle splits."""
    n = data.draw(st.integers(1, 25))
    picks = data.draw(st.lists(st.integers(0, len(pool) - 1), min_size=n, max_size=n))
    records = [pool[i] for i in picks]
    table = pd.DataFrame(
        {"a": [r[0] / 7 for r in records], "b": [r[1] / 1e5 for r in records], "y": [r[2] + 1 for r in records]}
    )
    assign = data.draw(st.lists(st.sampled_from(["train", "val", "test"]), min_size=n, max_size=n))
    seed = data.draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    arrays = {}
    for split in ("train", "val", "test"):
        rows = rng.permutation([i for i in range(n) if assign[i] == split]).astype(int)
        x = table[["a", "b"]].to_numpy()[rows] + rng.uniform(-1e-9, 1e-9, (len(rows), 2))  # float noise < 5 decimals
        arrays[split] = (x.reshape(len(rows), 2), table["y"].to_numpy()[rows] - 1)
    got = ds.derive_tabddpm_split(table, ["a", "b"], "y", arrays, target_offset=1.0, decimals=5)
    assert got["row"].tolist() == list(range(n))
    key = [tuple(np.round([a, b], 5)) + (y,) for a, b, y in table.itertuples(index=False)]
    for split in ("train", "val", "test"):
        derived = sorted(key[i] for i in range(n) if got["split"][i] == split)
        expected = sorted(key[i] for i in range(n) if assign[i] == split)
        assert derived == expected
    for i in range(n):
        spread = {assign[j] for j in range(n) if key[j] == key[i]}
        assert got["ambiguous"][i] == int(len(spread) > 1)


def test_derive_tabddpm_split_rejects_foreign_rows():
    table = pd.DataFrame({"a": [1.0, 2.0], "y": [0, 1]})
    arrays = {"train": (np.array([[1.0]]), np.array([0])), "test": (np.array([[3.0]]), np.array([1]))}
    with pytest.raises(TabmemError, match="1 record\\(s\\) have no counterpart"):
        ds.derive_tabddpm_split(table, ["a"], "y", arrays)


def test_the_removed_alias_is_gone():
    # one import path per module: tabmem.data.datasets (the tabmem.datasets re-export was removed)
    with pytest.raises(ModuleNotFoundError):
        import tabmem.datasets  # noqa: F401


def test_unusable_cache_dir_is_reported(shared_data_dir, tmp_path, monkeypatch):
    monkeypatch.setattr(ds_files, "_fetch", FakeWeb(shared_data_dir))
    (tmp_path / "a_file").write_text("not a directory")
    with pytest.raises(DataUnavailableError, match="cannot create the dataset cache"):
        load_dataset("casp", cache_dir=tmp_path / "a_file", data_dir=tmp_path / "empty")


def test_cli_datasets_one(shared_data_dir, capsys):
    from tabmem.cli import cli, main

    result = CliRunner().invoke(cli, ["datasets", "adult", "--data-dir", str(shared_data_dir), "--verify"])
    assert result.exit_code == 0, result.output
    assert "education.num" in result.output and "MISMATCH" not in result.output
    assert [line.split()[1:4] for line in result.output.splitlines() if "adult.data" in line] == [
        ["adult.data", "│", "required"]
    ]
    assert "data dir │" in next(line for line in result.output.splitlines() if "adult.test" in line)
    assert "State-gov" not in result.output and "77516" not in result.output  # no record values printed
    with pytest.raises(SystemExit) as exit_info:
        main(["datasets", "adultt"])
    assert exit_info.value.code == 2 and "unknown dataset 'adultt'" in capsys.readouterr().err


def test_shared_files_match_the_source_md_checksums(shared_data_dir):
    """Every checksum in the registry is the one SOURCE.md records, and the shared files match it."""
    for name in ALL:
        spec = ds.get_dataset_spec(name)
        source_md = (shared_data_dir / name / "SOURCE.md").read_text() if spec.files else ""
        for f in spec.files:
            assert f.sha256 and f.sha256 in source_md, (name, f.path)
        checks = ds.verify_local_files(name, data_dir=shared_data_dir, cache_dir=shared_data_dir)
        assert all(ok is True for ok in checks.values()), (name, checks)
    load_dataset("default", data_dir=shared_data_dir, download=False, verify=True)
