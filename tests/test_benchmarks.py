"""The benchmark scripts run end to end on tiny inputs (their numbers are not checked here)."""

import json
import runpy
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[1] / "benchmarks"


def test_precompute_benchmark_runs(tmp_path, monkeypatch, capsys):
    out = tmp_path / "p.json"
    monkeypatch.setattr(sys, "argv", ["precompute.py", "--quick", "--synthetic", "50",
                                      "--repeats", "1", "--json", str(out)])
    runpy.run_path(str(BENCH / "precompute.py"), run_name="__main__")
    rows = json.loads(out.read_text())["rows"]
    assert {r["encoding"] for r in rows} == {"LapPE k=8", "RWSE T=16"}
    assert all(r["max_error"] < 1e-4 for r in rows)
