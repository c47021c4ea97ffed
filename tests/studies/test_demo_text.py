"""The demo writes TOML values and prints shell commands with user text quoted for the tool that reads them."""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest

from tabmem.studies.demo import _toml_str, demo_study_text

try:  # Python >= 3.11
    import tomllib
except ModuleNotFoundError:  # pragma: no cover - Python 3.10
    import tomli as tomllib  # type: ignore[no-redef]


@pytest.mark.parametrize("value", ['a"b', "x.y", "$\\foo$", "naïve", "tab\there", "new\nline", "\x7f\x01", "😀", "a'b"])
def test_toml_strings_round_trip(value):
    assert tomllib.loads(f"k = {_toml_str(value)}")["k"] == value


def test_the_demo_study_holds_the_distance_as_given():
    doc = tomllib.loads(demo_study_text(distance='we"ird\\.name'))
    assert doc["audit"]["distances"] == ['we"ird\\.name'] and doc["train"]["distance"] == 'we"ird\\.name'


def test_the_printed_copy_command_quotes_the_study_path():
    from tabmem.cli.demo import own_table_lines

    study = Path("/tmp/my runs/$HOME;rm -rf x/demo.toml")
    line = own_table_lines(study)[2]
    command = line.split("    #", 1)[0]
    assert shlex.split(command) == ["cp", str(study), "mine.toml"]
