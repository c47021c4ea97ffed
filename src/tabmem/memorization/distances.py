"""Moved to :mod:`tabmem.neighbors.distances` (kept so that existing imports keep working)."""

from tabmem.neighbors.distances import *  # noqa: F401,F403
from tabmem.neighbors.distances import __all__  # noqa: F401
