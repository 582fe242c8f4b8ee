"""Every ```python block of the README and of the docs pages runs, so examples cannot rot.

A page's blocks run in order in one namespace (a later block may use an earlier one's names),
in a temporary working folder. Blocks that read ZINC (``ZINC("ROOT", ...)`` or
``load_dataset("ZINC", "ROOT")``) find a small copy at that root: the offline copy of
``../shared/data`` cut to a few dozen graphs per split (the page is skipped where it is absent,
as the other dataset tests are). A block that cannot run offline on a CPU is preceded by
``<!-- snippet: skip REASON -->``; those are counted, and their number is capped below.
"""

from __future__ import annotations

import os
import re
import shutil
import tarfile
from pathlib import Path

import pytest

from tests.conftest import SHARED_DATA

ROOT = Path(__file__).resolve().parents[2]
# the README and the user-facing pages; adding-an-encoding.md and design-notes.md quote
# excerpts of the package's own source (with ``...``), which its tests run
EXCERPTS = {"adding-an-encoding.md", "design-notes.md"}
PAGES = [ROOT / "README.md",
         *sorted(p for p in (ROOT / "docs").rglob("*.md") if p.name not in EXCERPTS)]
SKIP = re.compile(r"<!--\s*snippet:\s*skip\s+(.+?)\s*-->\s*$")
FENCE = re.compile(r"^```python\s*$")
MAX_SKIPPED = 6  # keep the blocks that cannot run few
ZINC_GRAPHS = 48  # per split: enough for a batch of 32


def blocks(path: Path) -> list[tuple[int, str, str | None]]:
    """``(line, code, skip reason or None)`` of every ```python block of ``path``."""
    lines = path.read_text().split("\n")
    found, i = [], 0
    while i < len(lines):
        if FENCE.match(lines[i]):
            j = i + 1
            while not lines[j].startswith("```"):
                j += 1
            before = next((lines[k] for k in range(i - 1, -1, -1) if lines[k].strip()), "")
            skip = SKIP.match(before.strip())
            found.append((i + 1, "\n".join(lines[i + 1:j]), skip.group(1) if skip else None))
            i = j
        i += 1
    return found


def zinc_roots(code: str) -> list[str]:
    roots = re.findall(r"""ZINC\(\s*["']([^"']+)["']""", code)
    roots += [f"{r}/ZINC" for r in
              re.findall(r"""load_dataset\(\s*["']ZINC["']\s*,\s*["']([^"']+)["']""", code)]
    return roots


@pytest.fixture(scope="session")
def zinc_raw(tmp_path_factory) -> Path:
    """The offline ZINC copy's raw files with each split cut to its first graphs."""
    archive = SHARED_DATA / "zinc12k-subset-raw.tar.xz"
    if not archive.exists():
        pytest.skip(f"offline ZINC copy not found at {archive}")
    raw = tmp_path_factory.mktemp("zinc-raw")
    with tarfile.open(archive) as tar:
        tar.extractall(raw, filter="data")
    for split in ("train", "val", "test"):  # the subset's first graphs of each split
        index = raw / f"{split}.index"
        first = index.read_text().strip().split(",")[:ZINC_GRAPHS]
        index.write_text(",".join(first) + "\n")
    return raw


PAGE_BLOCKS = {p: blocks(p) for p in PAGES}
WITH_CODE = [p for p, b in PAGE_BLOCKS.items() if b]


@pytest.mark.parametrize("page", WITH_CODE, ids=[str(p.relative_to(ROOT)) for p in WITH_CODE])
def test_code_blocks_run(page, tmp_path, monkeypatch, request):
    found = PAGE_BLOCKS[page]
    runnable = [(line, code) for line, code, skip in found if skip is None]
    roots = sorted({r for _, code in runnable for r in zinc_roots(code)})
    monkeypatch.chdir(tmp_path)
    if roots:
        raw = request.getfixturevalue("zinc_raw")
        for root in roots:
            # ZINC(subset=True) reads ROOT/raw and writes ROOT/subset/processed
            shutil.copytree(raw, tmp_path / root / "raw", symlinks=True,
                            copy_function=os.symlink)
    namespace: dict = {"__name__": "__snippet__"}
    for line, code in runnable:
        try:
            exec(compile(code, f"{page.relative_to(ROOT)}:{line}", "exec"), namespace)
        except Exception as error:  # name the block, keep the traceback
            raise AssertionError(f"{page.relative_to(ROOT)}, block at line {line}: "
                                 f"{type(error).__name__}: {error}") from error


def test_skipped_blocks_are_few_and_say_why():
    skipped = [(p.relative_to(ROOT), line, why) for p, found in PAGE_BLOCKS.items()
               for line, _, why in found if why is not None]
    assert len(skipped) <= MAX_SKIPPED, skipped
    total = sum(len(b) for b in PAGE_BLOCKS.values())
    print(f"{total} python blocks, {total - len(skipped)} run, {len(skipped)} skipped: "
          f"{skipped}")
    assert all(len(why) > 5 for *_, why in skipped)


def test_the_readme_and_the_guide_have_code():
    assert len(PAGE_BLOCKS[ROOT / "README.md"]) >= 4
    assert sum(len(PAGE_BLOCKS[p]) for p in PAGES if "guide" in p.parts) >= 8


README_BLOCKS = [(line, code) for line, code, skip in PAGE_BLOCKS[ROOT / "README.md"]
                 if skip is None]


@pytest.mark.parametrize("line,code", README_BLOCKS, ids=[f"line {n}" for n, _ in README_BLOCKS])
def test_each_readme_block_runs_alone(line, code, tmp_path, request):
    """A reader copies one block: it runs on its own, in a fresh interpreter (its data placed
    offline, as the block's comment says where it would download)."""
    import subprocess
    import sys

    for root in zinc_roots(code):
        shutil.copytree(request.getfixturevalue("zinc_raw"), tmp_path / root / "raw",
                        symlinks=True, copy_function=os.symlink)
    script = tmp_path / "snippet.py"
    script.write_text(code)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])]))
    result = subprocess.run([sys.executable, str(script)], cwd=tmp_path, env=env,
                            capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, f"README.md, block at line {line}:\n{result.stderr[-3000:]}"
