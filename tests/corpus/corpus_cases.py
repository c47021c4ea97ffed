"""The bad-input corpus: one row per input, the commands that read it, and the expected outcome.

Grouped by failure class (``item``); ``note`` records what a command did before the fix where
that differs from the expectation. Run with
``PYTHONPATH=src pytest -q tests/corpus`` (one test per case and command) or print the table of
outcomes with ``PYTHONPATH=src python tests/corpus/outcomes.py``.
"""

from __future__ import annotations

import math

import corpus_brute as brute
from corpus_runner import Case, Result
from corpus_tables import N_COPIES, N_FRESH, N_TRAIN

READERS_OF_TRAIN = ("audit", "train", "attack", "quality", "generate-icl")
READERS_OF_SYNTHETIC = ("audit", "attack", "quality")
WRITERS = ("audit", "train", "attack", "quality", "generate-icl", "sample")


# ----------------------------------------------------------------------------- checks
def audit_matches_brute_force(r: Result) -> None:
    """The audit's memorization and exact-copy rates equal the brute-force ones (synthetic and holdout)."""
    s = r.json()
    train, syn, hold = r.tables["train"], r.tables["synthetic"], r.tables["holdout"]
    ratios = brute.fang2024_ratios(train, syn)
    assert math.isclose(s["memorization_rate"], brute.memorization_rate(ratios), abs_tol=1e-12), (
        s["memorization_rate"],
        brute.memorization_rate(ratios),
    )
    copies = brute.exact_copies(train, syn)
    assert math.isclose(s["exact_copy_rate"], sum(copies) / len(copies), abs_tol=1e-12)
    hold_ratios = brute.fang2024_ratios(train, hold)
    assert math.isclose(s["holdout_memorization_rate"], brute.memorization_rate(hold_ratios), abs_tol=1e-12)
    assert s["n_nan_ratio"] == sum(1 for x in ratios if x != x)


def audit_distances_non_negative(r: Result) -> None:
    import pandas as pd

    rep = pd.read_csv(r.out_dir / "replicas.csv")
    assert (rep.d1 >= 0).all() and (rep.d2 >= rep.d1).all(), "negative or unordered distances"
    audit_matches_brute_force(r)


def all_copies(rate_key: str = "memorization_rate", value: float = 1.0):
    def check(r: Result) -> None:
        s = r.json()
        assert s["exact_copy_rate"] == 1.0, s.get("exact_copy_rate")
        assert s[rate_key] == value, (rate_key, s[rate_key])

    return check


def papers_rule_with_copies(r: Result) -> None:
    """Papers' rule: undefined ratios are not replicas (rate 0), but the copies are reported as copies."""
    s = r.json()
    assert s["memorization_rate"] == 0.0 and s["exact_copy_rate"] == 1.0 and s["n_nan_ratio"] == s["n_synthetic"]


def duplicated_training_rows(r: Result) -> None:
    s = r.json()
    train, syn = r.tables["train"], r.tables["synthetic"]
    ratios = brute.fang2024_ratios(train, syn)
    # rows 1 and 3 now repeat rows 0 and 2: copies of rows 0 and 2 have d1 = d2 = 0, and the synthetic
    # copies of the old rows 1 and 3 are no longer copies of anything
    assert s["n_nan_ratio"] == sum(1 for x in ratios if x != x) == 2
    assert math.isclose(s["memorization_rate"], brute.memorization_rate(ratios), abs_tol=1e-12)
    assert s["exact_copy_rate"] == (N_COPIES - 2) / (N_COPIES + N_FRESH)


def duplicated_rows_counted(r: Result) -> None:
    s = r.json()
    ratios = brute.fang2024_ratios(r.tables["train"], r.tables["synthetic"])
    # the two undefined ratios are exact copies: counted as replicas under --duplicates replica
    expected = brute.memorization_rate([0.0 if x != x else x for x in ratios])
    assert math.isclose(s["memorization_rate"], expected, abs_tol=1e-12)
    assert s["duplicates"] == "replica"


def rare_value_leakage(r: Result) -> None:
    s = r.json()
    train, syn, hold = r.tables["train"], r.tables["synthetic"], r.tables["holdout"]
    rows, n_rare, n_leaked = brute.rare_value_rows(train, syn, k=2)
    hrows, _, n_hold = brute.rare_value_rows(train, hold, k=2)
    assert math.isclose(s["rare_value_leakage"], sum(rows) / len(rows), abs_tol=1e-12)
    assert math.isclose(s["holdout_rare_value_leakage"], sum(hrows) / len(hrows), abs_tol=1e-12)
    rv = s["rare_values"]
    assert (
        rv["k"] == 2 and rv["n_rare_values"] == n_rare and rv["n_leaked"] == n_leaked and rv["n_in_holdout"] == n_hold
    )
    assert s["rare_value_leakage"] > s["holdout_rare_value_leakage"]  # the planted copies leak one-off values


def schema_written(key_path: tuple[str, ...], numerical: list[str]):
    def check(r: Result) -> None:
        node = r.json(key_path[0])
        for k in key_path[1:]:
            node = node[k]
        assert node["numerical"] == numerical, node

    return check


def train_summary_has_copies(r: Result) -> None:
    s = r.json()
    for key in ("exact_copy_rate", "holdout_exact_copy_rate", "memorization_rate", "holdout_memorization_rate"):
        assert key in s and s[key] is not None, key
    syn = __import__("pandas").read_csv(r.out_dir / "synthetic.csv")
    copies = brute.exact_copies(r.tables["train"], syn)
    assert math.isclose(s["exact_copy_rate"], sum(copies) / len(copies), abs_tol=1e-12)


