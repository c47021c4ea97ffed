"""Row <-> text formats, by name: ``get_serializer("canonical").fit(train, schema).serialize(df)``.

Each format module registers its classes with :func:`register_serializer` when imported;
to add a format, create a module here and add one import line below.
"""

from tabmem.data.serialization.base import SERIALIZERS, ParseResult, RowSerializer, get_serializer, register_serializer

# format modules (one import line each; importing registers them)
from tabmem.data.serialization import canonical  # noqa: E402,F401  isort: skip
from tabmem.data.serialization import paper  # noqa: E402,F401  isort: skip
from tabmem.data.serialization import great  # noqa: E402,F401  isort: skip
from tabmem.data.serialization import realtabformer  # noqa: E402,F401  isort: skip

__all__ = ["SERIALIZERS", "ParseResult", "RowSerializer", "get_serializer", "register_serializer"]
