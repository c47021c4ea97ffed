"""tabmem: find, measure and remove memorization in synthetic tabular data."""

from tabmem.data.schema import Schema, validate_table
from tabmem.errors import DataUnavailableError, SchemaError, TabmemError

__version__ = "0.1.0"

__all__ = ["Schema", "validate_table", "TabmemError", "SchemaError", "DataUnavailableError", "__version__"]


def __getattr__(name: str):  # lazy re-exports keep `import tabmem` fast
    if name == "ReplicaDetector":
        from tabmem.memorization.replicas import ReplicaDetector

        return ReplicaDetector
    raise AttributeError(name)
