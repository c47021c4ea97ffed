"""Shared plumbing of the feature-space attacks: validation against the synthetic table's schema."""

from __future__ import annotations

import pandas as pd

from tabmem.data.encoding import TableEncoder
from tabmem.data.schema import Schema, ValidatedTable, validate
from tabmem.errors import TabmemError

NAN_POLICIES = ("error", "match")


def check_nan(nan: str) -> None:
    if nan not in NAN_POLICIES:
        raise TabmemError(f"nan must be one of {NAN_POLICIES}, got {nan!r}")


def fit_encoder(
    synthetic: pd.DataFrame | ValidatedTable, schema: Schema, nan: str
) -> tuple[TableEncoder, pd.DataFrame]:
    """Encoder fitted on the synthetic table (the attacker's knowledge) and the validated table."""
    check_nan(nan)
    checked = validate(synthetic, schema, name="synthetic", nan=nan, extra="ignore")  # type: ignore[arg-type]
    return TableEncoder(schema).fit(checked, nan="match"), checked.data


def validate_targets(
    enc: TableEncoder, targets: pd.DataFrame | ValidatedTable, nan: str, name: str = "targets"
) -> pd.DataFrame:
    """Targets checked against the schema; categories absent from the synthetic data mismatch everything."""
    return enc.validate(targets, name=name, nan=nan, unseen="mismatch", extra="ignore")  # type: ignore[arg-type]
