"""Tables: schema, reading, encodings, datasets and row serialisation."""

from tabmem.data.encoding import TableEncoder
from tabmem.data.io import read_table, write_table
from tabmem.data.schema import Schema, canonical_categories, canonical_category, validate_table

__all__ = [
    "Schema",
    "TableEncoder",
    "canonical_category",
    "canonical_categories",
    "read_table",
    "validate_table",
    "write_table",
]
