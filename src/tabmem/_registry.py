"""The one registry type behind every name a config or the command line can use.

Generators, attacks, metrics, distances, row formats, augmenters and datasets are each kept in
a :class:`Registry`: a read-only mapping ``name -> class`` (or spec) filled by a decorator,
with

* a duplicate check (the same name registered by two different classes is an error),
* lazy loading of the built-in modules (``modules=``), so ``import tabmem`` stays fast and a
  component whose optional dependency is missing fails alone, with a message naming the extra,
* one error type: an unknown name raises :class:`~tabmem.errors.TabmemError` listing the known
  names, and bad constructor arguments raise it too (never a bare ``KeyError``/``TypeError``).

Conformance test batteries iterate a registry, so a new component is one file and is tested
automatically.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, Generic, TypeVar

from tabmem.errors import ParameterError, TabmemError

T = TypeVar("T")

__all__ = ["Registry"]


class Registry(Mapping[str, T], Generic[T]):
    """A named collection of components of one ``kind`` (``"attack"``, ``"distance"``, ...).

    Parameters
    ----------
    kind:
        What the entries are, used in messages (``unknown attack 'x'; available: ...``).
    base:
        When given, only subclasses of ``base`` may be registered.
    modules:
        Modules whose import registers the built-in entries; imported on first lookup. A module
        that fails with a missing *third-party* dependency is remembered and reported when one
        of its names is asked for (``optional=`` maps a name to the module that defines it).
    optional:
        ``name -> module`` for entries that live in modules with optional dependencies (imported
        only when that name is requested, or when all names are listed).
    attribute:
        Class attribute set to the registered name (``"name"`` by default; ``None`` sets none).
    extras:
        ``name -> extra`` for optional entries whose extra is not ``all`` (packages that pin
        conflicting stacks and are installed in their own virtualenv): a missing dependency's
        message names ``pip install 'tabmem[EXTRA]'``.
    """

    def __init__(
        self,
        kind: str,
        *,
        base: type | None = None,
        modules: Sequence[str] = (),
        optional: Mapping[str, str] | None = None,
        attribute: str | None = "name",
        extras: Mapping[str, str] | None = None,
    ) -> None:
        self.kind = kind
        self.base = base
        self._entries: dict[str, T] = {}
        self._modules = list(modules)
        self._optional = dict(optional or {})
        self._attribute = attribute
        self._extras = dict(extras or {})
        self._loaded = False
        self._missing: dict[str, str] = {}  # optional name -> missing dependency

    # ------------------------------------------------------------------ filling
    def register(self, name: str, *, overwrite: bool = False) -> Callable[[T], T]:
        """Decorator adding the decorated object under ``name`` (duplicate names are an error)."""
        if not isinstance(name, str) or not name:
            raise TypeError(f"{self.kind} names must be non-empty strings, got {name!r}")

        def decorate(obj: T) -> T:
            self.add(name, obj, overwrite=overwrite)
            return obj

        return decorate

    def add(self, name: str, obj: T, *, overwrite: bool = False) -> None:
        """Register ``obj`` under ``name`` (what :meth:`register` does, without a decorator)."""
        if self.base is not None and not (isinstance(obj, type) and issubclass(obj, self.base)):
            raise TypeError(f"register {self.kind} {name!r}: {obj!r} is not a {self.base.__name__} subclass")
        existing = self._entries.get(name)
        if existing is not None and not overwrite and _qualname(existing) != _qualname(obj):
            raise ParameterError(f"{self.kind} name {name!r} is already registered by {_qualname(existing)}")
        if self._attribute is not None and isinstance(obj, type):
            setattr(obj, self._attribute, name)
        self._entries[name] = obj

    def unregister(self, name: str) -> T:
        """Remove and return the entry ``name`` (for plugins and tests that register temporary entries)."""
        if name not in self._entries:
            raise ParameterError(f"unknown {self.kind} {name!r}; nothing to unregister")
        return self._entries.pop(name)

    # ------------------------------------------------------------------ lookup
    def get(self, name: str, default: Any = None) -> T:  # type: ignore[override]
        """The entry registered as ``name``; an unknown name raises :class:`TabmemError`.

        (Unlike ``dict.get``, a missing name is an error unless a ``default`` is given.)
        """
        self._load(name)
        if name in self._entries:
            return self._entries[name]
        if default is not None:
            return default
        if name in self._missing:
            extra = self._extras.get(name, "all")
            where = "" if extra == "all" else " (in its own virtualenv: see docs/generators.md)"
            raise TabmemError(
                f"{self.kind} {name!r} needs the optional dependency {self._missing[name]!r}: "
                f"pip install 'tabmem[{extra}]'{where}"
            )
        raise ParameterError(f"unknown {self.kind} {name!r}; available: {', '.join(self.names()) or 'none'}")

    def create(self, name: str, /, **params: Any) -> Any:
        """A new instance of the class registered as ``name``; bad arguments raise :class:`TabmemError`."""
        cls = self.get(name)
        try:
            return cls(**params)  # type: ignore[operator]
        except TypeError as exc:
            raise ParameterError(f"{self.kind} {name!r}: bad argument ({exc})") from None

    def names(self) -> list[str]:
        """Sorted names of every entry that can be used in this installation."""
        self._load(None)
        return sorted(self._entries)

    def in_order(self) -> list[T]:
        """Every entry in registration order (built-in modules first, then later registrations)."""
        self._load(None)
        return list(self._entries.values())

    # ------------------------------------------------------------------ Mapping
    def __getitem__(self, name: str) -> T:
        self._load(name)
        return self._entries[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())

    def __len__(self) -> int:
        return len(self.names())

    def __contains__(self, name: object) -> bool:
        if not isinstance(name, str):
            return False
        self._load(name)
        return name in self._entries

    def __repr__(self) -> str:
        return f"Registry({self.kind!r}, {self.names()})"

    # ------------------------------------------------------------------ loading
    def _load(self, name: str | None) -> None:
        if not self._loaded:
            self._loaded = True  # set first: the modules register into this registry while importing
            for module in self._modules:
                importlib.import_module(module)
        wanted = self._optional.items() if name is None else [(name, self._optional.get(name))]
        for key, module in wanted:
            if module is None or key in self._entries or key in self._missing:
                continue
            try:
                importlib.import_module(module)
            except ModuleNotFoundError as exc:
                if exc.name and exc.name.split(".")[0] == "tabmem":
                    raise
                self._missing[key] = exc.name or "?"


def _qualname(obj: Any) -> str:
    return f"{getattr(obj, '__module__', '?')}.{getattr(obj, '__qualname__', repr(obj))}"
