"""Moved to :mod:`tabmem.callbacks` (kept so that existing imports keep working)."""

from tabmem.callbacks import *  # noqa: F401,F403
from tabmem.callbacks import __all__  # noqa: F401
