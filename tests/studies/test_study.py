"""Study files: the grid (product, exclude, include), cell hashes, and one clear line per bad file."""

from __future__ import annotations

import pytest

from study_fixtures import BASE
from tabmem.errors import ParameterError
from tabmem.studies.runner import group_cells
from tabmem.studies.study import load_study, select_cells

GRID = BASE.replace(
    """[[generators]]""",
    """[[datasets]]
label = "half"
path = "data/train.csv"
test = "data/test.csv"
target = "y"
categorical = ["c", "y"]
n_train = 40

[[generators]]
name = "tvae"
preset = "small"
epochs = 2
label = "vae"

[[generators]]""",
).replace("seeds = [0]", "seeds = [0, 1]")


def names(study) -> list[str]:
    return [c.name for c in study.cells]


def test_grid_is_the_product_of_the_axes_in_a_stable_order(write_study):
    study = load_study(write_study(GRID))
    expected = [f"{d}/{g}/seed={s}" for d in ("toy", "half") for g in ("vae", "ddpm") for s in (0, 1)]
    assert names(study) == expected
    assert len({c.id for c in study.cells}) == 8


@pytest.mark.parametrize(
    ("extra", "removed", "added"),
    [
        # every key of an exclude entry must match; omitted keys match anything
        ('[[exclude]]\ndataset = "half"\ngenerator = "vae"\n', {"half/vae/seed=0", "half/vae/seed=1"}, set()),
        ("[[exclude]]\nseed = 1\n", {f"{d}/{g}/seed=1" for d in ("toy", "half") for g in ("vae", "ddpm")}, set()),
        (
            '[[exclude]]\ngenerator = ["vae", "ddpm"]\ndataset = "toy"\n',
            {f"toy/{g}/seed={s}" for g in ("vae", "ddpm") for s in (0, 1)},
            set(),
        ),
        # include wins over exclude, and may add seeds outside the seeds axis
        (
            '[[exclude]]\ndataset = "half"\n\n[[include]]\ndataset = "half"\ngenerator = "ddpm"\nseed = 0\n',
            {"half/vae/seed=0", "half/vae/seed=1", "half/ddpm/seed=1"},
            set(),
        ),
        (
            '[[include]]\ndataset = "toy"\ngenerator = "vae"\nseed = [5, 6]\n',
            set(),
            {"toy/vae/seed=5", "toy/vae/seed=6"},
        ),
    ],
)
def test_exclude_and_include(write_study, extra, removed, added):
    full = set(names(load_study(write_study(GRID))))
    study = load_study(write_study(GRID + "\n" + extra, "grid2.toml"))
    assert set(names(study)) == (full - removed) | added
    # the included extras come after the product, in the order of their entry
    assert names(study)[len(full - removed) :] == sorted(added)


def test_cell_ids_do_not_depend_on_key_order_labels_or_comments(write_study):
    a = load_study(write_study(BASE))
    reordered = BASE.replace(
        '[[generators]]\nname = "tabddpm"\npreset = "small"\nepochs = 2\nlabel = "ddpm"',
        '# a comment\n[[generators]]\nlabel = "renamed"\nepochs = 2\npreset = "small"\nname = "tabddpm"',
    ).replace(
        '[audit]\ndistances = ["fang2024", "gower"]\nn_bootstrap = 50',
        '[audit]\nn_bootstrap = 50\ndistances = ["fang2024", "gower"]',
    )
    assert reordered != BASE
    b = load_study(write_study(reordered, "b.toml"))
    assert [c.id for c in a.cells] == [c.id for c in b.cells]
    assert [c.name for c in b.cells] == ["toy/renamed/seed=0"]


def test_hashes_are_canonical_json_sha256_independent_of_insertion_order():
    import hashlib

    from tabmem.studies.study import short_hash

    a = {"b": [1, 2.5, None], "a": {"y": "x", "x": (1, 2)}}
    b = {"a": {"x": [1, 2], "y": "x"}, "b": [1, 2.5, None]}
    canonical = '{"a":{"x":[1,2],"y":"x"},"b":[1,2.5,null]}'
    assert short_hash(a) == short_hash(b) == hashlib.sha256(canonical.encode()).hexdigest()[:12]


def keys(study) -> dict[str, str]:
    return {s.name: s.key for s in study.cells[0].steps}


