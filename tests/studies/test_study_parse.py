"""Study-file holes found only when a cell ran: now read at parse time, or made to work.

A byte-order mark is dropped; a seed beyond 64 bits, a target or column kind that is not a column,
and shadow settings that leave the shadow population empty are refused when the file is read, in
one line naming the file, the table and the key.
"""

from __future__ import annotations

import pytest

from study_fixtures import BASE
from tabmem.errors import ParameterError
from tabmem.studies.study import MAX_SEED, load_study

SHADOWS = BASE.replace('attacks = ["levatt", "dcr"]', 'attacks = ["lira", "dcr"]\nshadows = 4')


def _error(path) -> str:
    with pytest.raises(ParameterError) as info:
        load_study(path)
    text = str(info.value)
    assert text.startswith(f"{path.name}: ") and "\n" not in text, text
    return text


def test_a_utf8_bom_is_dropped(write_study, tmp_path):
    plain = load_study(write_study())
    path = tmp_path / "bom.toml"
    path.write_bytes(b"\xef\xbb\xbf" + BASE.encode())
    study = load_study(path)
    assert study.name == "tiny" and [c.id for c in study.cells] == [c.id for c in plain.cells]


@pytest.mark.parametrize("seed", [2**63, 2**64, 2**64 + 5, 10**30])
def test_a_seed_beyond_64_bits_is_refused_naming_study_seeds(write_study, seed):
    text = _error(write_study(BASE.replace("seeds = [0]", f"seeds = [{seed}]"), "bad.toml"))
    assert f"[study] seeds must be an integer in [0, {MAX_SEED}], got {seed}" in text


def test_the_largest_64_bit_seed_is_accepted(write_study):
    study = load_study(write_study(BASE.replace("seeds = [0]", f"seeds = [{MAX_SEED}]")))
    assert study.seeds == [MAX_SEED] and study.cells[0].seed == MAX_SEED


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (("seeds = [0]", "seeds = [0]\n"), None),
        (('target = "y"', 'target = "nope"'), "[[datasets]] #1: target: 'nope' is not a column of train.csv"),
        (
            ('categorical = ["c", "y"]', 'categorical = ["c", "zz"]'),
            "[[datasets]] #1: categorical: 'zz' is not a column of train.csv",
        ),
        (
            ('categorical = ["c", "y"]', 'categorical = ["c", "y"]\nnumerical = ["A"]'),
            "[[datasets]] #1: numerical: 'A' is not a column of train.csv",
        ),
        (
            ('categorical = ["c", "y"]', 'categorical = ["c", "y"]\nsubsample_seed = 18446744073709551616'),
            "[[datasets]] #1: subsample_seed must be an integer in [0, 9223372036854775807]",
        ),
        (
            ('categorical = ["c", "y"]', 'categorical = ["c", "y"]\nn_train = -5'),
            "[[datasets]] #1: n_train must be an integer in [2, inf], got -5",
        ),
    ],
)
def test_dataset_columns_are_checked_when_the_file_is_read(write_study, edit, message):
    path = write_study(BASE.replace(*edit), "bad.toml")
    if message is None:
        load_study(path)
        return
    assert message in _error(path)


@pytest.mark.parametrize(
    ("drop", "message"), [(["y"], "'y' of train.csv"), (["a", "b"], "'a' of train.csv (and 1 more)")]
)
def test_a_test_file_lacking_a_training_column_is_refused(write_study, table_files, drop, message):
    import pandas as pd

    pd.read_csv(table_files / "test.csv").drop(columns=drop).to_csv(table_files / "test.csv", index=False)
    assert f"[[datasets]] #1: test: test.csv lacks column {message}" in _error(write_study(name="bad.toml"))


def test_a_registered_dataset_target_is_checked_against_the_catalogue(write_study):
    entry = 'label = "toy"\npath = "data/train.csv"\ntest = "data/test.csv"\ntarget = "y"\ncategorical = ["c", "y"]'
    text = BASE.replace(entry, 'name = "adult"\ntarget = "nope"')
    assert "[[datasets]] #1: target: 'nope' is not a column of dataset 'adult' (columns: 'age'" in _error(
        write_study(text, "bad.toml")
    )
    ok = BASE.replace(entry, 'name = "adult"\ntarget = "sex"')
    assert load_study(write_study(ok, "ok.toml")).cells[0].info.dataset.target == "sex"


def test_shadows_with_default_non_members_are_refused_naming_the_keys(write_study):
    text = _error(write_study(SHADOWS, "bad.toml"))
    assert "[attack] shadows = 4:" in text and "population empty" in text
    assert "set n_non_members (e.g. n_non_members = 20)" in text


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        # 80 members, 10 non-members: each online shadow needs 80 - 45 = 35 of the 30 population rows
        ("n_non_members = 10", "each online shadow needs 35 population rows but the population holds 30"),
        # 40 members, 30 non-members: 35 <= 40 target rows per shadow, 40 - 35 = 5 <= 10 population rows
        ("n_members = 40\nn_non_members = 30", None),
        # 20 members, 30 non-members: half of the 50 targets (25) exceeds the 20 rows a shadow trains on
        ("n_members = 20\nn_non_members = 30", "online shadows train on half of the 50 targets (25 rows)"),
        ('n_members = 20\nn_non_members = 30\nshadow_design = "offline"', "each offline shadow needs 20"),
        ('n_members = 10\nn_non_members = 30\nshadow_design = "offline"', None),
        (
            'n_members = 30\nn_non_members = 15\nreference = "test"',
            "needs 8 population rows but the population holds 5 (the 20 test rows left by the reference",
        ),
    ],
)
def test_shadow_population_sizes_are_checked_at_parse_time(write_study, extra, message):
    path = write_study(SHADOWS.replace("shadows = 4", f"shadows = 4\n{extra}"), "s.toml")
    if message is None:
        assert load_study(path).cells
        return
    text = _error(path)
    assert text.startswith("s.toml: [attack] shadows: ") and message in text, text
