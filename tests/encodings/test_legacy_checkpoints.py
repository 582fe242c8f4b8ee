"""Checkpoints written before the encodings registry (model configs with encoder-side settings
such as ``num_times``, ``num_stats`` and ``attr_names``) still load and give the outputs they
gave then. The fixtures and the script that wrote them are in ``tests/fixtures``."""

from pathlib import Path

import pytest
import torch
from torch_geometric.data import Batch

from graphpe.encodings import resolve_pe, transforms_of
from graphpe.nn.build import load_model, normalize_model_config

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


def _graphs(seed):
    import importlib.util

    spec = importlib.util.spec_from_file_location("make_legacy", FIXTURES /
                                                  "make_legacy_checkpoints.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.graphs(seed)


@pytest.mark.parametrize("name", ["gps_node_pes", "gine_peg_pearl", "grit_spd"])
def test_a_checkpoint_of_the_previous_format_loads_and_gives_its_outputs(name):
    path = FIXTURES / f"legacy_{name}.pt"
    ckpt = torch.load(path, weights_only=True)
    model = load_model(path)
    batch = Batch.from_data_list(_graphs(1)[:4])
    for transform in transforms_of(resolve_pe(ckpt["pe"])):
        batch = transform(batch)
    with torch.no_grad():
        out = model(batch)
    torch.testing.assert_close(out, ckpt["expected_output"], rtol=1e-5, atol=1e-5)


def test_an_old_model_config_normalizes_to_the_new_one():
    ckpt = torch.load(FIXTURES / "legacy_gps_node_pes.pt", weights_only=True)
    old = ckpt["model_config"]
    new = normalize_model_config(old)
    assert new["pe"]["hkdiag"]["times"] == [1.0, 2.0, 3.0]
    assert "attr_names" not in new["pe"]["lap"] and "num_stats" not in new["pe"]["lcp"]
    # today's config of the same PEs is its own normal form, and equal to the upgraded one
    specs = resolve_pe(ckpt["pe"])
    assert normalize_model_config(new) == new
    assert new["pe"]["spe"] == next(s.settings for s in specs if s.name == "spe")
