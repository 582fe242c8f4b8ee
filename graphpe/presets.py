"""One definition per positional encoding: from a spec come its transform, the settings of its
encoder in :func:`graphpe.nn.build_model`, and the attributes it writes, so the two can never
disagree (a mismatch used to be a shape error at best).

    from graphpe.presets import resolve_pe
    specs = resolve_pe({"rwse": {"walk_length": 20}, "lap": {}})
    transforms = transforms_of(specs)                      # for precompute / pre_transform
    model = build_model({..., "pe": pe_model_config(specs)})  # the matching encoders

A spec is a name (``lap``, ``signnet``, ``spe``, ``peg``, ``rwse``, ``rfp``, ``lcp``, ``hkdiag``,
``elstatic``, ``pearl`` and ``degree`` (learned in the model: no transform); pairwise ``rrwp``,
``spd``,
``rd``, ``heat``) and settings over the defaults of
:data:`PE_DEFAULTS`; an unknown name or setting is a ValueError naming the
allowed ones. This is the top layer: it imports ``transforms``, and ``nn`` stays importable
without it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from graphpe.transforms import (
    LCP,
    RFP,
    RRWP,
    RWSE,
    SPD,
    ElstaticSE,
    HeatKernel,
    HKdiagSE,
    LaplacianPE,
    PETransform,
    ResistanceDistance,
)

# Spectral PEs write their own attributes, so several of them can be used together.
ATTR_NAMES = {
    "lap": ("lap_pe", "lap_eigvals", "lap_mask"),
    "signnet": ("sn_pe", "sn_eigvals", "sn_mask"),
    "spe": ("spe_pe", "spe_eigvals", "spe_mask"),
    "peg": ("peg_pe", "peg_eigvals", "peg_mask"),
}

PE_DEFAULTS: dict[str, dict[str, Any]] = {
    "lap": {"k": 8, "normalization": "sym", "sign": "canonical"},
    "signnet": {"k": 8, "normalization": "sym"},
    "spe": {"k": 8, "normalization": "sym", "m": 8, "rho_hidden": 32, "rho_layers": 2},
    # PEG / EquivStableLapPE: eigenvector distances gate the messages (no node encoder)
    "peg": {"k": 8, "normalization": "sym"},
    "rwse": {"walk_length": 16},
    # readout: what RFPEncoder's phi sees of each draw (gram: rotation-invariant inner products)
    "rfp": {"dim": 16, "steps": 8, "num_draws": 4, "operator": "gcn", "normalization": "qr",
            "seed": 0, "readout": "gram"},
    "lcp": {"curvature": "orc", "alpha": 0.0},
    "hkdiag": {"times": list(range(1, 17)), "normalization": "none", "keep_trivial": False},
    "elstatic": {"per_component": False},
    # learned inside the model from the graph (no transform); lighter than the paper's ZINC
    # setting (the PEARLEncoder defaults: 120 samples, 8 layers), for CPU runs
    "pearl": {"variant": "random", "num_samples": 32, "layers": 4, "hidden": 32, "pe_dim": 32,
              "powers": None, "mlp_layers": 2, "mlp_hidden": 32, "pooling": "sum",
              "max_nodes": 512, "seed": 0},
    # Graphormer's centrality encoding, counted in the model (no transform)
    "degree": {"max_degree": 64, "directed": False},
    # pairwise: an attention bias of GPS (build_model's "pair" entry), not a node encoding
    "rrwp": {"num_steps": 21, "hops": None},
    "spd": {"max_dist": 8, "local": False, "path_hops": 0},
    "rd": {},
    "heat": {"times": [1, 2, 4, 8, 16], "normalization": "none", "keep_trivial": False},
}
PAIRWISE = ("rrwp", "spd", "rd", "heat")
LEARNED = ("pearl", "degree")  # computed by the model from the graph: no transform


@dataclass(frozen=True)
class PESpec:
    """One encoding: ``name`` and its full settings (defaults filled in)."""

    name: str
    settings: Mapping[str, Any] = field(default_factory=dict)

    def transform(self) -> PETransform | None:
        """The transform that computes this encoding; None for one learned inside the model
        from the graph alone (``pearl``), which needs no precomputed input."""
        s = self.settings
        if self.name in LEARNED:
            return None
        if self.name in ATTR_NAMES:
            return LaplacianPE(s["k"], normalization=s["normalization"],
                               keep_trivial=self.name == "spe",
                               sign=s.get("sign", "canonical"),
                               attr_names=ATTR_NAMES[self.name])
        if self.name == "rwse":
            return RWSE(s["walk_length"])
        if self.name == "rfp":
            return RFP(dim=s["dim"], steps=s["steps"], num_draws=s["num_draws"],
                       operator=s["operator"], normalization=s["normalization"], seed=s["seed"])
        if self.name == "rrwp":
            return RRWP(s["num_steps"], hops=s["hops"])
        if self.name == "spd":
            return SPD(s["max_dist"], local=s["local"], path_hops=s["path_hops"])
        if self.name == "rd":
            return ResistanceDistance()
        if self.name in ("hkdiag", "heat"):
            cls = HKdiagSE if self.name == "hkdiag" else HeatKernel
            return cls(s["times"], normalization=s["normalization"],
                       keep_trivial=s["keep_trivial"])
        if self.name == "elstatic":
            return ElstaticSE(per_component=s["per_component"])
        return LCP(curvature=s["curvature"], alpha=s["alpha"])

    def encoder_config(self) -> dict[str, Any]:
        """The settings of this encoding's entry in ``build_model``'s ``pe``."""
        s = self.settings
        if self.name in ("lap", "signnet", "peg"):
            return {"k": s["k"], "attr_names": ATTR_NAMES[self.name]}
        if self.name == "spe":
            return {"k": s["k"], "m": s["m"], "rho_hidden": s["rho_hidden"],
                    "rho_layers": s["rho_layers"], "attr_names": ATTR_NAMES["spe"]}
        if self.name == "rwse":
            return {"walk_length": s["walk_length"]}
        if self.name == "rfp":
            return {"dim": s["dim"], "steps": s["steps"], "readout": s["readout"]}
        if self.name == "hkdiag":
            return {"num_times": len(s["times"])}
        if self.name == "elstatic":
            return {}
        if self.name in PAIRWISE or self.name in LEARNED:
            # which pairs are listed (hops, local) is the transform's business, not the encoder's
            return {k: v for k, v in s.items() if k not in ("hops", "local")}
        return {"num_stats": 5}

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, **self.settings}


def pe_spec(name: str, **settings: Any) -> PESpec:
    """The spec of encoding ``name`` with ``settings`` over its defaults."""
    if name not in PE_DEFAULTS:
        raise ValueError(f"unknown PE {name!r}; choose from {sorted(PE_DEFAULTS)}")
    unknown = set(settings) - set(PE_DEFAULTS[name])
    if unknown:
        raise ValueError(f"unknown setting(s) {sorted(unknown)} for PE {name!r}; allowed: "
                         f"{sorted(PE_DEFAULTS[name])}")
    spec = PESpec(name, {**PE_DEFAULTS[name], **settings})
    transform = spec.transform()  # the transform validates the values (and names what is allowed)
    if transform is None:  # a learned PE: its encoder validates them
        from graphpe.nn.models import PE_ENCODERS

        PE_ENCODERS[name](dict(spec.settings), 1)
    from graphpe.nn.rfp import READOUTS

    if name == "rfp" and spec.settings["readout"] not in READOUTS:
        raise ValueError(f"readout must be one of {READOUTS}, got {spec.settings['readout']!r}")
    if "times" in spec.settings:  # one form, ready for JSON records: a list of floats
        spec = PESpec(name, {**spec.settings, "times": list(transform.times)})
    return spec


def parse_pe(text: str) -> list[dict]:
    """``'rwse:walk_length=20,lap'`` -> ``[{"name": "rwse", "walk_length": 20}, {"name":
    "lap"}]`` (values read as JSON where they parse, else as strings). A list is written with
    ``/`` between its items (a comma separates the PEs): ``'hkdiag:times=1/2/4.5'`` gives
    ``{"name": "hkdiag", "times": [1, 2, 4.5]}``; a single item needs no ``/``."""
    specs = []
    for item in (p.strip() for p in text.split(",")):
        if not item or item == "none":
            continue
        name, *pairs = item.split(":")
        spec: dict = {"name": name.strip()}
        for pair in pairs:
            key, sep, value = pair.partition("=")
            if not sep:
                raise ValueError(f"--pe: {pair!r} in {item!r} is not key=value")
            spec[key.strip()] = _parse_value(value)
        specs.append(spec)
    return specs


_PYTHON_CONSTANTS = {"True": True, "False": False, "None": None}


def _parse_value(text: str) -> Any:
    """One value of :func:`parse_pe`: JSON where it parses (Python's ``True``, ``False`` and
    ``None`` too, as users write them), a list for ``a/b/c`` whose items all parse as JSON,
    else the string."""
    if text.strip() in _PYTHON_CONSTANTS:
        return _PYTHON_CONSTANTS[text.strip()]
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        pass
    if "/" in text:
        try:
            return [json.loads(item) for item in text.split("/")]
        except json.JSONDecodeError:
            pass
    return text.strip()


def resolve_pe(pe: str | Sequence[Any] | Mapping[str, Any] | None) -> list[PESpec]:
    """Specs from any of: ``"rwse,lap"``, ``"rwse:walk_length=20,lap"`` or ``"none"``;
    ``["rwse", "lap"]``; ``{"rwse": {"walk_length": 20}, "lap": {}}``;
    ``[{"name": "rwse", "walk_length": 20}]``; specs themselves."""
    if pe is None:
        return []
    if isinstance(pe, str):
        pe = parse_pe(pe)
    if isinstance(pe, Mapping):
        pe = [{"name": name, **(settings or {})} for name, settings in pe.items()]
    specs = []
    for item in pe:
        if isinstance(item, PESpec):
            specs.append(item)
        elif isinstance(item, str):
            specs.append(pe_spec(item))
        elif isinstance(item, Mapping) and "name" in item:
            specs.append(pe_spec(item["name"], **{k: v for k, v in item.items() if k != "name"}))
        else:
            raise ValueError(f"a PE is a name, a {{'name': ..., settings}} mapping or a PESpec; "
                             f"got {item!r}")
    names = [s.name for s in specs]
    if len(set(names)) != len(names):
        raise ValueError(f"each PE may appear once, got {names}")
    return specs


def transforms_of(specs: Sequence[PESpec]) -> list[PETransform]:
    """The transforms of ``specs``, skipping the learned encodings that have none."""
    return [t for t in (s.transform() for s in specs) if t is not None]


def pe_model_config(specs: Sequence[PESpec]) -> dict[str, dict[str, Any]]:
    """``build_model``'s ``pe`` entry for the node encodings among ``specs``."""
    return {s.name: s.encoder_config() for s in specs if s.name not in PAIRWISE}


def pair_model_config(specs: Sequence[PESpec]) -> dict[str, dict[str, Any]] | None:
    """``build_model``'s ``pair`` entry (GPS attention bias) for the pairwise encoding among
    ``specs`` (at most one), or None."""
    pair = {s.name: s.encoder_config() for s in specs if s.name in PAIRWISE}
    if len(pair) > 1:
        raise ValueError(f"one pairwise encoding at a time, got {sorted(pair)}")
    return pair or None
