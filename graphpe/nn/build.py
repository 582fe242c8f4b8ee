"""Models from a small config, with their encoders from the encodings registry.

    build_model({"model": "gps", "channels": 64, "layers": 4, "out_dim": 1,
                 "task": "graph_regression", "node_vocab": 28, "edge_vocab": 4,
                 "pe": {"rwse": {"walk_length": 16}, "lap": {}}, "pair": {"rrwp": {}}})

``pe`` maps node encodings (and ``peg``'s message gates) to their settings, ``pair`` names one
pairwise encoding: both are read through :mod:`graphpe.encodings`, so every name has one set
of defaults and an unknown name or setting is a ``ValueError`` listing the allowed ones.
:func:`graphpe.encodings.pe_model_config` writes these entries from the same specs that give
the transforms, so data and model always agree.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from torch import nn

from graphpe.encodings import GATE, PAIR, encodings, from_model_config
from graphpe.nn.models import GCN, GIN, GINE, SAGE, GatedGCN, PEGraphModel, ResidualGNN
from graphpe.nn.scalable import Polynormer, SGFormer
from graphpe.nn.seal import SEAL
from graphpe.nn.transformers import GPS, GRIT, Graphormer
from graphpe.ops.files import load_torch_file


@dataclass(frozen=True)
class ModelKind:
    """One ``model`` name of :func:`build_model` (and ``graphpe train --model``), declared
    once: what builds it, the model flags of ``graphpe train`` it takes beyond the shared
    ones (``channels``, ``layers``, ``dropout``, the readout and the encoders' widths),
    whether it reads a pairwise encoding (an attention bias or pair features), whether
    PEG can gate its messages, and whether it is a link model alone (it scores node pairs
    through their enclosing subgraphs: ``graphpe train --task link`` trains it,
    :func:`build_model` does not build it)."""

    build: Callable[..., nn.Module]
    takes: tuple[str, ...] = ()
    pairs: bool = False
    gates: bool = False
    link_only: bool = False


ATTENTION = ("heads", "attn_dropout")
MODELS: dict[str, ModelKind] = {
    "gine": ModelKind(GINE, gates=True),
    "gps": ModelKind(GPS, (*ATTENTION, "mpnn", "attention", "graph_token"), pairs=True,
                     gates=True),
    "grit": ModelKind(GRIT, (*ATTENTION, "mpnn"), pairs=True),
    "gcn": ModelKind(GCN, ("residual", "norm")),
    "sage": ModelKind(SAGE, ("residual", "norm")),
    "gin": ModelKind(GIN),
    "gatedgcn": ModelKind(GatedGCN, gates=True),
    "graphormer": ModelKind(Graphormer, (*ATTENTION, "graph_token"), pairs=True),
    "sgformer": ModelKind(SGFormer, ("heads",)),
    "polynormer": ModelKind(Polynormer, ("heads", "local_epochs", "global_layers",
                                         "in_dropout")),
    # Platonov et al.'s residual GNNs (the heterophilous benchmarks' baselines)
    **{f"res-{module}": ModelKind(functools.partial(ResidualGNN, module=module),
                                  ("heads",) if module.startswith(("gat", "gt")) else ())
       for module in ("gcn", "sage", "gat", "gat-sep", "gt", "gt-sep")},
    "res-mlp": ModelKind(functools.partial(ResidualGNN, module="ffn")),
    "seal": ModelKind(SEAL, ("hops", "labels"), link_only=True),
}


def model_names(which: str) -> str:
    """The models whose ``which`` (``pairs``, ``gates``) holds, as a message names them:
    ``'gps', 'grit' or 'graphormer'``."""
    names = [repr(n) for n, kind in MODELS.items() if getattr(kind, which)]
    return " or ".join([", ".join(names[:-1]), names[-1]]) if len(names) > 1 else names[0]


def build_model(config: dict[str, Any]) -> PEGraphModel:
    """Build a model from a small config (see the module docstring).

    ``model`` is ``gine`` (:class:`~graphpe.nn.GINE`, the default), ``gps``, ``grit``,
    ``gcn``, ``sage`` (GraphSAGE), ``gin``, ``gatedgcn``, ``graphormer``, ``res-gcn``,
    ``res-sage``, ``res-gat``, ``res-gat-sep``, ``res-gt``, ``res-gt-sep``, ``res-mlp``
    (:class:`~graphpe.nn.models.ResidualGNN`, Platonov et al.'s residual models with
    LayerNorm), or for node
    classification on large graphs ``sgformer`` or ``polynormer`` (:mod:`graphpe.nn.scalable`;
    ``layers`` counts their message-passing layers); ``channels`` (64), ``layers`` (4) and
    ``out_dim`` (1) are its first arguments; ``pe`` and ``pair`` give the encoders, each node
    encoder ``pe_channels`` wide (default ``channels``; narrower with ``pe_combine='concat'``
    or ``'split'``); every other key is passed to the model class. A pairwise encoding is an
    attention bias for ``gps`` and ``graphormer`` and the pair features of ``grit`` (or of
    ``gps`` with ``attention='grit'``).
    """
    config = dict(config)
    kind = config.pop("model", "gine")
    if kind not in MODELS:
        raise ValueError(f"model must be one of {tuple(MODELS)}, got {kind!r}")
    if MODELS[kind].link_only:
        raise ValueError(f"{kind} scores node pairs through their enclosing subgraphs: train it "
                         f"with graphpe train --task link --model {kind} "
                         "(graphpe.link.fit_seal)")
    channels = config.pop("channels", 64)
    layers = config.pop("layers", 4)
    out_dim = config.pop("out_dim", 1)
    pe_channels = config.pop("pe_channels", None)
    specs = [from_model_config(name, settings)
             for name, settings in (config.pop("pe", None) or {}).items()]
    if any(spec.kind == PAIR for spec in specs):
        raise ValueError(f"{[s.name for s in specs if s.kind == PAIR]} are pairwise "
                         "encodings: give them as 'pair', not 'pe'")
    pair = config.pop("pair", None)
    if pair:
        if not MODELS[kind].pairs or len(pair) != 1:
            raise ValueError(f"pair (an attention bias, or GRIT's pair features) takes one "
                             f"pairwise encoding and model={model_names('pairs')}")
        (name, settings), = pair.items()
        if name not in encodings(PAIR):
            raise ValueError(f"unknown pairwise encoding {name!r}; choose from "
                             f"{sorted(encodings(PAIR))}")
        spec = from_model_config(name, settings)
        heads = config.get("heads", getattr(MODELS[kind].build, "default_heads", 4))
        features = kind == "grit" or config.get("attention") == "grit"
        config["pair_encoder"] = spec.pair_encoder(channels, heads, features,
                                                   edge_vocab=config.get("edge_vocab"),
                                                   edge_dim=config.get("edge_dim"))
    gates = [spec for spec in specs if spec.kind == GATE]
    if gates:
        if not MODELS[kind].gates:
            raise ValueError(f"peg gates the messages of model={model_names('gates')}")
        config["peg_attr"] = gates[0].gate_attr
    encoders = [spec.encoder(channels if pe_channels is None else pe_channels)
                for spec in specs if spec.kind not in (GATE, PAIR)]
    return MODELS[kind].build(channels, layers, out_dim, pe_encoders=encoders, **config)


def load_model(path: str | Path, map_location: str | torch.device = "cpu") -> PEGraphModel:
    """The model of a checkpoint written by :func:`graphpe.train.fit` (``--checkpoint``): built
    from the config stored beside its weights, weights loaded, in eval mode."""
    ckpt = load_torch_file(path, "a graphpe checkpoint (train --checkpoint)",
                           map_location=map_location)
    if isinstance(ckpt, dict) and str(ckpt.get("format", "")).startswith(
            "graphpe-training-state"):
        raise ValueError(f"{path} is a training state, for resuming a run (--resume); the "
                         "model's checkpoint is the file beside it without '.state'")
    if not isinstance(ckpt, dict) or "state_dict" not in ckpt:
        raise ValueError(f"{path} holds a bare state_dict, not a graphpe checkpoint with its "
                         "config: build the model with build_model(config) and call "
                         "load_state_dict")
    if ckpt.get("model_config") is None:
        raise ValueError(f"{path} has no model config (the model was not built by "
                         "build_model): rebuild it yourself and load ckpt['state_dict']")
    model = build_model(ckpt["model_config"])
    model.load_state_dict(ckpt["state_dict"])
    return model.eval()


def normalize_model_config(config: dict[str, Any]) -> dict[str, Any]:
    """``config`` with its ``pe`` and ``pair`` entries as today's full settings (those of an
    older version upgraded, defaults filled in): two configs that build the same model
    compare equal."""
    config = dict(config)
    for key in ("pe", "pair"):
        if config.get(key):
            config[key] = {name: from_model_config(name, settings).settings
                           for name, settings in config[key].items()}
    return config
