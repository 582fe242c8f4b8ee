"""The documentation site, built once per test session (``mkdocs build --strict`` into a
temporary folder) for the checks of its HTML (``test_site.py``) and of its layout in a
browser (``test_layout.py``)."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
NEEDED = ("mkdocs", "material", "mkdocstrings", "mkdocs_gen_files", "mkdocs_literate_nav",
          "latex2mathml", "matplotlib")
MISSING = [name for name in NEEDED if importlib.util.find_spec(name) is None]
DOCS_DEPENDENCIES = pytest.mark.skipif(
    bool(MISSING), reason=f"the docs dependencies are not installed ({', '.join(MISSING)}): "
                          "pip install -e '.[docs]'")


@pytest.fixture(scope="session")
def site(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("site")
    env = dict(os.environ, NO_MKDOCS_2_WARNING="1", DISABLE_MKDOCS_2_WARNING="true",
               PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    run = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--quiet",
         "-f", str(ROOT / "mkdocs.yml"), "-d", str(out)],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
    assert run.returncode == 0, f"mkdocs build failed:\n{(run.stdout + run.stderr)[-6000:]}"
    return out