def attack_resolution(n_non_members: int):
    def check(r: Result) -> None:
        s = r.json()
        for name, res in s.items():
            if name.startswith("_"):
                continue
            assert res["min_resolved_fpr"] == 1 / n_non_members, (name, res.get("min_resolved_fpr"))
        assert f"{1 / n_non_members:.4g}" in r.text  # printed next to the TPR@FPR table

    return check


def attack_finite(r: Result) -> None:
    s = r.json()
    for name, res in s.items():
        if name.startswith("_"):
            continue
        assert res["auc"] is not None and 0.0 <= res["auc"] <= 1.0, (name, res["auc"])


def attack_density_reported(r: Result) -> None:
    """Every requested attack ran or was skipped with a reason; the summary is strict JSON with finite AUCs."""
    s = r.json()
    ran = {k for k in s if not k.startswith("_")}
    skipped = s["_meta"]["skipped"]
    assert ran | set(skipped) == {"levatt", "dcr", "mc", "density"}, (ran, skipped)
    attack_finite(r)


def quality_reasons(r: Result) -> None:
    """Every metric has a value or a reason in ``skipped``; a value is finite and within its bounds."""
    s = r.json()
    for key in ("shape", "trend", "mmd", "wasserstein", "alpha_precision", "beta_recall", "dcr_share"):
        if s[key] is None:
            assert key in s["skipped"] and s["skipped"][key], f"{key} is null without a reason"
        else:
            assert math.isfinite(s[key]), key
            if key != "wasserstein" and key != "mmd":
                assert 0.0 <= s[key] <= 1.0 + 1e-12, (key, s[key])


def wasserstein_range_scaled(r: Result) -> None:
    """Synthetic 1e15 is ~1e9 real ranges away: W1 of that column is that distance / n (documented), not a bug."""
    quality_reasons(r)
    s = r.json()
    assert s["wasserstein"] is not None and s["wasserstein"] > 1e6  # the documented unbounded value
    assert "wasserstein" not in s["skipped"]


def sample_rows(n: int):
    def check(r: Result) -> None:
        import pandas as pd

        t = pd.read_csv(r.out_dir / "sample.csv")
        assert len(t) == n

    return check


def icl_rows(r: Result) -> None:
    import pandas as pd

    t = pd.read_csv(r.out_dir / "icl.csv")
    assert len(t) == 8
    meta = r.json("icl.meta.json") if (r.out_dir / "icl.meta.json").exists() else None
    assert meta is not None and meta["stats"]["requests"] >= 1 and "schema" in meta


def latin1_read(r: Result) -> None:
    assert r.code == 0


def killed_before_checkpoint(tmp, out) -> None:
    """What a run killed before its first checkpoint leaves: config.json and nothing else."""
    out.mkdir(parents=True)
    (out / "config.json").write_text('{"model": "tabddpm", "seed": 0}\n')


def finished_run_and_user_file(tmp, out) -> None:
    """A previous run's files plus a file of the user's that --overwrite must not delete."""
    out.mkdir(parents=True)
    for name in ("config.json", "checkpoint.pt", "model.pt", "summary.json", "synthetic.csv", "history.csv"):
        (out / name).write_text("old\n")
    (out / "tracking").mkdir()
    (out / "tracking" / "epoch_00001.parquet").write_text("old\n")
    (out / "notes.txt").write_text("mine\n")


def resume_other_seed(tmp, out) -> None:
    out.mkdir(parents=True)
    (out / "config.json").write_text('{"model": "tabddpm", "seed": 7}\n')
    (out / "checkpoint.pt").write_text("placeholder\n")


def trained_from_scratch(r: Result) -> None:
    s = r.json()
    assert s["epochs"] == 2 and (r.out_dir / "model.pt").is_file() and (r.out_dir / "checkpoint.pt").is_file()


def overwritten_keeps_user_files(r: Result) -> None:
    trained_from_scratch(r)
    assert (r.out_dir / "notes.txt").read_text() == "mine\n"
    assert not (r.out_dir / "tracking" / "epoch_00001.parquet").exists()


STUDY = """
[study]
name = "corpus"
steps = ["train", "audit"]
seeds = [0]
threads = 1

[[datasets]]
label = "corpus"
path = "train.csv"
test = "holdout.csv"
target = "income"

[[generators]]
name = "tabddpm"
preset = "small"
epochs = 2
label = "ddpm"
params = { layers = [32, 32], dim_t = 16, num_timesteps = 20 }

[train]
holdout = false

[audit]
distances = ["fang2024"]
n_bootstrap = 50
"""


def study(text: str = STUDY):
    def setup(tmp, out) -> None:
        (tmp / "study.toml").write_text(text)

    return setup


def study_audited(r: Result) -> None:
    """The study's audit step writes the same figures as tabmem audit (exact copies, rare values, warnings)."""
    import json

    summaries = list(r.out_dir.rglob("audit/**/summary.json")) or list(r.out_dir.rglob("summary.json"))
    audits = [json.loads(p.read_text()) for p in summaries]
    audits = [a for a in audits if "memorization_rate" in a and "distance" in a]
    assert audits, f"no audit summary under {r.out_dir}"
    for a in audits:
        for key in ("exact_copy_rate", "rare_value_leakage", "n_undefined_ratio", "warnings", "memorization_rate_ci"):
            assert key in a, key