@pytest.mark.parametrize(
    ("old", "new", "changed"),
    [
        ("epochs = 2", "epochs = 3", {"train", "audit", "attack", "quality"}),  # upstream: everything
        ("n_bootstrap = 50", "n_bootstrap = 51", {"audit"}),  # an audit setting retrains nothing
        ('metrics = ["shape", "trend"]', 'metrics = ["shape"]', {"quality"}),
        ('attacks = ["levatt", "dcr"]', 'attacks = ["levatt"]', {"attack"}),
        ("seeds = [0]", "seeds = [1]", {"train", "audit", "attack", "quality"}),
        ('categorical = ["c", "y"]', 'categorical = ["c", "y", "b"]', {"train", "audit", "attack", "quality"}),
    ],
)
def test_a_changed_value_makes_a_new_cell_and_new_keys_only_downstream(write_study, old, new, changed):
    a = load_study(write_study(BASE))
    assert old in BASE
    b = load_study(write_study(BASE.replace(old, new), "b.toml"))
    assert a.cells[0].id != b.cells[0].id
    ka, kb = keys(a), keys(b)
    assert {name for name in ka if ka[name] != kb[name]} == changed


def test_editing_a_data_file_makes_new_cells(write_study, table_files):
    a = load_study(write_study(BASE))
    with open(table_files / "train.csv", "a") as fh:
        fh.write("0.5,3,red,1\n")
    b = load_study(write_study(BASE, "b.toml"))
    assert a.cells[0].id != b.cells[0].id


def test_cells_that_share_a_step_form_one_task(write_study):
    text = BASE.replace('"train", "audit"', '"train", "sample", "audit"')
    text += '\n[[sampling]]\nlabel = "a"\n\n[[sampling]]\nlabel = "b"\ndraw = 1\n'
    study = load_study(write_study(text.replace("seeds = [0]", "seeds = [0, 1]")))
    assert len(study.cells) == 4
    tasks = group_cells(study.cells)
    # one trained model per seed, shared by both sampling variants
    assert [[c.name for c in t] for t in tasks] == [
        ["toy/ddpm/a/seed=0", "toy/ddpm/b/seed=0"],
        ["toy/ddpm/a/seed=1", "toy/ddpm/b/seed=1"],
    ]
    train_keys = {c.name: c.steps[0].key for c in study.cells}
    assert train_keys["toy/ddpm/a/seed=0"] == train_keys["toy/ddpm/b/seed=0"] != train_keys["toy/ddpm/a/seed=1"]


def test_select_cells_by_glob_or_id_prefix(write_study):
    study = load_study(write_study(GRID))
    assert [c.name for c in select_cells(study.cells, ["half/*/seed=0"])] == ["half/vae/seed=0", "half/ddpm/seed=0"]
    cid = study.cells[3].id
    assert select_cells(study.cells, [cid[:6]]) == [study.cells[3]]
    assert len(select_cells(study.cells, ["toy/vae/*,half/vae/*"])) == 4


# --------------------------------------------------------------------------- bad files
def _sub(old: str, new: str):
    def edit(text: str) -> str:
        assert old in text, old
        return text.replace(old, new)

    return edit


