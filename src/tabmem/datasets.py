"""``tabmem.datasets``: the dataset registry under the name the core issue uses (see :mod:`tabmem.data.datasets`)."""

from tabmem.data.datasets import *  # noqa: F403  (re-export: one implementation, two import paths)
from tabmem.data.datasets import __all__  # noqa: F401
