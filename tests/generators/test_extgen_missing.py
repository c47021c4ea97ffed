"""``--model realtabformer`` where the package is not installed (the main environment): one line naming the extra.

The generator itself is tested in its own virtualenv (``tests/extgen``, ``tests/run_extgen.sh``).
"""

from __future__ import annotations

import importlib.util

import pytest

from cli_run import run
from tabmem.errors import TabmemError
from tabmem.generators import GENERATORS, get_generator

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("realtabformer") is not None,
    reason="realtabformer is installed here (its tests run with -m extgen)",
)

EXTRA = "pip install 'tabmem[realtabformer]'"


def test_the_registry_names_the_extra():
    with pytest.raises(TabmemError, match=r"needs the optional dependency 'realtabformer'") as info:
        get_generator("realtabformer", preset="small")
    assert EXTRA in str(info.value) and "\n" not in str(info.value)
    assert "realtabformer" not in GENERATORS.names()


@pytest.mark.skipif(importlib.util.find_spec("be_great") is not None, reason="be_great is installed here")
def test_great_names_its_extra():
    with pytest.raises(TabmemError, match=r"needs the optional dependency 'be_great'") as info:
        get_generator("great")
    assert "pip install 'tabmem[great]'" in str(info.value) and "great" not in GENERATORS.names()


@pytest.mark.parametrize("command", ["train", "dynamiccut"])
def test_model_realtabformer_is_one_line_naming_the_extra(command, capsys, tmp_path):
    code, out = run([command, "--dataset", "diabetes", "--model", "realtabformer", "--out", tmp_path / "o"], capsys)
    assert code != 0
    lines = [line for line in out.splitlines() if line.strip()]
    assert len(lines) == 1 and EXTRA in lines[0], out
    assert not (tmp_path / "o").exists()


@pytest.mark.skipif(importlib.util.find_spec("ctgan") is not None, reason="ctgan is installed here (-m sdv)")
@pytest.mark.parametrize("name", ["sdv_ctgan", "sdv_tvae"])
def test_sdv_generators_name_their_extra(name):
    with pytest.raises(TabmemError, match=r"needs the optional dependency 'ctgan'") as info:
        get_generator(name)
    assert "pip install 'tabmem[ctgan]'" in str(info.value) and "\n" not in str(info.value)
    assert name not in GENERATORS.names() and "ctgan" in GENERATORS.names()  # tabmem's own ctgan stays


@pytest.mark.skipif(importlib.util.find_spec("ctgan") is not None, reason="ctgan is installed here (-m sdv)")
@pytest.mark.parametrize("command", ["train", "dynamiccut"])
def test_model_sdv_ctgan_is_one_line_naming_the_extra(command, capsys, tmp_path):
    code, out = run([command, "--dataset", "diabetes", "--model", "sdv_ctgan", "--out", tmp_path / "o"], capsys)
    assert code != 0
    lines = [line for line in out.splitlines() if line.strip()]
    assert len(lines) == 1 and "pip install 'tabmem[ctgan]'" in lines[0], out
    assert not (tmp_path / "o").exists()


@pytest.mark.skipif(importlib.util.find_spec("synthcity") is not None, reason="synthcity is installed (-m synthcity)")
@pytest.mark.parametrize("name", ["synthcity_ddpm", "synthcity_ctgan", "synthcity_tvae"])
def test_synthcity_generators_name_their_extra(name):
    with pytest.raises(TabmemError, match=r"needs the optional dependency 'synthcity'") as info:
        get_generator(name)
    assert "pip install 'tabmem[synthcity]'" in str(info.value) and "\n" not in str(info.value)
    assert name not in GENERATORS.names()


@pytest.mark.skipif(importlib.util.find_spec("synthcity") is not None, reason="synthcity is installed (-m synthcity)")
@pytest.mark.parametrize("command", ["train", "dynamiccut"])
def test_model_synthcity_ddpm_is_one_line_naming_the_extra(command, capsys, tmp_path):
    code, out = run([command, "--dataset", "diabetes", "--model", "synthcity_ddpm", "--out", tmp_path / "o"], capsys)
    assert code != 0
    lines = [line for line in out.splitlines() if line.strip()]
    assert len(lines) == 1 and "pip install 'tabmem[synthcity]'" in lines[0], out
    assert not (tmp_path / "o").exists()
