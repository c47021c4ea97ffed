"""Every registered attack carries the metadata the tools around it read (tabmem.attacks.base)."""

from __future__ import annotations

import inspect

import pytest

from tabmem.attacks import ATTACKS
from tabmem.report.readers import distance_attacks
from tabmem.report.verdict import attack_name

RUN_OPTIONS = {"serializer", "distance", "n_jobs"}
OPTIONS = {"serializer": "canonical", "distance": "l2", "n_jobs": 1}


@pytest.mark.parametrize("name", ATTACKS.names())
def test_every_attack_declares_its_metadata(name):
    cls = ATTACKS[name]
    assert "display_name" in vars(cls), f"{cls.__name__} must set its own display_name (not inherit it)"
    assert isinstance(cls.display_name, str) and cls.display_name
    assert cls.label() == cls.display_name == attack_name(name)
    assert cls.short_name is None or isinstance(cls.short_name, str)
    assert cls.distance_description is None or isinstance(cls.distance_description, str)
    assert set(cls.run_options) <= RUN_OPTIONS and set(cls.statistic_options) <= RUN_OPTIONS
    assert cls.cost_unit in ("search", "edit_distance") and cls.cost_factor > 0
    accepted = inspect.signature(cls.__init__).parameters
    for key in cls.run_params(OPTIONS):
        assert key in accepted, f"{name}: run_params gives {key!r}, which its constructor does not take"
    if cls.statistic_options:
        assert cls.needs_shadows and "statistic_params" in accepted


def test_the_tables_that_lived_outside_attacks_are_reproduced():
    """The display names, distance descriptions, demo names and CLI parameters the tools used to list."""
    assert {n: attack_name(n) for n in ATTACKS.names()} == {
        "levatt": "LevAtt",
        "dcr": "DCR",
        "mc": "Monte Carlo",
        "density": "density (KDE)",
        "domias": "DOMIAS",
        "lira": "LiRA",
        "lira_offline": "LiRA (offline)",
        "lira_domias": "LiRA (DOMIAS statistic)",
        "lira_levatt": "LiRA (LevAtt statistic)",
        "groundhog": "Groundhog",
    }
    assert attack_name("plugin") == "plugin"  # an unknown name is shown as it is
    assert list(distance_attacks().items()) == [
        ("levatt", "edit distance to the closest synthetic row string"),
        ("dcr", "distance to the closest synthetic row"),
    ]
    terse = {n: ATTACKS[n].terse_label() for n in ("levatt", "dcr", "mc", "density", "domias")}
    assert terse == {"levatt": "LevAtt", "dcr": "DCR", "mc": "Monte Carlo", "density": "density", "domias": "domias"}
    params = {a.name: p for a in ATTACKS.in_order() if (p := a.run_params(OPTIONS))}
    assert list(params.items()) == [
        ("levatt", {"serializer": "canonical", "n_jobs": 1}),
        ("dcr", {"distance": "l2", "n_jobs": 1}),
        ("mc", {"distance": "l2", "n_jobs": 1}),
        ("lira", {"statistic_params": {"distance": "l2"}, "n_jobs": 1}),
        ("lira_offline", {"statistic_params": {"distance": "l2"}, "n_jobs": 1}),
        ("lira_levatt", {"statistic_params": {"serializer": "canonical"}, "n_jobs": 1}),
    ]


def test_a_new_attack_needs_only_its_class():
    """A plugin attack registered with its metadata is named, costed and parametrised without other edits."""
    import types

    from tabmem.attacks.base import Attack, register_attack
    from tabmem.studies.estimate import LEVATT_COST, attack_seconds

    @register_attack("toy_edit")
    class ToyEdit(Attack):
        """A toy attack that costs like LevAtt, twice."""

        display_name = "Toy edit"
        distance_description = "toy distance"
        run_options = ("n_jobs",)
        cost_unit = "edit_distance"
        cost_factor = 2.0

        def __init__(self, n_jobs: int | None = 1) -> None:
            self.n_jobs = n_jobs

    try:
        cell = types.SimpleNamespace(dataset=types.SimpleNamespace(n_rows=100, n_columns=4))
        assert attack_seconds(["toy_edit"], 10.0, 20.0, cell) == 2.0 * 10.0 * 20.0 * 4.0 * LEVATT_COST
        assert attack_name("toy_edit") == "Toy edit" and distance_attacks()["toy_edit"] == "toy distance"
        assert ToyEdit.run_params(OPTIONS) == {"n_jobs": 1}
    finally:
        ATTACKS.unregister("toy_edit")
