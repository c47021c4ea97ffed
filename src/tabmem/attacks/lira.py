"""LiRA on synthetic data: a per-target likelihood ratio from shadow generators (Carlini et al., S&P 2022).

For each target ``x`` a per-record statistic ``φ(x, S)`` of a synthetic table ``S`` is computed on
the released table and on every shadow's table (:class:`~tabmem.attacks.shadows.ShadowSet`). The
shadows trained with ``x`` ("in") and without it ("out") give two samples of ``φ``; each is
summarised by a Gaussian, and

* ``mode="online"``: ``score = log N(φ; μ_in, σ_in²) - log N(φ; μ_out, σ_out²)`` (the paper's
  Algorithm 1, a Neyman–Pearson likelihood ratio per target);
* ``mode="offline"``: only the "out" shadows; ``score = -log Pr[Z >= φ]``, ``Z ~ N(μ_out, σ_out²)``
  (the paper's one-sided offline test: a member's statistic is larger than the "out" ones).

``variance="global"`` (default; the paper's choice below 64 shadows) shares one variance per
side across targets: the pooled within-target variance of the in (out) statistics;
``variance="per_target"`` estimates one per target (needs >= 2 in and 2 out shadows per target).
Variances are floored at ``1e-6`` times the pooled spread so that a constant statistic never
divides by zero.

The statistic (``statistic=``) is any membership signal that a no-box attack computes, higher =
more member-like:

* ``"dcr"``: ``-log(d + c)``, ``d`` the distance to the closest synthetic row (``dcr``'s distance,
  default ``l2``), ``c`` = ``eps`` or, by default, 1 % of the median positive distance (distances are
  skewed; their log is closer to Gaussian, as Carlini et al. logit-scale confidences);
* ``"levatt"``: ``-log(d + 1)``, ``d`` LevAtt's minimum edit distance;
* ``"domias"``: DOMIAS' ``log p_S(x) - log p_R(x)`` with the reference table (the population);
* ``"density"``: ``log p_S(x)``.

``statistic_params`` go to that attack (``{"distance": "fang2024"}``, ``{"serializer": ...}``).
The statistics of each (statistic, parameters, table) are cached on the shadow set, so ``lira`` and
``lira_offline`` on the same shadows compute them once.

Registered variants: ``lira`` (DCR, online), ``lira_offline`` (DCR, offline), ``lira_levatt`` and
``lira_domias`` (online); every one takes every parameter.
"""

from __future__ import annotations

import hashlib
import inspect
import json
from typing import Any, ClassVar

import numpy as np
from scipy.stats import norm

from tabmem._checks import check_choice, check_number
from tabmem.attacks.base import ATTACKS, Attack, Table, get_attack, register_attack
from tabmem.attacks.shadows import ShadowSet, row_keys
from tabmem.data.schema import Schema
from tabmem.errors import ParameterError

__all__ = ["LiRA", "gaussian_fit", "lira_scores"]

STATISTICS = ("dcr", "levatt", "domias", "density")


