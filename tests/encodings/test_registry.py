import dataclasses
import re

import pytest
import torch
from torch_geometric.data import Batch

from graphpe.encodings import GATE, NODE, PAIR, encodings, pe_model_config, pe_spec, resolve_pe
from graphpe.nn import build_model
from graphpe.synthetic import molecule_like_graphs
from graphpe.transforms import RWSE


def test_one_spec_builds_the_transform_and_the_matching_encoder():
    graphs = molecule_like_graphs(6, min_nodes=5, max_nodes=12, seed=0)
    for g in graphs:
        g.x = torch.zeros(g.num_nodes, 1, dtype=torch.long)
    specs = resolve_pe({"rwse": {"walk_length": 7}, "lap": {"k": 3}, "spe": {"k": 4, "m": 3},
                        "rfp": {"dim": 4, "steps": 2, "num_draws": 2}, "lcp": {},
                        "signnet": {"k": 2}})
    batch = Batch.from_data_list(graphs)
    for spec in specs:
        batch = spec.transform()(batch)
    model = build_model({"model": "gps", "channels": 8, "layers": 1, "node_vocab": 1,
                         "pe": pe_model_config(specs)})
    assert model(batch).shape == (6, 1)
    assert batch.rwse.shape[1] == 7 and batch.lap_pe.shape[1] == 3
    assert batch.rfp.shape[1:] == (2, 4 * 3)


def test_the_forms_a_pe_can_take():
    by_name = resolve_pe("rwse, lap")
    assert [s.name for s in by_name] == ["rwse", "lap"]
    assert by_name[0].settings == {"walk_length": 16, "estimate": "auto", "walks": 256,
                                   "walk_seed": 0, "max_exact_seconds": None}
    # the estimate's settings reach the transform, which keys them only where set
    (estimated,) = resolve_pe("rwse:estimate=sampled:walks=64")
    assert repr(estimated.transform()) == (
        "RWSE(walk_length=16, attr_name='rwse', self_loops=True, dense_max_nodes=512, "
        "estimate='sampled', walks=64)")
    assert repr(by_name[0].transform()) == repr(RWSE())
    assert resolve_pe("none") == [] and resolve_pe(None) == []
    assert resolve_pe(["rwse"]) == resolve_pe({"rwse": None}) == by_name[:1]
    tuned = resolve_pe([{"name": "rwse", "walk_length": 20}])
    assert tuned[0].settings["walk_length"] == 20
    # a record's specs resolve to the same specs
    assert resolve_pe([s.to_dict() for s in tuned]) == tuned
    assert resolve_pe(tuned) == tuned


def test_bad_specs_name_what_is_allowed():
    # every registered name, whichever encodings a branch adds
    with pytest.raises(ValueError, match=re.escape(f"unknown PE 'magic'; choose from "
                                                   f"{sorted(encodings())}")):
        pe_spec("magic")
    with pytest.raises(ValueError, match=r"unknown setting\(s\) \['length'\] for PE 'rwse'; "
                                         r"allowed: \['estimate', 'max_exact_seconds', "
                                         r"'walk_length', 'walk_seed', 'walks'\]"):
        resolve_pe({"rwse": {"length": 3}})
    with pytest.raises(ValueError, match="walk_length must be a positive int, got 0"):
        pe_spec("rwse", walk_length=0)
    with pytest.raises(ValueError, match="max_degree must be a positive int, got 0"):
        pe_spec("degree", max_degree=0)  # a learned PE: its encoder validates the settings
    with pytest.raises(ValueError, match="path_hops must be a non-negative int, got -2"):
        pe_spec("spd", path_hops=-2)
    with pytest.raises(ValueError, match=r"each PE may appear once, got \['rwse', 'rwse'\]"):
        resolve_pe("rwse,rwse")
    with pytest.raises(ValueError, match="a PE is a name"):
        resolve_pe([3])


def test_pairwise_specs_train_a_gps_with_an_attention_bias():
    from graphpe.datasets import DatasetBundle
    from graphpe.train import TrainConfig, run

    graphs = molecule_like_graphs(24, min_nodes=4, max_nodes=10, seed=1)
    for g in graphs:
        g.x = torch.zeros(g.num_nodes, 1, dtype=torch.long)
        g.y = torch.tensor([float(g.num_nodes)])
    bundle = DatasetBundle("toy", graphs[:16], graphs[16:20], graphs[20:],
                           task="graph_regression", metric="mae", out_dim=1, node_vocab=1)
    record = run(bundle, {"rrwp": {"num_steps": 5}, "rwse": {}}, model="gps", channels=8, layers=1,
                 config=TrainConfig(epochs=1, batch_size=8, progress=False))
    assert record["model_config"]["pair"] == {"rrwp": {"num_steps": 5, "hops": None}}
    assert "rrwp" not in record["model_config"]["pe"]
    with pytest.raises(ValueError, match="are attention biases or GRIT's pair features: use "
                                         "model='gps', 'grit' or 'graphormer'"):
        run(bundle, "spd", model="gine", channels=8, layers=1,
            config=TrainConfig(epochs=1, batch_size=8, progress=False))


