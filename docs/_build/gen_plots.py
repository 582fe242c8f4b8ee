"""The docs' plots, drawn at build time (mkdocs-gen-files) from the JSON in
``benchmarks/results``: nothing drawn is committed, so a plot cannot disagree with its JSON.

``benchmarks/tables.py`` draws the speed plots; the papers' plots come from the ``plot``
functions of ``benchmarks/papers/*.py`` (the same ones their ``--plot-only`` runs).
"""

from __future__ import annotations

import importlib.util
import json
import sys
import tempfile
from pathlib import Path

import mkdocs_gen_files

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))

import tables  # noqa: E402

PAPERS = {"papers_lcp": ("lcp", "plot"), "papers_rfp": ("rfp", "plot"),
          "papers_spe": ("spe", "plot_curves")}


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp)
        drawn = tables.plots(out, ROOT)
        for name, (module, function) in PAPERS.items():
            source = ROOT / "benchmarks" / "results" / f"{name}.json"
            if source.exists():
                path = ROOT / "benchmarks" / "papers" / f"{module}.py"
                spec = importlib.util.spec_from_file_location(f"papers_{module}", path)
                loaded = importlib.util.module_from_spec(spec)
                spec.loader.exec_module(loaded)
                plot = getattr(loaded, function)
                plot(json.loads(source.read_text()), out / f"{name}.png")
                drawn.append(out / f"{name}.png")
        for path in drawn:
            with mkdocs_gen_files.open(f"plots/{path.name}", "wb") as f:
                f.write(path.read_bytes())


main()