def gaussian_fit(values: np.ndarray, mask: np.ndarray, variance: str) -> tuple[np.ndarray, np.ndarray]:
    """Per-target mean and standard deviation of ``values[s, t]`` over the shadows with ``mask[s, t]``.

    ``variance="global"``: one standard deviation for all targets, the square root of the pooled
    within-target variance ``sum_t sum_s (v - mean_t)^2 / sum_t (n_t - 1)``.
    """
    n = mask.sum(axis=0).astype(np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = np.where(mask, values, 0.0).sum(axis=0) / n
        dev2 = np.where(mask, (values - mean) ** 2, 0.0).sum(axis=0)
    if variance == "global":
        dof = np.maximum(n - 1, 0).sum()
        if dof <= 0:
            raise ParameterError("LiRA: the shadows leave no degrees of freedom to estimate a variance")
        std = np.full(values.shape[1], np.sqrt(dev2[n > 1].sum() / dof))
    else:
        if np.any(n < 2):
            raise ParameterError(
                f"LiRA variance='per_target' needs at least 2 shadows per side for every target; "
                f"{int((n < 2).sum())} target(s) have fewer (use variance='global' or more shadows)"
            )
        std = np.sqrt(dev2 / (n - 1))
    return mean, std


def lira_scores(
    observed: np.ndarray,
    shadow_stats: np.ndarray,
    membership: np.ndarray,
    *,
    mode: str = "online",
    variance: str = "global",
) -> np.ndarray:
    """LiRA scores (module docstring) of ``observed[t]`` given ``shadow_stats[s, t]`` and ``membership[s, t]``."""
    check_choice("mode", mode, ("online", "offline"))
    check_choice("variance", variance, ("global", "per_target"))
    x = np.asarray(observed, dtype=np.float64)
    v = np.asarray(shadow_stats, dtype=np.float64)
    m = np.asarray(membership, dtype=bool)
    if v.shape != m.shape or v.shape[1:] != x.shape:
        raise ParameterError(f"LiRA: statistics {v.shape}, membership {m.shape} and observed {x.shape} disagree")
    out_mask = ~m
    if not out_mask.any(axis=0).all():
        raise ParameterError("LiRA: some targets are in every shadow (no 'out' shadow to compare with)")
    mu_out, sd_out = gaussian_fit(v, out_mask, variance)
    floor = 1e-6 * max(float(np.nanstd(v)), 1e-12)
    sd_out = np.maximum(sd_out, floor)
    if mode == "offline":
        return -norm.logsf(x, loc=mu_out, scale=sd_out)
    if not m.any(axis=0).all():
        raise ParameterError(
            "LiRA online: some targets are in no shadow (offline shadows?); use mode='offline' or online shadows"
        )
    mu_in, sd_in = gaussian_fit(v, m, variance)
    sd_in = np.maximum(sd_in, floor)
    return norm.logpdf(x, loc=mu_in, scale=sd_in) - norm.logpdf(x, loc=mu_out, scale=sd_out)


@register_attack("lira")
class LiRA(Attack):
    """Likelihood-ratio attack from shadow generators (module docstring)."""

    display_name = "LiRA"
    run_options = ("n_jobs",)
    statistic_options = ("distance",)

    needs_shadows: ClassVar[bool] = True
    #: shadow designs this attack can use
    shadow_designs: ClassVar[tuple[str, ...]] = ("online",)
    default_statistic: ClassVar[str] = "dcr"
    default_mode: ClassVar[str] = "online"

    def __init__(
        self,
        statistic: str | None = None,
        mode: str | None = None,
        variance: str = "global",
        statistic_params: dict[str, Any] | None = None,
        eps: float | None = None,
        nan: str = "error",
        n_jobs: int | None = 2,
    ) -> None:
        self.statistic = statistic
        self.mode = mode
        self.variance = variance
        self.statistic_params = statistic_params
        self.eps = eps
        self.nan = nan
        self.n_jobs = n_jobs

    def _fit_shadows(self, synthetic: Table, schema: Schema, reference: Table | None, shadows: ShadowSet) -> None:
        self.statistic_ = check_choice("statistic", self.statistic or self.default_statistic, STATISTICS)
        self.mode_ = check_choice("mode", self.mode or self.default_mode, ("online", "offline"))
        check_choice("variance", self.variance, ("global", "per_target"))
        if self.eps is not None:
            check_number("eps", self.eps, low=0.0, low_open=True)
        if self.mode_ == "online" and shadows.design != "online":
            raise ParameterError(
                f"{self.name}: online LiRA needs online shadows (targets in half of them); got offline"
            )
        if self.statistic_ == "domias" and reference is None:
            raise ParameterError(f"{self.name}: the domias statistic needs a reference table (the population)")
        self.synthetic_, self.reference_, self.shadows_ = synthetic, reference, shadows

    def _attack_params(self) -> dict[str, Any]:
        kw = dict(self.statistic_params or {})
        accepted = inspect.signature(ATTACKS[self.statistic_].__init__).parameters
        if "nan" in accepted:
            kw.setdefault("nan", self.nan)
        if "n_jobs" in accepted:
            kw.setdefault("n_jobs", self.n_jobs)
        return kw

    def _raw(self, table: Table, targets: Table) -> np.ndarray:
        """The attack's score of every target on one synthetic table (higher = member)."""
        atk = get_attack(self.statistic_, **self._attack_params())
        return atk.fit(table, self.schema_, reference=self.reference_).score(targets)

    def statistics(self, targets: Table) -> tuple[np.ndarray, np.ndarray]:
        """(observed statistic per target, shadow statistics ``(S, n_targets)``), transformed (module docstring)."""
        sh = self.shadows_
        t_key = _digest(row_keys(targets))
        r_key = None if self.reference_ is None else _digest(row_keys(self.reference_))
        key = json.dumps([self.statistic_, self._attack_params(), t_key, r_key], sort_keys=True, default=str)
        cache = sh.cache.setdefault(key, {})
        if "shadows" not in cache:
            cache["shadows"] = np.stack([self._raw(t, targets) for t in sh.validated(self.schema_)])
        observed_key = "released:" + _digest(row_keys(self.synthetic_))
        if observed_key not in cache:
            cache[observed_key] = self._raw(self.synthetic_, targets)
        raw_obs, raw_sh = cache[observed_key], cache["shadows"]
        if self.statistic_ in ("dcr", "levatt"):
            d_obs, d_sh = np.maximum(-raw_obs, 0.0), np.maximum(-raw_sh, 0.0)
            c = self.eps if self.eps is not None else (1.0 if self.statistic_ == "levatt" else _auto_eps(d_obs, d_sh))
            return -np.log(d_obs + c), -np.log(d_sh + c)
        return raw_obs, raw_sh

    def _score(self, targets: Table) -> np.ndarray:
        sh = self.shadows_
        if sh.design == "online":  # "in" and "out" are target-specific: only the planned targets
            sh.check_targets(targets, self.schema_, self.name)
            membership = sh.membership
        else:  # no target in any shadow: every shadow is "out" for any row
            membership = np.zeros((sh.n_shadows, len(targets)), dtype=bool)
        observed, stats = self.statistics(targets)
        return lira_scores(observed, stats, membership, mode=self.mode_, variance=self.variance)


def _digest(keys: np.ndarray) -> str:
    return hashlib.sha256(np.ascontiguousarray(keys).tobytes()).hexdigest()[:16]


def _auto_eps(d_obs: np.ndarray, d_sh: np.ndarray) -> float:
    """1 % of the median positive distance (1e-12 when every distance is 0)."""
    d = np.concatenate([d_obs.ravel(), d_sh.ravel()])
    pos = d[d > 0]
    return float(0.01 * np.median(pos)) if pos.size else 1e-12


@register_attack("lira_offline")
class LiRAOffline(LiRA):
    """Offline LiRA (only "out" shadows) with the DCR statistic."""

    display_name = "LiRA (offline)"

    shadow_designs = ("online", "offline")
    default_mode = "offline"


@register_attack("lira_levatt")
class LiRALevAtt(LiRA):
    """Online LiRA with LevAtt's edit distance as the statistic."""

    display_name = "LiRA (LevAtt statistic)"
    statistic_options = ("serializer",)

    default_statistic = "levatt"


@register_attack("lira_domias")
class LiRADOMIAS(LiRA):
    """Online LiRA with the DOMIAS density ratio as the statistic (reference: the population)."""

    display_name = "LiRA (DOMIAS statistic)"
    run_options = ()  # tabmem attack passes it no run-wide option
    statistic_options = ()

    default_statistic = "domias"