def test_spectral_specs_parse_lists_and_build_their_encoders():
    """hkdiag / elstatic node encodings and the heat attention bias: '/'-separated lists,
    canonical float times (JSON round trip), and the matching encoders."""
    import json

    from graphpe.encodings import pair_model_config, parse_pe

    assert parse_pe("hkdiag:times=0.5/1/2,elstatic") == [
        {"name": "hkdiag", "times": [0.5, 1, 2]}, {"name": "elstatic"}]
    assert parse_pe("heat:times=[3]")[0]["times"] == [3]
    assert parse_pe("x:path=a/b,y:n=2")[0]["path"] == "a/b"  # not numbers: a string
    # Python's constants as users type them, beside JSON's (a string "False" would be truthy)
    assert parse_pe("spd:local=False:x=True:y=None:z=false") == [
        {"name": "spd", "local": False, "x": True, "y": None, "z": False}]
    specs = resolve_pe("hkdiag:times=0.5/1/2,elstatic:per_component=true,heat:times=1/4")
    assert specs[0].settings == {"times": [0.5, 1.0, 2.0], "normalization": "none",
                                 "keep_trivial": False}
    assert specs[1].settings == {"per_component": True}
    assert resolve_pe(json.loads(json.dumps([s.to_dict() for s in specs]))) == specs
    assert resolve_pe("heat:times=2")[0].settings["times"] == [2.0]
    assert pe_spec("hkdiag").settings["times"] == list(range(1, 17))
    assert pe_model_config(specs) == {"hkdiag": {"times": [0.5, 1.0, 2.0], "normalization":
                                                 "none", "keep_trivial": False},
                                      "elstatic": {"per_component": True}}
    assert pair_model_config(specs) == {"heat": {"times": [1.0, 4.0], "normalization": "none",
                                                 "keep_trivial": False}}

    graphs = molecule_like_graphs(5, min_nodes=4, max_nodes=9, seed=3)
    for g in graphs:
        g.x = torch.zeros(g.num_nodes, 1, dtype=torch.long)
    batch = Batch.from_data_list(graphs)
    for spec in specs:
        batch = spec.transform()(batch)
    assert batch.hkdiag.shape[1] == 3 and batch.elstatic.shape[1] == 10
    assert batch.heat.shape[1] == 2
    model = build_model({"model": "gps", "channels": 8, "layers": 1, "node_vocab": 1,
                         "heads": 2, "pe": pe_model_config(specs),
                         "pair": pair_model_config(specs)})
    assert model.pair_encoder.in_dim == 2 and model.pair_encoder.attr_name == "heat"
    assert model(batch).shape == (5, 1)

    with pytest.raises(ValueError, match="times must not be empty"):
        pe_spec("hkdiag", times=[])
    with pytest.raises(ValueError, match="times must be a sequence of non-negative numbers, "
                                         "got '1/x'"):
        resolve_pe("hkdiag:times=1/x")
    with pytest.raises(ValueError, match="times must be finite and non-negative, got -1"):
        resolve_pe("heat:times=1/-1")


def test_every_transform_and_encoder_of_the_registry_is_exported():
    import graphpe.nn
    import graphpe.transforms

    for name, cls in encodings().items():
        if cls.family != "models":
            assert cls.transform_class is not None, name
        if cls.kind != GATE:
            assert cls.encoder_class is not None, name
        for namespace, made in ((graphpe.transforms, cls.transform_class),
                                (graphpe.nn, cls.encoder_class)):
            if made is not None:
                assert getattr(namespace, made.__name__, None) is made, (name, made)
                assert made.__name__ in namespace.__all__, (name, made)


def test_a_setting_the_transform_shares_is_its_option():
    # the same default and the same check: declared once, on the transform (setting_of)
    for name, cls in encodings().items():
        if cls.transform_class is None:
            continue
        options = {f.name: f for f in dataclasses.fields(cls.transform_class)}
        for f in dataclasses.fields(cls):
            if f.name in options and name != "gpse":  # gpse's dim: the encoder's width
                assert f.default == options[f.name].default, (name, f.name)
                assert f.metadata["check"] is options[f.name].metadata["check"], (name, f.name)


def test_a_spec_builds_its_declared_transform_and_encoder():
    for name, cls in encodings().items():
        if cls.requires:
            continue
        spec = cls()
        transform = spec.transform()
        assert type(transform) is cls.transform_class if transform is not None else (
            cls.transform_class is None), name
        if cls.kind == NODE:
            assert type(spec.encoder(8)) is cls.encoder_class, name
        elif cls.kind == PAIR:
            assert type(spec.pair_encoder(8, 2, False)) is cls.encoder_class, name


def test_setting_of_names_a_missing_option():
    from graphpe.encodings import setting_of
    from graphpe.transforms import RWSE

    with pytest.raises(TypeError, match="^RWSE has no option 'steps'$"):
        setting_of(RWSE, "steps")


def test_lap_hidden_sets_the_deepsets_width():
    """lap's hidden: the width of LapPE's DeepSets (phi and rho's hidden layer), the model's
    channels where unset (as before the setting existed)."""
    from graphpe.encodings import resolve_pe

    wide = resolve_pe("lap:k=4")[0].encoder(64)
    narrow = resolve_pe("lap:k=4:hidden=16")[0].encoder(64)
    assert wide.phi[0].out_features == 64 and narrow.phi[0].out_features == 16
    assert narrow.rho[-1].out_features == 64
    with pytest.raises(ValueError, match="hidden"):
        resolve_pe("lap:k=4:hidden=0")


@pytest.mark.parametrize(("text", "message"), [
    ("lap:k=-3", r"^lap: k must be a positive int, got -3$"),
    ("lap:k=abc", r"^lap: k must be a positive int, got 'abc'$"),
    ("rwse:walk_length=0", r"^rwse: walk_length must be a positive int, got 0$"),
    ("rfp:dim=0", r"^rfp: dim must be an int >= 1, got 0$"),
    ("lapp", r"^unknown PE 'lapp' \(did you mean 'lap' or 'maglap'\?\); choose from \["),
])
def test_a_bad_setting_names_its_encoding(text, message):
    with pytest.raises(ValueError, match=message):
        resolve_pe(text)
