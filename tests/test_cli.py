import json

import pytest

from graphpe.cli import demo, main
from tests.conftest import copy_shared


def test_demo_runs_every_pe(capsys):
    rows = demo(epochs=2)
    assert [r["pe"] for r in rows] == ["none", "lap", "rwse", "rfp", "lcp", "spe"]
    assert "test acc" in capsys.readouterr().out


def test_train_and_precompute_commands(tmp_path, capsys):
    copy_shared("tu/MUTAG", tmp_path / "MUTAG")
    out = tmp_path / "r.json"
    main(["train", "--dataset", "MUTAG", "--root", str(tmp_path), "--pe", "lap,rwse",
          "--epochs", "2", "--channels", "16", "--layers", "2", "--results", str(out)])
    assert json.loads(out.read_text())["dataset"] == "MUTAG"
    main(["precompute", "--dataset", "MUTAG", "--root", str(tmp_path), "--pe", "rwse",
          "--cache-dir", str(tmp_path / "cache")])
    assert list((tmp_path / "cache").glob("*.pt"))
    with pytest.raises(SystemExit):
        main(["bench", "no-such-benchmark"])
