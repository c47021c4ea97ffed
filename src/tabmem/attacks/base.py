"""Attack base class and registry (no-box membership inference on synthetic tables).

Every attack is a small estimator: ``fit(synthetic, schema, reference=None)`` learns from the
synthetic table (and, for DOMIAS, a reference table of real non-member rows), then
``score(targets)`` returns one float per target row, **higher = more likely a member**.
Constructor arguments are configuration only; learned state ends in ``_``.

Capabilities are class attributes, so runners never test attack names:

* ``needs_reference``: ``fit`` needs real non-member rows (DOMIAS);
* ``supports_nan``: the attack can score rows with missing numerical values (KDE attacks cannot);
* an attack whose constructor takes ``nan`` is given the run's missing-value policy;
* ``needs_shadows``: a shadow-model attack (``lira``, ``groundhog``): ``fit`` also needs a
  :class:`~tabmem.attacks.shadows.ShadowSet` (``shadows=``), the synthetic tables of generators
  trained with and without each target, which the experiments layer trains
  (:mod:`tabmem.runs.shadows`); ``shadow_designs`` lists the shadow designs it can use
  (``"online"``: targets in half of the shadows; ``"offline"``: in none). Such attacks implement
  ``_fit_shadows(synthetic, schema, reference, shadows)`` instead of ``_fit``.

What the tools around the attacks need to know is also a class attribute, so that adding an
attack means adding its module only:

* ``display_name``: its name in reports and tables (``short_name``: in ``tabmem demo``'s terse table);
* ``distance_description``: for an attack whose score is minus a distance to the closest
  synthetic row, what that distance is (the report plots the members' and non-members' distances);
* ``run_options`` / ``statistic_options``: which run-wide options of ``tabmem attack``
  (``serializer``, ``distance``, ``n_jobs``) its constructor takes, directly or in
  ``statistic_params`` (shadow-model attacks): :meth:`Attack.run_params`;
* ``cost_unit`` and ``cost_factor``: the cost model of ``tabmem run --dry-run``
  (:func:`tabmem.studies.estimate.attack_seconds`): ``"search"`` (a neighbour search of the
  targets among the synthetic rows) or ``"edit_distance"`` (target x synthetic row x column
  edit-distance cells), ``cost_factor`` times.

Tables may be pandas DataFrames or :class:`~tabmem.data.schema.ValidatedTable` objects; a
validated table is not validated again.
"""

from __future__ import annotations

import inspect
from collections.abc import Iterable, Mapping
from typing import Any, ClassVar

import numpy as np
import pandas as pd

from tabmem._params import Params
from tabmem._registry import Registry
from tabmem.attacks.shadows import ShadowSet
from tabmem.data.schema import Schema, ValidatedTable
from tabmem.errors import ParameterError, TabmemError, name_setting

Table = pd.DataFrame | ValidatedTable