def audit_output(tmp, out) -> None:
    """``rundir``: a real ``tabmem audit`` output on the corpus tables (for the report cases)."""
    from tabmem.cli import main

    try:
        main(["audit", "--train", str(tmp / "train.csv"), "--synthetic", str(tmp / "synthetic.csv"),
              "--holdout", str(tmp / "holdout.csv"), "--out", str(tmp / "rundir")])  # fmt: skip
    except SystemExit as exc:
        assert not exc.code


def empty_rundir(tmp, out) -> None:
    (tmp / "rundir").mkdir(parents=True)


def corrupt_summary(tmp, out) -> None:
    (tmp / "rundir").mkdir(parents=True)
    (tmp / "rundir" / "summary.json").write_text('{"memorization_rate": 0.5,')


def report_written(r: Result) -> None:
    html = (r.out_dir / "report.html").read_text()
    assert "exact" in html.lower() or "memorization" in html.lower()


# ----------------------------------------------------------------------------- the corpus
NUMERICAL = brute.NUMERICAL
BODY = r"bad request:|internal error while processing|example rows"  # an HTTP body echoing the prompt
CASES: list[Case] = [
    # ---------------------------------------------------------------- 1. extreme magnitudes
    # beyond the value domain (0 or 1e-100 <= |x| <= 1e15): one line naming table, column, row, magnitude
    Case("train_value_1e160", "1 magnitudes", ("audit",), "error", inputs={"train": "train_1e160"},
         args=("--unseen", "mismatch"), match=r"training table: column 'fnlwgt' row 65 holds a value of magnitude 1e160",
         note="8.9% instead of the brute-force 61.5%"),
    Case("train_value_1e308", "1 magnitudes", ("audit",), "error", inputs={"train": "train_1e308"},
         match=r"training table: column 'fnlwgt' row 65 holds a value of magnitude 1e308",
         note="0% although 400 rows are exact copies"),
    Case("train_value_minus_1e308", "1 magnitudes", ("audit",), "error", inputs={"train": "train_neg_1e308"},
         match=r"training table: column 'score' row 65 holds a value of magnitude 1e308"),
    Case("synthetic_value_1e20", "1 magnitudes", ("audit",), "error", inputs={"synthetic": "synthetic_1e20"},
         match=r"synthetic table: column 'fnlwgt' row 63 holds a value of magnitude 1e20",
         note="negative distances (d1 = -63351)"),
    Case("synthetic_value_1e308_audit", "1 magnitudes", ("audit",), "error", inputs={"synthetic": "synthetic_1e308"},
         match=r"synthetic table: column 'fnlwgt' row 63 holds a value of magnitude 1e308"),
    Case("column_scaled_1e12", "1 magnitudes", ("audit",), "error",
         inputs={"train": "train_scaled_1e12", "synthetic": "synthetic_scaled_1e12"},
         drop=("--holdout",), args=("--no-holdout",), match=r"training table: column 'fnlwgt' row 0 holds a value"),
    Case("column_scaled_1e-300", "1 magnitudes", ("audit",), "error",
         inputs={"train": "train_tiny_1e-300", "synthetic": "synthetic_tiny_1e-300"}, drop=("--holdout",),
         match=r"training table: column 'score' row 0 holds a value of magnitude [0-9.]+e-29[0-9], outside"),
    Case("attack_members_1e308", "1 magnitudes", ("attack",), "error", inputs={"train": "train_1e308"},
         match=r"column 'fnlwgt' row 65 holds a value of magnitude 1e308",
         note="ValueError traceback from scikit-learn (infinite scores)"),
    Case("attack_synthetic_1e308", "1 magnitudes", ("attack",), "error", inputs={"synthetic": "synthetic_1e308"},
         match=r"synthetic table: column 'fnlwgt' row 63 holds a value of magnitude 1e308",
         note="LinAlgError deep in the KDE"),
    Case("quality_real_1e308", "1 magnitudes", ("quality",), "error", inputs={"train": "train_1e308"},
         match=r"column 'fnlwgt' row 65 holds a value of magnitude 1e308",
         note="mmd null without a reason in skipped"),
    Case("quality_synthetic_1e308", "1 magnitudes", ("quality",), "error", inputs={"synthetic": "synthetic_1e308"},
         match=r"synthetic table: column 'fnlwgt' row 63 holds a value of magnitude 1e308",
         note="Wasserstein 1.6e298, undocumented"),
    # at the value domain's edges: exact (brute force), no refusal
    Case("train_value_1e15", "1 magnitudes", ("audit",), "ok", inputs={"train": "train_1e15"},
         args=("--unseen", "mismatch"), check=audit_matches_brute_force),
    Case("train_value_minus_1e15", "1 magnitudes", ("audit",), "ok", inputs={"train": "train_neg_1e15"},
         check=audit_matches_brute_force),
    Case("synthetic_value_1e15_audit", "1 magnitudes", ("audit",), "ok", inputs={"synthetic": "synthetic_1e15"},
         check=audit_distances_non_negative),
    Case("column_scaled_1e9", "1 magnitudes", ("audit",), "ok",
         inputs={"train": "train_scaled_1e9", "synthetic": "synthetic_scaled_1e9"},
         drop=("--holdout",), args=("--no-holdout",), check=None),
    Case("column_scaled_1e-98", "1 magnitudes", ("audit",), "ok",
         inputs={"train": "train_tiny_1e-98", "synthetic": "synthetic_tiny_1e-98"}, drop=("--holdout",)),
    Case("attack_members_1e15", "1 magnitudes", ("attack",), "ok", inputs={"train": "train_1e15"},
         check=attack_density_reported),
    Case("attack_synthetic_1e15", "1 magnitudes", ("attack",), "ok", inputs={"synthetic": "synthetic_1e15"},
         check=attack_density_reported),
    Case("quality_real_1e15", "1 magnitudes", ("quality",), "ok", inputs={"train": "train_1e15"},
         check=quality_reasons),
    Case("quality_synthetic_1e15", "1 magnitudes", ("quality",), "ok", inputs={"synthetic": "synthetic_1e15"},
         check=wasserstein_range_scaled),
    Case("generators_refuse_1e308", "1 magnitudes", ("train",), "error", inputs={"train": "train_1e308"},
         match=r"training table: column 'fnlwgt' row 65 holds a value of magnitude 1e308",
         note="TabDDPM trains, then blames its own output: 'synthetic table has 481 infinite values'"),
    Case("tvae_refuses_1e308", "1 magnitudes", ("train",), "error", inputs={"train": "train_1e308"},
         args=("--model", "tvae", "--param", "compress_dims=[16]", "--param", "decompress_dims=[16]"),
         drop=("--param",), match=r"column 'fnlwgt'", note="inverse_transform: the matrix holds NaN or infinite values"),
    # ---------------------------------------------------------------- 2. duplicates, undefined ratios
    Case("all_identical_papers_rule", "2 duplicates", ("audit",), "warn",
         inputs={"train": "train_identical", "synthetic": "synthetic_identical"}, drop=("--holdout",),
         match=r"40 synthetic row\(s\).*undefined.*--duplicates replica", check=papers_rule_with_copies,
         note="0.00% for 100% copies, no message"),
    Case("all_identical_counted", "2 duplicates", ("audit",), "warn",
         inputs={"train": "train_identical", "synthetic": "synthetic_identical"}, drop=("--holdout",),
         args=("--duplicates", "replica"), match=r"exact cop", check=all_copies()),
    Case("one_row_training_table", "2 duplicates", ("audit",), "warn",
         inputs={"train": "train_one_row", "synthetic": "synthetic_identical"}, drop=("--holdout",),
         match=r"undefined", check=papers_rule_with_copies, note="0.00%, d2 = inf, nothing said"),
    Case("duplicated_training_rows", "2 duplicates", ("audit",), "warn", inputs={"train": "train_duplicated"},
         match=r"2 synthetic row\(s\).*undefined", check=duplicated_training_rows),
    Case("duplicated_training_rows_counted", "2 duplicates", ("audit",), "warn",
         inputs={"train": "train_duplicated"}, args=("--duplicates", "replica"), match=r"exact cop",
         check=duplicated_rows_counted),
    Case("audit_exact_copy_rate", "2 duplicates", ("audit",), "ok", check=audit_matches_brute_force),
    Case("train_summary_exact_copy_rate", "2 duplicates", ("train",), "ok", check=train_summary_has_copies),
    Case("duplicates_bad_value", "2 duplicates", ("audit",), "error", args=("--duplicates", "sometimes"),
         match=r"--duplicates"),
    # ---------------------------------------------------------------- 3. one bad cell, tiny tables
    Case("numeric_column_one_word", "3 schema", READERS_OF_TRAIN, "error", inputs={"train": "train_forty"},
         match=r"column 'age'.*1 (cell|value).*row.*7.*--categorical age", forbid=r"forty",
         note="age silently categorical: 61.12% -> 52.62%, no message"),
    Case("numeric_column_one_word_accepted", "3 schema", ("audit",), "ok", inputs={"train": "train_forty"},
         args=("--categorical", "age", "--unseen", "mismatch"), check=schema_written(("summary.json", "schema"),
                                                                                    NUMERICAL[1:])),
    Case("synthetic_one_word_in_numeric", "3 schema", READERS_OF_SYNTHETIC, "error",
         inputs={"synthetic": "synthetic_forty"}, match=r"column 'age'.*non-numeric.*rows: 7", forbid=r"forty"),
    Case("schema_printed_and_written_audit", "3 schema", ("audit",), "ok",
         match=r"numerical: age, fnlwgt, hours, capital_gain, score",
         check=schema_written(("summary.json", "schema"), NUMERICAL)),
    Case("schema_printed_and_written_attack", "3 schema", ("attack",), "ok",
         match=r"numerical: age, fnlwgt, hours, capital_gain, score",
         check=schema_written(("summary.json", "_meta", "schema"), NUMERICAL)),
    Case("schema_printed_and_written_quality", "3 schema", ("quality",), "ok",
         match=r"numerical: age, fnlwgt, hours, capital_gain, score",
         check=schema_written(("summary.json", "schema"), NUMERICAL)),
    Case("schema_printed_and_written_train", "3 schema", ("train",), "ok",
         match=r"numerical: age, fnlwgt, hours, capital_gain, score",
         check=schema_written(("config.json", "schema"), NUMERICAL)),
    Case("schema_printed_and_written_icl", "3 schema", ("generate-icl",), "ok",
         match=r"numerical: age, fnlwgt, hours, capital_gain, score", check=icl_rows),
    Case("one_row_table_keeps_integers_numerical", "3 schema", ("audit",), "warn",
         inputs={"train": "train_one_row"}, args=("--unseen", "mismatch"), match=r"undefined",
         check=schema_written(("summary.json", "schema"), NUMERICAL),
         note="every integer column turned categorical"),
    Case("one_row_table_train", "3 schema", ("train",), "error", inputs={"train": "train_one_row"},
         match=r"at least 2 rows"),
    # ---------------------------------------------------------------- 4. degenerate evaluations
    Case("attack_one_member_one_non_member", "4 degenerate", ("attack",), "warn",
         inputs={"train": "members_one", "holdout": "non_members_one"},
         match=r"1 member.*1 non-member", check=attack_resolution(1),
         note="AUC 1.0 with CI [1.0, 1.0], no warning"),
    Case("attack_ten_and_ten", "4 degenerate", ("attack",), "warn",
         inputs={"train": "members_ten", "holdout": "non_members_ten"}, match=r"10 member", check=attack_resolution(10)),
    Case("attack_min_resolved_fpr", "4 degenerate", ("attack",), "ok", check=attack_resolution(N_TRAIN)),
    Case("attack_members_equal_non_members", "4 degenerate", ("attack",), "error",
         inputs={"holdout": "holdout_same_as_train"}, match=r"members and non-members"),
    # ---------------------------------------------------------------- 5. options validated up front
    Case("out_unwritable", "5 options", WRITERS, "error", args=("--out", "/proc/tabmem-out/x"),
         match=r"--out.*/proc/tabmem-out", note="Python traceback in all five commands that write"),
    Case("out_is_a_file", "5 options", ("audit", "attack", "quality", "train"), "error",
         args=("--out", "{tmp}/train.csv"), match=r"--out.*(is a file|not a directory)"),
    Case("threshold_negative", "5 options", ("audit",), "error", args=("--threshold", "-1"), match=r"--threshold"),
    Case("threshold_zero", "5 options", ("audit",), "error", args=("--threshold", "0"), match=r"--threshold"),
    Case("threshold_above_one", "5 options", ("audit",), "error", args=("--threshold", "5"), match=r"--threshold"),
    Case("threshold_nan", "5 options", ("audit",), "error", args=("--threshold", "nan"), match=r"--threshold"),
    Case("memory_zero", "5 options", ("audit",), "error", args=("--memory-gb", "0"), match=r"--memory-gb"),
    Case("memory_negative", "5 options", ("audit",), "error", args=("--memory-gb", "-1"), match=r"--memory-gb"),
    Case("memory_tiny", "5 options", ("audit",), "error", args=("--memory-gb", "1e-9"), match=r"--memory-gb"),
    Case("n_jobs_zero", "5 options", ("audit", "attack", "quality"), "error", args=("--n-jobs", "0"),
         match=r"--n-jobs"),
    # -3 is valid (all CPUs but 2: the one n_jobs rule, tabmem._checks); a fraction is not
    Case("n_jobs_fraction", "5 options", ("audit", "attack", "quality"), "error", args=("--n-jobs", "1.5"),
         match=r"--n-jobs"),
    Case("n_jobs_word", "5 options", ("audit", "attack", "quality"), "error", args=("--n-jobs", "many"),
         match=r"--n-jobs"),
    Case("distance_unknown", "5 options", ("audit", "train", "attack"), "error", args=("--distance", "bogus"),
         match=r"--distance.*bogus"),
    Case("seed_negative", "5 options", ("train", "attack", "quality", "generate-icl", "sample"), "error",
         args=("--seed", "-1"), match=r"--seed"),
    Case("threads_zero", "5 options", ("train", "sample", "attack", "quality"), "error",
         args=("--threads", "0"), match=r"--threads"),
    Case("encoding_unknown", "5 options", READERS_OF_TRAIN, "error", args=("--encoding", "bogus-enc"),
         match=r"--encoding.*bogus-enc"),
    Case("epochs_zero", "5 options", ("train",), "error", args=("--epochs", "0"), match=r"--epochs"),
    Case("model_unknown", "5 options", ("train",), "error", args=("--model", "gpt-17"),
         match=r"gpt-17.*tabddpm"),
    Case("preset_unknown", "5 options", ("train",), "error", args=("--preset", "huge"), match=r"preset.*huge"),
    Case("param_malformed", "5 options", ("train",), "error", args=("--param", "lr"), match=r"--param.*KEY=VALUE"),
    Case("param_unknown", "5 options", ("train",), "error", args=("--param", "flux_capacitor=3"),
         match=r"flux_capacitor"),
    Case("param_bad_value", "5 options", ("train",), "error", args=("--param", "lr=-1"), match=r"lr"),
    Case("device_unknown", "5 options", ("train", "sample"), "error", args=("--device", "tpu9"), match=r"--device.*tpu9"),
    Case("search_device_unknown", "5 options", ("audit", "attack"), "error", args=("--device", "tpu9"),
         match=r"--device.*tpu9"),
    Case("track_samples_zero", "5 options", ("train",), "error", args=("--track-samples", "0"),
         match=r"--track-samples"),
    Case("sample_n_zero", "5 options", ("sample",), "error", args=("--n", "0"), match=r"--n"),
    Case("sample_tlp_below_one", "5 options", ("sample",), "error", args=("--tlp", "0.5"), match=r"--tlp"),
    Case("sample_digit_modifier_malformed", "5 options", ("sample",), "error",
         args=("--digit-modifier", "lots"), match=r"--digit-modifier"),
    Case("sample_out_suffix", "5 options", ("sample",), "error", args=("--out", "{out}/rows.txt"),
         match=r"--out.*\.csv"),
    Case("sample_model_missing", "5 options", ("sample",), "error", args=("--model", "{tmp}/no-such-run"),
         match=r"--model"),
    Case("sample_model_empty_dir", "5 options", ("sample",), "error", inputs={"model": "empty_dir"},
         match=r"model\.pt"),
    Case("sample_model_corrupt", "5 options", ("sample",), "error", inputs={"model": "corrupt"},
         match=r"model\.pt"),
    Case("sample_model_truncated", "5 options", ("sample",), "error", inputs={"model": "truncated"},
         match=r"model\.pt"),
    Case("sample_model_pickle_refused", "5 options", ("sample",), "error", inputs={"model": "pickle"},
         match=r"model\.pt"),
    Case("attacks_unknown", "5 options", ("attack",), "error", args=("--attacks", "dcr,telepathy"),
         match=r"--attacks.*telepathy"),
    Case("attacks_empty", "5 options", ("attack",), "error", args=("--attacks", ","), match=r"--attacks"),
    Case("serializer_unknown", "5 options", ("attack",), "error", args=("--serializer", "yaml"),
         match=r"--serializer.*yaml"),
    Case("metrics_unknown", "5 options", ("quality",), "error", args=("--metrics", "shape,vibes"),
         match=r"--metrics.*vibes"),
    Case("icl_n_zero", "5 options", ("generate-icl",), "error", args=("--n", "0"), match=r"--n\b"),
    Case("icl_n_context_zero", "5 options", ("generate-icl",), "error", args=("--n-context", "0"),
         match=r"--n-context"),
    Case("icl_n_context_too_large", "5 options", ("generate-icl",), "error", args=("--n-context", "100000"),
         match=r"--n-context.*100000"),
    Case("icl_rows_per_request_zero", "5 options", ("generate-icl",), "error", args=("--rows-per-request", "0"),
         match=r"--rows-per-request"),
    Case("icl_temperature_negative", "5 options", ("generate-icl",), "error", args=("--temperature", "-1"),
         match=r"--temperature"),
    Case("icl_timeout_zero", "5 options", ("generate-icl",), "error", args=("--timeout", "0"), match=r"--timeout"),
    Case("icl_backend_unknown", "5 options", ("generate-icl",), "error", args=("--backend", "carrier-pigeon"),
         match=r"--backend.*carrier-pigeon"),
    Case("icl_backend_bad_url", "5 options", ("generate-icl",), "error", args=("--backend", "openai:ftp://x"),
         match=r"--backend.*ftp://x"),
    Case("train_file_missing", "5 options", READERS_OF_TRAIN, "error", inputs={"train": "file:missing"},
         match=r"does-not-exist\.csv"),
    Case("train_path_is_directory", "5 options", READERS_OF_TRAIN, "error", inputs={"train": "file:directory"},
         match=r"is a directory|Directory"),
    Case("train_and_dataset_both", "5 options", ("audit", "train"), "error", args=("--dataset", "adult"),
         match=r"--train.*--dataset"),
    Case("dataset_unknown", "5 options", ("audit", "train"), "error", drop=("--train",),
         args=("--dataset", "no-such-data"), match=r"no-such-data"),
    Case("target_not_a_column", "5 options", READERS_OF_TRAIN[:4], "error", args=("--target", "salary"),
         match=r"'salary'"),
    Case("categorical_not_a_column", "5 options", READERS_OF_TRAIN, "error", args=("--categorical", "colour"),
         match=r"'colour'"),
    Case("holdout_missing_file", "5 options", ("audit", "train", "quality"), "error",
         inputs={"holdout": "file:missing"}, match=r"does-not-exist\.csv"),
    Case("datasets_unknown", "5 options", ("datasets",), "error", args=("no-such-data",), match=r"no-such-data"),
    Case("datasets_data_dir_missing", "5 options", ("datasets",), "warn", args=("--data-dir", "{tmp}/nowhere"),
         match=r"--data-dir.*nowhere.*not a directory"),
    Case("demo_epochs_zero", "5 options", ("demo",), "error", args=("--epochs", "0"), match=r"--epochs"),
    Case("demo_distance_unknown", "5 options", ("demo",), "error", args=("--distance", "bogus"),
         match=r"--distance.*bogus"),
    Case("demo_out_unwritable", "5 options", ("demo",), "error", args=("--out", "/proc/tabmem-out/x"),
         match=r"--out.*/proc/tabmem-out"),
    # ---------------------------------------------------------------- 6. messages and advice
    Case("non_utf8_file", "6 advice", READERS_OF_TRAIN, "error", inputs={"train": "file:latin1"},
         match=r"train\.csv.*not valid utf-8.*line 4.*--encoding", forbid=r"Caf",
         note="'pass --encoding' where no command had --encoding"),
    Case("non_utf8_file_declared", "6 advice", ("audit", "attack", "quality"), "ok",
         inputs={"train": "file:latin1"}, args=("--encoding", "latin-1")),
    Case("missing_numeric_synthetic", "6 advice", ("audit", "attack"), "error",
         inputs={"synthetic": "synthetic_nan_numeric"}, match=r"column 'hours'.*1 missing value.*rows: 4"),
    Case("missing_numeric_train", "6 advice", ("audit", "train", "attack"), "error",
         inputs={"train": "train_nan_numeric"}, match=r"column 'hours'.*missing value.*rows: 4",
         note="train advised 'pass --nan drop' (train has no --nan)"),
    Case("missing_numeric_quality", "6 advice", ("quality",), "ok",
         inputs={"train": "train_nan_numeric", "synthetic": "synthetic_nan_numeric"}, check=quality_reasons),
    Case("missing_numeric_dropped", "6 advice", ("audit",), "ok", inputs={"synthetic": "synthetic_nan_numeric"},
         args=("--nan", "drop")),
    Case("empty_categorical_cell", "6 advice", ("audit",), "error", inputs={"synthetic": "synthetic_empty_category"},
         match=r"column 'workclass'.*missing value.*rows: 9", note="reported as an unseen category"),
    Case("empty_categorical_cell_attack", "6 advice", ("attack", "quality"), "ok",
         inputs={"synthetic": "synthetic_empty_category"}),
    Case("unseen_category", "6 advice", ("audit",), "error", inputs={"synthetic": "synthetic_unseen_category"},
         match=r"column 'workclass'.*never seen in training.*rows: 9.*--unseen mismatch"),
    Case("unseen_category_mismatch", "6 advice", ("audit",), "ok", inputs={"synthetic": "synthetic_unseen_category"},
         args=("--unseen", "mismatch")),
    Case("unseen_category_other_commands", "6 advice", ("attack", "quality"), "ok",
         inputs={"synthetic": "synthetic_unseen_category"}),
    Case("infinite_value", "6 advice", READERS_OF_SYNTHETIC, "error", inputs={"synthetic": "synthetic_inf"},
         match=r"column 'score'.*infinite.*rows: 11"),
    Case("extra_column", "6 advice", READERS_OF_SYNTHETIC, "error", inputs={"synthetic": "synthetic_extra_column"},
         match=r"'extra'"),
    Case("extra_column_ignored", "6 advice", ("audit", "attack"), "ok",
         inputs={"synthetic": "synthetic_extra_column"}, args=("--ignore-extra",)),
    Case("missing_column", "6 advice", READERS_OF_SYNTHETIC, "error", inputs={"synthetic": "synthetic_missing_column"},
         match=r"missing column.*'hours'"),
    Case("header_only", "6 advice", READERS_OF_SYNTHETIC, "error", inputs={"synthetic": "synthetic_header_only"},
         match=r"synthetic.*empty"),
    Case("empty_file", "6 advice", READERS_OF_TRAIN, "error", inputs={"train": "file:empty"},
         match=r"train\.csv.*empty"),
    Case("binary_file", "6 advice", READERS_OF_TRAIN, "error", inputs={"train": "file:binary"},
         match=r"train\.csv"),
    Case("duplicated_header", "6 advice", READERS_OF_TRAIN, "error", inputs={"train": "file:dup_header"},
         match=r"train\.csv.*duplicated column name 'age'"),
    Case("ragged_csv", "6 advice", READERS_OF_TRAIN, "error", inputs={"train": "file:ragged"},
         match=r"train\.csv.*line 7"),
    Case("bool_in_numeric", "6 advice", ("audit", "attack"), "error", inputs={"synthetic": "synthetic_bool_in_numeric"},
         match=r"column 'hours'.*booleans"),
    Case("semicolon_csv", "6 advice", ("audit",), "ok", inputs={"train": "file:semicolon"},
         check=audit_matches_brute_force),
    Case("tab_separated", "6 advice", ("audit",), "ok", inputs={"synthetic": "file:tab"},
         check=audit_matches_brute_force),
    Case("byte_order_mark", "6 advice", ("audit",), "ok", inputs={"train": "file:bom"}, check=audit_matches_brute_force),
    Case("parquet_input", "6 advice", ("audit",), "ok", inputs={"train": "file:parquet", "synthetic": "file:parquet"},
         check=audit_matches_brute_force),
    Case("corrupt_parquet", "6 advice", READERS_OF_TRAIN, "error", inputs={"train": "file:corrupt_parquet"},
         match=r"train\.parquet.*Parquet"),
    Case("spaces_and_unicode_names", "6 advice", ("audit", "attack", "quality"), "ok",
         inputs={"train": "train_spaces_unicode", "synthetic": "synthetic_spaces_unicode",
                 "holdout": "holdout_spaces_unicode"}),
    *[
        Case(f"{name}_tables", "6 advice", ("audit", "attack", "quality", "train"), "ok",
             inputs={role: f"{role}_{name}" for role in ("train", "synthetic", "holdout")})
        for name in ("only_categorical", "only_numerical", "one_column")
    ],
    Case("column_both_kinds", "5 options", READERS_OF_TRAIN, "error", args=("--categorical", "age", "--numerical", "age"),
         match=r"'age'.*both"),
    Case("synthetic_columns_reordered", "6 advice", ("audit",), "ok", inputs={"synthetic": "synthetic_reordered"},
         check=audit_matches_brute_force),
    Case("synthetic_column_renamed", "6 advice", READERS_OF_SYNTHETIC, "error",
         inputs={"synthetic": "synthetic_renamed_case"}, match=r"missing column.*'age'"),
    Case("training_column_all_missing", "6 advice", ("audit", "train", "attack"), "error",
         inputs={"train": "train_all_nan_column"}, match=r"column 'score'.*240 missing"),
    Case("quality_small_holdout", "4 degenerate", ("quality",), "ok", inputs={"holdout": "holdout_small"},
         check=quality_reasons),
    Case("attack_reference_missing", "5 options", ("attack",), "error", args=("--reference", "{tmp}/nope.csv"),
         match=r"nope\.csv"),
    Case("constant_column", "6 advice", ("audit", "attack", "quality"), "ok",
         inputs={"train": "train_constant_column", "synthetic": "synthetic_constant_column",
                 "holdout": "holdout_constant_column"}),
    Case("icl_max_retries_negative", "6 advice", ("generate-icl",), "error", args=("--max-retries", "-1"),
         match=r"--max-retries", note="'failed after 0 attempts (last: )'"),
    # ---------------------------------------------------------------- 7. hangs
    Case("icl_silent_backend", "7 hangs", ("generate-icl",), "error", server="silent",
         args=("--timeout", "1", "--max-retries", "1"), match=r"timed out.*2 attempts", time_limit=30,
         note="hung: 120 s per attempt, 6 attempts plus backoff, no output"),
    Case("icl_garbage_backend", "7 hangs", ("generate-icl",), "error", server="garbage",
         match=r"valid rows", time_limit=60),
    Case("icl_bad_json_backend", "7 hangs", ("generate-icl",), "error", server="bad_json",
         args=("--max-retries", "0"), match=r"not JSON|JSON"),
    Case("icl_progress", "7 hangs", ("generate-icl",), "ok", match=r"request 1: 8/8 valid rows.*0 retries", check=icl_rows),
    # ---------------------------------------------------------------- 8. dead run directories
    Case("train_rerun_after_early_kill", "8 run dirs", ("train",), "error", setup=killed_before_checkpoint,
         match=r"--resume.*--overwrite", note="'already holds a training run: pass --resume'; --resume then fails"),
    Case("train_resume_before_first_checkpoint", "8 run dirs", ("train",), "warn", setup=killed_before_checkpoint,
         args=("--resume",), match=r"no checkpoint.*from scratch", check=trained_from_scratch,
         note="'has no config.json/checkpoint.pt to resume from'"),
    Case("train_overwrite", "8 run dirs", ("train",), "ok", setup=finished_run_and_user_file,
         args=("--overwrite",), check=overwritten_keeps_user_files),
    Case("train_rerun_finished", "8 run dirs", ("train",), "error", setup=finished_run_and_user_file,
         match=r"--resume.*--overwrite"),
    Case("train_resume_settings_differ", "8 run dirs", ("train",), "error", setup=resume_other_seed,
         args=("--resume",), match=r"--resume.*seed"),
    Case("train_resume_and_overwrite", "8 run dirs", ("train",), "error", args=("--resume", "--overwrite"),
         match=r"--resume.*--overwrite"),
    # ---------------------------------------------------------------- the report command
    Case("report_missing_directory", "5 options", ("report",), "error", match=r"rundir"),
    Case("report_empty_directory", "5 options", ("report",), "error", setup=empty_rundir, match=r"rundir"),
    Case("report_corrupt_summary", "6 advice", ("report",), "error", setup=corrupt_summary,
         match=r"summary\.json"),
    Case("report_train_without_show_records", "5 options", ("report",), "error", setup=empty_rundir,
         args=("--train", "{tmp}/train.csv"), match=r"--show-records"),
    Case("report_out_unwritable", "5 options", ("report",), "error", setup=audit_output,
         args=("--out", "/proc/tabmem-out/r.html"), match=r"--out.*/proc/tabmem-out"),
    Case("report_on_an_audit", "2 duplicates", ("report",), "ok", setup=audit_output, check=report_written),
    # ---------------------------------------------------------------- the run command
    Case("run_study_missing", "5 options", ("run",), "error", match=r"study\.toml"),
    Case("run_study_not_toml", "6 advice", ("run",), "error", setup=study("[study\nname = 1"),
         match=r"study\.toml.*TOML"),
    Case("run_study_unknown_generator", "5 options", ("run",), "error",
         setup=study(STUDY.replace('name = "tabddpm"', 'name = "gpt-17"')), match=r"study\.toml.*gpt-17"),
    Case("run_study_bad_number", "5 options", ("run",), "error",
         setup=study(STUDY.replace("n_bootstrap = 50", "n_bootstrap = -3")), match=r"study\.toml.*n_bootstrap"),
    Case("run_study_data_file_missing", "5 options", ("run",), "error",
         setup=study(STUDY.replace('path = "train.csv"', 'path = "nope.csv"')), match=r"nope\.csv"),
    Case("run_out_unwritable", "5 options", ("run",), "error", setup=study(), args=("--out", "/proc/tabmem-out/x"),
         match=r"/proc/tabmem-out"),
    Case("run_jobs_zero", "5 options", ("run",), "error", setup=study(), args=("--jobs", "0"), match=r"--jobs"),
    Case("run_tiny_study", "2 duplicates", ("run",), "ok", setup=study(), check=study_audited, time_limit=300),
    # ---------------------------------------------------------------- 9. privacy
    Case("icl_error_body_not_printed", "9 privacy", ("generate-icl",), "error", server="error400_echo",
         match=r"HTTP 400", forbid=BODY, note="the first 200 characters of the body (which echoes training rows) on stderr"),
    Case("icl_retry_body_not_printed", "9 privacy", ("generate-icl",), "error", server="error500_echo",
         args=("--max-retries", "1", "--timeout", "5"), match=r"HTTP 500", forbid=BODY),
    Case("icl_error_body_on_request", "9 privacy", ("generate-icl",), "error", server="error400_echo",
         args=("--show-http-body",), match=r"HTTP 400.*bad request", allow_secret=True),
    Case("rare_value_leakage", "9 privacy", ("audit",), "ok", check=rare_value_leakage),
    Case("show_records_opt_in", "9 privacy", ("audit",), "ok", args=("--show-records",), allow_secret=True),
    # ---------------------------------------------------------------- 10. threads
    Case("threads_printed", "10 threads", ("train", "sample", "audit", "attack", "quality"), "ok",
         match=r"threads:.*CPUs? available"),
    Case("threads_override", "10 threads", ("train", "attack", "quality"), "ok", args=("--threads", "1"),
         match=r"threads:.* 1 thread\b"),
]  # fmt: skip


def _more_cases() -> list[Case]:
    """The cases of the ``cases_*.py`` modules beside this one (one module per failure class)."""
    import importlib
    from pathlib import Path

    found: list[Case] = []
    for path in sorted(Path(__file__).parent.glob("cases_*.py")):
        found += importlib.import_module(path.stem).CASES
    return found


CASES += _more_cases()


def params() -> list[tuple[Case, str]]:
    """(case, command) pairs: every case under every command that reads its input."""
    return [(case, command) for case in CASES for command in case.commands]
