"""Options that must be usable with every choice of another option.

``--preset`` defaults to ``small``: a generator without that preset (``noisy_resample``, the
positive control an attack is calibrated on) takes its class defaults, and ``none`` asks for
the class defaults of any generator. A shadow design that a requested attack cannot use is
refused before any shadow trains, in one line naming the attack and the option.
"""

from __future__ import annotations

import json

import pytest

from tabmem.errors import ParameterError
from tabmem.generators import DEFAULT_PRESET, GENERATORS, get_generator, resolve_preset
from tabmem.runs.attack import attack_to_dir

pytest.importorskip("torch")


def test_the_default_preset_resolves_for_every_generator():
    assert DEFAULT_PRESET == "small"
    for name in GENERATORS.names():
        cls = GENERATORS.get(name)
        expected = DEFAULT_PRESET if DEFAULT_PRESET in cls.PRESETS else None
        assert resolve_preset(name, DEFAULT_PRESET) == expected, name
        for none in (None, "none", "None", "NONE"):
            assert resolve_preset(name, none) is None, name
        get_generator(name, preset=DEFAULT_PRESET)  # builds
        get_generator(name, preset="none")


def test_an_unknown_preset_names_the_ones_there_are():
    with pytest.raises(ParameterError, match=r"^tvae: unknown preset 'big'; available: paper, small, or none \(the"):
        get_generator("tvae", preset="big")
    with pytest.raises(ParameterError, match=r"^noisy_resample: unknown preset 'paper'; available: none \(the class"):
        get_generator("noisy_resample", preset="paper")  # only the default preset falls back


def test_noisy_resample_presets_on_the_command_line(tmp_path, tables, capsys):
    from tabmem.cli import main

    members, non_members, synthetic, reference, _ = tables
    for name, t in [("m", members), ("n", non_members), ("s", synthetic), ("p", reference)]:
        t.to_csv(tmp_path / f"{name}.csv", index=False)
    base = ["attack", "--members", str(tmp_path / "m.csv"), "--non-members", str(tmp_path / "n.csv")]
    base += ["--synthetic", str(tmp_path / "s.csv"), "--population", str(tmp_path / "p.csv"), "--categorical", "k"]
    base += ["--attacks", "lira", "--model", "noisy_resample", "--n-shadows", "4", "--n-bootstrap", "0"]
    for extra in ([], ["--preset", "none"]):
        out = tmp_path / f"out{len(extra)}"
        try:
            main([*base, *extra, "--out", str(out)])
        except SystemExit as exc:
            assert not exc.code, capsys.readouterr().err
        assert 0 <= json.loads((out / "summary.json").read_text())["lira"]["auc"] <= 1
        assert json.loads((out / "shadows" / "plan.json").read_text())["settings"]["preset"] is None
    with pytest.raises(SystemExit) as exc:
        main([*base, "--shadow-design", "offline", "--out", str(tmp_path / "offline")])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert [ln for ln in err.splitlines() if ln.startswith("Error:")] == [
        "Error: lira works with online shadows only, not with --shadow-design offline (lira_offline works offline)"
    ]
    assert not (tmp_path / "offline" / "shadows").exists()  # refused before any shadow trained


@pytest.mark.parametrize("attack", ["lira", "lira_levatt", "lira_domias", "groundhog"])
def test_online_only_attacks_refuse_offline_shadows_before_any_work(attack, tmp_path, tables):
    members, non_members, synthetic, reference, schema = tables
    with pytest.raises(ParameterError, match=rf"^{attack} works with online shadows only, not with shadow_design="):
        attack_to_dir(members, non_members, synthetic, schema, tmp_path / "out", attacks=[attack],
                      population=reference, model="noisy_resample", shadow_design="offline")  # fmt: skip
    assert not (tmp_path / "out").exists()


def test_an_offline_capable_attack_takes_offline_shadows(tmp_path, tables):
    members, non_members, synthetic, reference, schema = tables
    summary = attack_to_dir(members, non_members, synthetic, schema, tmp_path / "out", attacks=["lira_offline"],
                            population=reference, model="noisy_resample", n_shadows=4, shadow_design="offline",
                            shadow_train_size=60, n_bootstrap=0)  # fmt: skip
    shadows = summary.to_dict()["_meta"]["shadows"]
    assert (shadows["design"], shadows["model"], shadows["preset"]) == ("offline", "noisy_resample", None)
    assert 0 <= summary.to_dict()["lira_offline"]["auc"] <= 1