class Attack(Params):
    """Base class of membership-inference attacks (see module docstring)."""

    name: ClassVar[str] = "base"
    needs_reference: ClassVar[bool] = False
    supports_nan: ClassVar[bool] = True
    needs_shadows: ClassVar[bool] = False
    shadow_designs: ClassVar[tuple[str, ...]] = ()
    #: name in reports and tables (None: the registered name)
    display_name: ClassVar[str | None] = None
    #: name in ``tabmem demo``'s terse table (None: the registered name)
    short_name: ClassVar[str | None] = None
    #: what the distance is, for attacks whose score is minus a distance to the closest synthetic row
    distance_description: ClassVar[str | None] = None
    #: run-wide options (``serializer``, ``distance``, ``n_jobs``) passed to the constructor by ``tabmem attack``
    run_options: ClassVar[tuple[str, ...]] = ()
    #: run-wide options passed in ``statistic_params`` (shadow-model attacks)
    statistic_options: ClassVar[tuple[str, ...]] = ()
    #: cost model of ``--dry-run``: ``"search"`` or ``"edit_distance"``, ``cost_factor`` times
    cost_unit: ClassVar[str] = "search"
    cost_factor: ClassVar[float] = 1.0

    @classmethod
    def label(cls) -> str:
        """The attack's name in reports (``display_name``, else its registered name)."""
        return cls.display_name or cls.name

    @classmethod
    def terse_label(cls) -> str:
        """The attack's name in ``tabmem demo``'s table (``short_name``, else its registered name)."""
        return cls.short_name or cls.name

    @classmethod
    def run_params(cls, options: Mapping[str, Any]) -> dict[str, Any]:
        """The constructor arguments of ``tabmem attack``'s run-wide ``options`` (``serializer``, ``distance``,
        ``n_jobs``) that this attack takes: ``statistic_params`` first, then ``run_options``."""
        params: dict[str, Any] = {}
        if cls.statistic_options:
            params["statistic_params"] = {k: options[k] for k in cls.statistic_options}
        params.update({k: options[k] for k in cls.run_options})
        return params

    @classmethod
    def accepts_nan_policy(cls) -> bool:
        """Whether the constructor takes the run's missing-value policy (``nan=``)."""
        return "nan" in inspect.signature(cls.__init__).parameters

    def fit(
        self, synthetic: Table, schema: Schema, reference: Table | None = None, *, shadows: ShadowSet | None = None
    ) -> "Attack":
        if not isinstance(schema, Schema):
            raise TabmemError(f"{type(self).__name__}.fit: schema must be a tabmem Schema, got {type(schema).__name__}")
        if not isinstance(synthetic, (pd.DataFrame, ValidatedTable)):
            raise TabmemError(
                f"{type(self).__name__}.fit: synthetic must be a pandas DataFrame, got {type(synthetic).__name__}"
            )
        if len(synthetic) == 0:
            raise TabmemError(f"{self.name}: the synthetic table is empty (0 rows)")
        if self.needs_reference and reference is None:
            raise TabmemError(
                f"{self.name} needs a reference table of real non-member rows ({name_setting('reference', '--reference')})"
            )
        if reference is not None and len(reference) == 0:
            raise TabmemError(f"{self.name}: the reference table is empty (0 rows)")
        if self.needs_shadows and shadows is None:
            via = name_setting("shadows=", "--population")
            if via == "--population":  # under the command line: the population and the released model
                via = "--population and --model"
            raise ParameterError(f"{self.name} is a shadow-model attack: it needs shadow generators ({via})")
        if shadows is not None and not isinstance(shadows, ShadowSet):
            raise ParameterError(f"{self.name}: shadows must be a ShadowSet, got {type(shadows).__name__}")
        self.schema_ = schema
        if self.needs_shadows:
            self._fit_shadows(synthetic, schema, reference, shadows)  # type: ignore[arg-type]
        else:
            self._fit(synthetic, schema, reference)
        return self

    def _fit(self, synthetic: Table, schema: Schema, reference: Table | None) -> None:
        raise NotImplementedError

    def _fit_shadows(self, synthetic: Table, schema: Schema, reference: Table | None, shadows: ShadowSet) -> None:
        raise NotImplementedError

    def score(self, targets: Table) -> np.ndarray:
        """One membership score per row of ``targets`` (higher = more likely a member)."""
        if not hasattr(self, "schema_"):
            raise TabmemError(f"{type(self).__name__} is not fitted: call fit(synthetic, schema) first")
        if not isinstance(targets, (pd.DataFrame, ValidatedTable)):
            raise TabmemError(f"{self.name}.score: targets must be a pandas DataFrame, got {type(targets).__name__}")
        if len(targets) == 0:
            return np.zeros(0, dtype=np.float64)
        out = np.asarray(self._score(targets), dtype=np.float64)
        return out

    def _score(self, targets: Table) -> np.ndarray:
        raise NotImplementedError


#: name -> attack class; filled by :func:`register_attack`.
ATTACKS: Registry[type[Attack]] = Registry(
    "attack",
    base=Attack,
    modules=(
        "tabmem.attacks.levatt",
        "tabmem.attacks.dcr",
        "tabmem.attacks.montecarlo",
        "tabmem.attacks.density",
        "tabmem.attacks.lira",
        "tabmem.attacks.groundhog",
    ),
)
register_attack = ATTACKS.register


def get_attack(name: str, **kwargs: object) -> Attack:
    """A new, unfitted attack by registry name; unknown names list the known ones."""
    return ATTACKS.create(name, **kwargs)


def check_attack_names(names: Iterable[str], option: str = "attacks") -> list[str]:
    """The requested attack names as a list; none, or an unknown one, fails naming ``option``."""
    names = list(names)
    if not names:
        raise ParameterError(f"{option}: give at least one attack name")
    unknown = [a for a in names if a not in ATTACKS]
    if unknown:
        raise ParameterError(f"{option}: unknown attack(s) {unknown}; available: {', '.join(ATTACKS.names())}")
    return names
