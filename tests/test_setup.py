"""The package's set-up: make installs the same build requirements as pyproject.toml declares
(it installs them itself and then builds without isolation, so a requirement missing from
either list would build the kernels in one set-up and not in the other)."""

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def test_make_installs_the_build_requirements_of_pyproject():
    tomllib = pytest.importorskip("tomllib")  # Python >= 3.11
    declared = tomllib.loads((ROOT / "pyproject.toml").read_text())["build-system"]["requires"]
    makefile = (ROOT / "Makefile").read_text().replace("\\\n", " ")
    line = next(x for x in makefile.splitlines() if '"setuptools' in x and "pip install" in x)
    assert sorted(re.findall(r'"([^"]+)"', line)) == sorted(declared)
