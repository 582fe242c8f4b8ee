"""The generated tables of the README and the docs pages are current, and none is lost: every
marked block equals what ``benchmarks/tables.py`` builds from ``benchmarks/results`` (or, for
``encodings``, from the registry), and every table whose JSON exists is shown somewhere."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _tables():
    spec = importlib.util.spec_from_file_location("tables", ROOT / "benchmarks" / "tables.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


TABLES = _tables()
DOCUMENTS = TABLES.documents(ROOT)


@pytest.mark.parametrize("path", DOCUMENTS, ids=[str(p.relative_to(ROOT)) for p in DOCUMENTS])
def test_marked_blocks_are_current(path):
    for name, content in TABLES.marked_blocks(path).items():
        assert name in TABLES.TABLES, f"{path.name}: no table named {name!r}"
        built = TABLES.build(name, ROOT)
        assert built is not None, f"{path.name}: {name}'s JSON is missing"
        assert content == built + "\n", (f"{path.name}: table {name} is stale; run "
                                         "python benchmarks/tables.py --write-all")


def test_every_table_with_results_is_shown():
    shown = {name for path in DOCUMENTS for name in TABLES.marked_blocks(path)}
    missing = [name for name in TABLES.TABLES
               if name not in shown and TABLES.build(name, ROOT) is not None]
    assert not missing, f"tables built from benchmarks/results but shown nowhere: {missing}"


def test_the_readme_shows_the_encodings_and_the_headline_speed():
    readme = TABLES.marked_blocks(ROOT / "README.md")
    assert set(readme) == {"encodings", "headline"}
    assert "| `rwse` |" in readme["encodings"] and "vs PyG" not in readme["headline"]
    assert "GPS training step" in readme["headline"]


def test_the_readme_is_short():
    assert len((ROOT / "README.md").read_text().splitlines()) <= 250
