"""The scikit-learn parameter convention shared by generators, attacks and augmenters.

The constructor's keyword arguments are the component's parameters and are stored, unchanged,
as attributes of the same names (validation happens in ``fit``); :meth:`Params.get_params` reads
them back through the constructor's signature, and the ``repr`` shows them.
"""

from __future__ import annotations

import inspect
from typing import Any

__all__ = ["Params"]


class Params:
    """``_param_names``, ``get_params`` and ``__repr__`` from the constructor's signature."""

    @classmethod
    def _param_names(cls) -> list[str]:
        kinds = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
        params = inspect.signature(cls.__init__).parameters.values()
        return [p.name for p in params if p.name != "self" and p.kind in kinds]

    @classmethod
    def _param_defaults(cls) -> dict[str, Any]:
        """The constructor's default of each parameter that has one."""
        params = inspect.signature(cls.__init__).parameters
        return {k: params[k].default for k in cls._param_names() if params[k].default is not inspect.Parameter.empty}

    def get_params(self) -> dict[str, Any]:
        """The constructor arguments (scikit-learn convention)."""
        return {k: getattr(self, k) for k in self._param_names()}

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.get_params().items())
        return f"{type(self).__name__}({args})"