BAD = [
    (_sub("[audit]", "[audti]"), "unknown table [audti]"),
    (_sub("n_bootstrap = 50", "n_bootstrap = 50\ndistnce = 1"), "[audit] unknown key 'distnce'"),
    (_sub('name = "tabddpm"', 'name = "tabdpm"'), "[[generators]] #1: name: unknown generator 'tabdpm'"),
    (_sub('preset = "small"', 'preset = "huge"'), "[[generators]] #1: preset: tabddpm has no preset 'huge'"),
    (
        _sub("epochs = 2", "epochs = 2\nparams = { lrr = 0.1 }"),
        "[[generators]] #1: params.lrr: not a parameter of tabddpm",
    ),
    (_sub("epochs = 2", "epochs = 0"), "[[generators]] #1: epochs must be an integer in [1, inf]"),
    (_sub("n_bootstrap = 50", "n_bootstrap = 50\nthreshold = 2"), "[audit] threshold must be a number in (0, 1]"),
    (_sub('distances = ["fang2024", "gower"]', 'distances = ["l3"]'), "[audit] distances: unknown value 'l3'"),
    (_sub("seeds = [0]", "seeds = [-1]"), "[study] seeds must be an integer in [0, 9223372036854775807], got -1"),
    (_sub("threads = 1", "threads = 0"), "[study] threads must be an integer in [1, inf]"),
    (_sub('path = "data/train.csv"', 'path = "data/nope.csv"'), "[[datasets]] #1: path: file not found"),
    (_sub('label = "toy"\npath', 'name = "adult"\npath'), "[[datasets]] #1: give exactly one of name"),
    (
        _sub('label = "toy"\npath = "data/train.csv"\ntest = "data/test.csv"', 'name = "adultt"'),
        "[[datasets]] #1: name: unknown dataset 'adultt'",
    ),
    (
        _sub('categorical = ["c", "y"]', 'categorical = ["c", "y"]\nn_train = 1000'),
        "[[datasets]] #1: n_train: train.csv has 80 rows",
    ),
    (
        _sub('steps = ["train", "audit", "attack", "quality"]', 'steps = ["audit", "train", "attack", "quality"]'),
        "'audit' needs 'synthetic'",
    ),
    (
        _sub('steps = ["train", "audit", "attack", "quality"]', 'steps = ["train", "audt"]'),
        "[study] steps: unknown value 'audt'",
    ),
    (
        _sub('steps = ["train", "audit", "attack", "quality"]', 'steps = ["train", "audit", "attack"]'),
        "[quality] is given but 'quality' is not in [study] steps",
    ),
    (_sub('name = "tiny"\n', ""), "[study] missing required key 'name'"),
    (
        lambda t: t + '\n[[exclude]]\ngenerator = "gan"\n',
        "[[exclude]] #1: generator: 'gan' is not a label of [[generators]]",
    ),
    (lambda t: t + "\n[[exclude]]\nseed = 0\n", "the grid is empty"),
    (
        lambda t: t + '\n[[sampling]]\nlabel = "t"\noptions = { tendency = 3.0 }\n',
        "[[sampling]] entries need a sampling step",
    ),
    (
        lambda t: (
            t.replace('"train", "audit"', '"train", "sample", "audit"')
            + '\n[[sampling]]\nlabel = "t"\noptions = { tendency = 3.0 }\n'
        ),
        "[[sampling]] 't': options.tendency is not a sampling option of generator 'tabddpm'",
    ),
    (
        lambda t: (
            t.replace('"train", "audit"', '"train", "sample", "audit"')
            + '\n[[sampling]]\nlabel = "t"\ndefenses = [{ name = "nope" }]\n'
        ),
        "defenses: unknown defense 'nope'",
    ),
    (lambda t: t + '\n[[generators]]\nname = "tvae"\nlabel = "ddpm"\n', "[[generators]] label 'ddpm' is used twice"),
    (lambda t: t + '\n[[mitigations]]\nlabel = "x"\nstep = "audit"\n', "step: 'audit' is not a mitigation step"),
    (
        _sub('attacks = ["levatt", "dcr"]', 'attacks = ["levatt", "dcr"]\nparams = { mc = { k = 1 } }'),
        "[attack] params.mc: not one of the attacks run",
    ),
    (_sub('test = "data/test.csv"\n', ""), "[audit] holdout = \"test\" but dataset 'toy' has no test file"),
    (_sub("[train]", "[train\n"), "not valid TOML"),
    (
        lambda t: (
            t + '\n[[published]]\ndataset = "toy"\ngenerator = "ddpm"\nmetric = "x"\nvalue = "high"\nsource = "s"\n'
        ),
        "[[published]] #1: value must be a number",
    ),
    (
        _sub("[study]", '[study]\nplugins = ["no_such_module_xyz"]'),
        "[study] plugins: cannot import 'no_such_module_xyz'",
    ),
]


@pytest.mark.parametrize(("edit", "message"), BAD, ids=[m[:40] for _, m in BAD])
def test_bad_study_files_raise_one_line_naming_the_file_and_key(write_study, edit, message):
    path = write_study(edit(BASE), "bad.toml")
    with pytest.raises(ParameterError) as info:
        load_study(path)
    text = str(info.value)
    assert text.startswith("bad.toml: "), text
    assert message in text, text
    assert "\n" not in text


def test_cli_reports_a_bad_study_in_one_line_and_exits_2(write_study, tmp_path, capsys):
    from tabmem.cli import main

    path = write_study(BASE.replace("n_bootstrap = 50", "n_bootstrap = -3"), "bad.toml")
    with pytest.raises(SystemExit) as info:
        main(["run", str(path), "--out", str(tmp_path / "o"), "--dry-run"])
    assert info.value.code == 2
    captured = capsys.readouterr()
    assert captured.err.strip().splitlines() == [
        "Error: bad.toml: [audit] n_bootstrap must be an integer in [0, inf], got -3"
    ]
    assert "Traceback" not in captured.err + captured.out
