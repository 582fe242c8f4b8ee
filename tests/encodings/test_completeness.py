"""Every registered encoding has every part: settings that round-trip through the command
line and records, a transform whose outputs its encoder reads inside a model (trained one
step, saved and reloaded), a reference cross-check test, and a current docs entry. A new
declaration that lacks one fails here."""

import dataclasses
import json
from pathlib import Path

import pytest
import torch
from torch_geometric.data import Batch

from graphpe.encodings import GATE, PAIR, encodings, parse_pe, pe_spec, resolve_pe
from graphpe.encodings.registry import FAMILIES, attributes_table, markdown_table
from graphpe.nn.build import build_model, load_model
from graphpe.synthetic import molecule_like_graphs

ROOT = Path(__file__).resolve().parents[2]
NAMES = list(encodings())


def _cli_text(value):
    if isinstance(value, tuple):
        return "/".join(str(v) for v in value)
    return json.dumps(value) if value is None or isinstance(value, bool) else str(value)


@pytest.mark.parametrize("name", NAMES)
def test_settings_round_trip_through_the_command_line_and_records(name):
    cls = encodings()[name]
    spec = pe_spec(name)
    assert spec == cls() and hash(spec) == hash(cls())
    assert cls.family in FAMILIES and cls.summary and cls.paper
    # every setting spelled out on the command line gives the defaults back
    text = ":".join([name, *(f"{f.name}={_cli_text(getattr(spec, f.name))}"
                             for f in dataclasses.fields(cls))])
    assert resolve_pe(text) == [spec], text
    assert parse_pe(name) == [{"name": name}]
    # a record (JSON) resolves to the same spec
    assert resolve_pe(json.loads(json.dumps([spec.to_dict()]))) == [spec]
    assert repr(spec).startswith(f"{cls.__name__}(")
    with pytest.raises(ValueError, match=rf"unknown setting\(s\) \['nope'\] for PE '{name}'"):
        pe_spec(name, nope=1)


def _tiny_gpse(tmp_path):
    from graphpe.encodings.gpse import save_gpse
    from graphpe.nn import GPSE

    torch.manual_seed(0)
    path = tmp_path / "gpse.pt"
    save_gpse(GPSE(dim_in=4, dim_inner=8, layers_mp=2, num_node_targets=0,
                   num_graph_targets=0), path)
    return {"checkpoint": str(path), "dim": 8}


# the settings an encoding `requires` (a pretrained model's checkpoint), made small here
REQUIRED = {"gpse": _tiny_gpse}


def test_every_required_setting_is_given_here():
    assert sorted(REQUIRED) == sorted(n for n in NAMES if encodings()[n].requires)


def _spec(name, tmp_path):
    """``pe_spec(name)``: the defaults, with the settings it requires (:data:`REQUIRED`)."""
    return pe_spec(name, **REQUIRED[name](tmp_path)) if name in REQUIRED else pe_spec(name)


def _batch(spec):
    graphs = molecule_like_graphs(4, min_nodes=4, max_nodes=9, seed=2)
    for g in graphs:
        g.x = torch.zeros(g.num_nodes, 1, dtype=torch.long)
        g.edge_attr = torch.zeros(g.edge_index.size(1), dtype=torch.long)
        g.y = torch.tensor([1.0])
    batch = Batch.from_data_list(graphs)
    transform = spec.transform()
    if spec.family == "models":
        assert transform is None  # learned inside the model
        return batch
    return transform(batch)


def _config(spec):
    config = {"model": "gps", "channels": 8, "layers": 1, "out_dim": 1, "node_vocab": 1,
              "edge_vocab": 1, "heads": 2}
    if spec.kind == PAIR:
        config["pair"] = {spec.name: spec.settings}
    else:
        config["pe"] = {spec.name: spec.settings}
    return config


@pytest.mark.parametrize("name", NAMES)
def test_transform_and_encoder_train_save_and_reload(name, tmp_path):
    spec = _spec(name, tmp_path)
    batch = _batch(spec)
    model = build_model(_config(spec))
    reads = ("pair_encoder" if spec.kind == PAIR else "peg_gates" if spec.kind == GATE
             else "pe_encoders")
    assert getattr(model, reads), f"{name}: the model has no {reads}"
    model.train()
    model(batch).square().mean().backward()
    grads = [n for n, p in model.named_parameters() if p.grad is None]
    assert not grads, grads
    path = tmp_path / "m.pt"
    torch.save({"format": "graphpe-checkpoint-1", "model_config": _config(spec),
                "state_dict": model.state_dict()}, path)
    model.eval()
    with torch.no_grad():
        torch.testing.assert_close(load_model(path)(batch), model(batch))


@pytest.mark.parametrize("name", NAMES)
def test_each_encoding_names_its_reference_test(name):
    path, test = encodings()[name].reference_test.split("::")
    assert (ROOT / path).is_file(), path
    assert f"def {test}(" in (ROOT / path).read_text(), f"{path} has no {test}"


def test_the_docs_table_is_current():
    docs = (ROOT / "docs" / "encodings.md").read_text()
    assert markdown_table() in docs, ("regenerate it: graphpe encodings --write-docs "
                                      "docs/encodings.md")
    assert attributes_table() in docs, ("regenerate it: graphpe encodings --write-docs "
                                        "docs/encodings.md")


def test_the_attributes_table_lists_every_transforms_output():
    table = attributes_table()
    assert "| `rfp` | `rfp` | [N, 4, 144] | float32 |" in table  # num_draws, dim * (steps + 1)
    assert "| `rwse` | `rwse` | [N, 16] | float32 |" in table
    assert "| `spd` | `spd_index` | [2, P] | int64 |" in table
    assert "| `degree` | (none: learned in the model) | | |" in table
    for name in encodings():
        assert f"| `{name}` |" in table, name
