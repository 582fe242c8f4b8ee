import runpy
from pathlib import Path

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def test_laplacian_pe_example_runs(capsys):
    runpy.run_path(str(EXAMPLES / "laplacian_pe.py"), run_name="__main__")
    assert "eigenvalues of the first graph" in capsys.readouterr().out


def test_custom_gnn_example_runs(capsys):
    runpy.run_path(str(EXAMPLES / "custom_gnn.py"), run_name="__main__")
    assert "epoch 10: train MAE" in capsys.readouterr().out


def test_quickstart_example_runs(capsys):
    runpy.run_path(str(EXAMPLES / "quickstart.py"), run_name="__main__")
    assert "epoch 5: train MAE" in capsys.readouterr().out


def test_large_graph_example_runs(capsys, monkeypatch):
    import sys

    monkeypatch.setattr(sys, "argv", ["large_graph.py", "5000"])
    runpy.run_path(str(EXAMPLES / "large_graph.py"), run_name="__main__")
    out = capsys.readouterr().out
    assert "LapPE k=8 on 5,000 nodes" in out
    residual = float(out.split("largest residual ||L v - lambda v||: ")[1].split()[0])
    assert residual < 1e-5


def test_ddp_example_runs_with_two_processes(tmp_path):
    import subprocess
    import sys

    torchrun = Path(sys.executable).with_name("torchrun")
    import os

    env = {k: v for k, v in os.environ.items() if k not in ("RANK", "WORLD_SIZE")}
    out = subprocess.run([str(torchrun), "--nproc-per-node", "2", str(EXAMPLES / "ddp_cpu.py")],
                         capture_output=True, text=True, timeout=300, env=env)
    assert out.returncode == 0, out.stderr[-2000:]
    assert "2 processes: test accuracy" in out.stdout
