"""The registry of encodings: every encoding is one frozen dataclass, declared once.

A declaration is a subclass of :class:`Encoding` decorated with :func:`register`. Its fields
are the encoding's settings, each with its one default and its check (:func:`setting`); its
class attributes say what it is (``kind``, ``summary``, ``paper``, the kernel ``family``), and
its methods give what the settings drive: :meth:`Encoding.transform` (the PyG transform that
computes the inputs, None for an encoding learned inside the model),
:meth:`Encoding.encoder` (the module that reads them) or, for a pairwise encoding,
:meth:`PairEncoding.pair_encoder`. The command line, the model configs and records,
``graphpe warmup`` and the docs all read this registry; nothing else lists encodings by name.

    from graphpe.encodings import resolve_pe, transforms_of, pe_model_config
    specs = resolve_pe("rwse:walk_length=20,lap")   # [RWSE(walk_length=20), Lap(k=8, ...)]
    transforms = transforms_of(specs)                # for precompute / pre_transform
    config = {"model": "gps", "pe": pe_model_config(specs)}   # for graphpe.build_model
"""

from __future__ import annotations

import dataclasses
import difflib
import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any, ClassVar

from torch import nn

from graphpe.encodings.transform import PETransform, option
from graphpe.ops.checks import checked_fields

NODE = "node"  # a node encoding: an encoder adds it to the node embedding
PAIR = "pair"  # a pairwise encoding: an attention bias, or GRIT's pair features
GATE = "gate"  # gates on the messages of every layer (PEG): no encoder of its own
KINDS = (NODE, PAIR, GATE)
# the kernel families `graphpe warmup` compiles, each in its own process, slowest first;
# "models" holds the models' kernels and the encodings learned inside a model
FAMILIES = ("eigen", "models", "curvature", "walk", "propagate")

_REGISTRY: dict[str, type[Encoding]] = {}


def setting(default: Any, check: Callable[[str, Any], Any] | None = None) -> Any:
    """A settings field of the encoding's own (what its encoder reads): its default and the
    check that validates (and normalizes) a value, called as ``check(field_name, value)`` when
    a spec is made."""
    return option(default, check)


def setting_of(transform_class: type[PETransform], name: str,
               default: Any = dataclasses.MISSING) -> Any:
    """A settings field that is the transform's option ``name``: the same check and, unless
    ``default`` is given, the same default, written once, on the transform.
    :meth:`Encoding.transform` passes it on."""
    for f in dataclasses.fields(transform_class):
        if f.name == name:
            chosen = f.default if default is dataclasses.MISSING else default
            return option(chosen, f.metadata.get("check"))
    raise TypeError(f"{transform_class.__name__} has no option {name!r}")


@dataclasses.dataclass(frozen=True)
class Encoding:
    """Base of every encoding's declaration (see the module docstring).

    Class attributes a declaration sets:

    - ``name``: the name of the command line, configs and records (``"rwse"``);
    - ``kind``: :data:`NODE`, :data:`PAIR` or :data:`GATE`;
    - ``summary``: one line for the command line's help and the docs' table;
    - ``paper``: the reference;
    - ``family``: the kernel family that compiles its kernels (:data:`FAMILIES`);
    - ``warmup_variants``: settings beyond the defaults whose kernels ``graphpe warmup``
      compiles as well;
    - ``warmup_transform_variants``: options of the transform itself (not settings of the
      declaration) beyond its defaults whose kernels ``graphpe warmup`` compiles as well;
    - ``warmup_models``: models trained by ``graphpe warmup`` with this encoding (their
      kernels depend on it);
    - ``demo``: its place in ``graphpe demo``'s comparison (None: not part of it);
    - ``reference_test``: ``path::test`` of the test that checks it against an independent
      reference (the registry's completeness test runs through them);
    - ``requires``: settings without a usable default that its transform cannot do without
      (a pretrained model's checkpoint): the transform refuses to encode while one is None,
      and ``graphpe warmup`` skips the encoding;
    - ``transform_class``: the transform its settings make (None: learned inside the model);
      the settings it shares with it are declared with :func:`setting_of`;
    - ``encoder_class``: the module that reads the transform's output (for a pairwise
      encoding, the one :meth:`PairEncoding.pair_encoder` builds by default).
    """

    name: ClassVar[str]
    kind: ClassVar[str] = NODE
    summary: ClassVar[str]
    paper: ClassVar[str]
    family: ClassVar[str]
    warmup_variants: ClassVar[tuple[dict[str, Any], ...]] = ()
    warmup_transform_variants: ClassVar[tuple[dict[str, Any], ...]] = ()
    warmup_models: ClassVar[tuple[str, ...]] = ()
    demo: ClassVar[int | None] = None
    reference_test: ClassVar[str]
    requires: ClassVar[tuple[str, ...]] = ()
    transform_class: ClassVar[type[PETransform] | None] = None
    encoder_class: ClassVar[type[nn.Module] | None] = None

    def __post_init__(self) -> None:
        for name, value in checked_fields(self).items():
            object.__setattr__(self, name, value)  # (frozen: normalized once, here)
        self.validate()

    def validate(self) -> None:
        """Checks across settings, after each field's own. By default the transform is built
        (it refuses what it cannot compute, naming what it takes); an encoding learned inside
        the model builds its encoder instead."""
        if self.transform() is None and self.kind == NODE:
            self.encoder(1)

    @property
    def settings(self) -> dict[str, Any]:
        """The settings as plain JSON values (tuples as lists), as records store them."""
        return {f.name: _plain(getattr(self, f.name)) for f in dataclasses.fields(self)}

    def to_dict(self) -> dict[str, Any]:
        """``{"name": ..., **settings}``: what :func:`resolve_pe` reads back."""
        return {"name": self.name, **self.settings}

    def transform(self) -> PETransform | None:
        """The transform that computes this encoding's inputs: ``transform_class`` made from
        the settings it shares (its options of the same name); None for one learned inside
        the model from the graph alone."""
        if self.transform_class is None:
            return None
        options = {f.name for f in dataclasses.fields(self.transform_class)}
        return self.transform_class(**{f.name: getattr(self, f.name)
                                       for f in dataclasses.fields(self) if f.name in options})

    def encoder(self, channels: int) -> nn.Module:
        """The module that maps this encoding's inputs to ``channels`` (node encodings)."""
        raise NotImplementedError(f"{self.name} has no node encoder")

    @classmethod
    def upgrade(cls, settings: dict[str, Any]) -> dict[str, Any]:
        """Settings of a model config written by an older graphpe (encoder-side keys such as
        ``num_times``), rewritten as this declaration's fields. Override where they differ."""
        return settings

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.settings.items())
        return f"{type(self).__name__}({args})"


@dataclasses.dataclass(frozen=True, repr=False)
class PairEncoding(Encoding):
    """A pairwise encoding: an attention bias (GPS, Graphormer) or GRIT's pair features."""

    kind: ClassVar[str] = PAIR

    def pair_encoder(self, channels: int, heads: int, features: bool,
                     edge_vocab: Any = None, edge_dim: int | None = None) -> nn.Module:
        """GRIT's pair-feature encoder (``features``, width ``channels``) or the attention
        bias encoder (one value per head)."""
        raise NotImplementedError


def _plain(value: Any) -> Any:
    return [_plain(v) for v in value] if isinstance(value, tuple) else value


def register(cls: type[Encoding]) -> type[Encoding]:
    """Class decorator: make ``cls`` a frozen dataclass and register it under ``cls.name``."""
    cls = dataclasses.dataclass(frozen=True, repr=False)(cls)
    for attr in ("name", "summary", "paper", "family", "reference_test"):
        if not isinstance(getattr(cls, attr, None), str):
            raise TypeError(f"{cls.__name__} must set the class attribute {attr!r}")
    if cls.kind not in KINDS or cls.family not in FAMILIES:
        raise TypeError(f"{cls.__name__}: kind must be one of {KINDS} and family one of "
                        f"{FAMILIES}")
    if cls.name in _REGISTRY:
        raise TypeError(f"two encodings are named {cls.name!r}")
    _REGISTRY[cls.name] = cls
    return cls


def encodings(kind: str | None = None) -> dict[str, type[Encoding]]:
    """The registered encodings by name (of one ``kind`` if given), sorted by name."""
    return {name: cls for name, cls in sorted(_REGISTRY.items())
            if kind is None or cls.kind == kind}


def encoding(name: str) -> type[Encoding]:
    """The declaration registered under ``name``."""
    if name not in _REGISTRY:
        close = difflib.get_close_matches(str(name), sorted(_REGISTRY), n=3)
        hint = f" (did you mean {' or '.join(map(repr, close))}?)" if close else ""
        raise ValueError(f"unknown PE {name!r}{hint}; choose from {sorted(_REGISTRY)}")
    return _REGISTRY[name]


def pe_spec(name: str, **settings: Any) -> Encoding:
    """The spec of encoding ``name`` with ``settings`` over its defaults; an unknown setting
    is a ValueError naming the allowed ones, a bad value one that starts with the encoding's
    name (``lap: k must be a positive int, got -3``)."""
    cls = encoding(name)
    allowed = [f.name for f in dataclasses.fields(cls)]
    unknown = set(settings) - set(allowed)
    if unknown:
        raise ValueError(f"unknown setting(s) {sorted(unknown)} for PE {name!r}; allowed: "
                         f"{sorted(allowed)}")
    try:
        return cls(**settings)
    except ValueError as err:
        raise ValueError(f"{name}: {err}") from None


def from_model_config(name: str, settings: Mapping[str, Any] | None) -> Encoding:
    """The spec of an entry of a model config's ``pe`` or ``pair``, including those written
    by older versions (:meth:`Encoding.upgrade`)."""
    return pe_spec(name, **encoding(name).upgrade(dict(settings or {})))


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


def resolve_pe(pe: str | Sequence[Any] | Mapping[str, Any] | None) -> list[Encoding]:
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
        if isinstance(item, Encoding):
            specs.append(item)
        elif isinstance(item, str):
            specs.append(pe_spec(item))
        elif isinstance(item, Mapping) and "name" in item:
            specs.append(pe_spec(item["name"], **{k: v for k, v in item.items() if k != "name"}))
        else:
            raise ValueError(f"a PE is a name, a {{'name': ..., settings}} mapping or a spec; "
                             f"got {item!r}")
    names = [s.name for s in specs]
    if len(set(names)) != len(names):
        raise ValueError(f"each PE may appear once, got {names}")
    return specs


def transforms_of(specs: Sequence[Encoding]) -> list[PETransform]:
    """The transforms of ``specs``, skipping the encodings learned inside the model."""
    return [t for t in (s.transform() for s in specs) if t is not None]


def pe_model_config(specs: Sequence[Encoding]) -> dict[str, dict[str, Any]]:
    """``build_model``'s ``pe`` entry: the settings of the node and gate encodings."""
    return {s.name: s.settings for s in specs if s.kind != PAIR}


def pair_model_config(specs: Sequence[Encoding]) -> dict[str, dict[str, Any]] | None:
    """``build_model``'s ``pair`` entry (an attention bias, or GRIT's pair features): the
    settings of the pairwise encoding among ``specs`` (at most one), or None."""
    pair = {s.name: s.settings for s in specs if s.kind == PAIR}
    if len(pair) > 1:
        raise ValueError(f"one pairwise encoding at a time, got {sorted(pair)}")
    return pair or None


def _default_text(value: Any) -> str:
    if isinstance(value, tuple):
        return "/".join(f"{v:g}" if isinstance(v, float) else str(v) for v in value)
    return json.dumps(value) if value is None or isinstance(value, bool) else str(value)


def settings_text(cls: type[Encoding]) -> str:
    """``name=default`` for every setting of ``cls``, as the command line spells them."""
    return ", ".join(f"{f.name}={_default_text(f.default)}" for f in dataclasses.fields(cls))


def markdown_table() -> str:
    """The table of every registered encoding (name, kind, settings with their defaults, what
    it is, paper) that ``docs/encodings.md`` carries; its test checks that it is current."""
    rows = ["| name | kind | settings (defaults) | what it is | paper |",
            "| --- | --- | --- | --- | --- |"]
    for name, cls in encodings().items():
        learned = " (learned in the model)" if cls.family == "models" else ""
        rows.append(f"| `{name}` | {cls.kind}{learned} | {settings_text(cls) or '-'} | "
                    f"{cls.summary} | {cls.paper} |")
    return "\n".join(rows)


# The probe graph of attributes_table: 7 nodes, a ring with two chords (18 directed edges),
# sizes no default setting shares, so a dimension equal to one of them is that size.
PROBE_NODES, PROBE_RING, PROBE_CHORDS = 7, 7, ((0, 3), (2, 5))


def probe_graph() -> Any:
    """The small undirected graph :func:`attributes_table` encodes."""
    import torch
    from torch_geometric.data import Data

    ring = [(i, (i + 1) % PROBE_RING) for i in range(PROBE_RING)]
    pairs = torch.tensor(ring + list(PROBE_CHORDS)).t()
    return Data(edge_index=torch.cat([pairs, pairs.flip(0)], 1), num_nodes=PROBE_NODES)


def _shape_text(shape: Sequence[int], num_nodes: int, num_edges: int) -> str:
    names = {num_nodes: "N", num_edges: "E", num_nodes * num_nodes: "P"}
    return "[" + ", ".join(names.get(d, str(d)) for d in shape) + "]"


def attributes_table() -> str:
    """The table of what each encoding's transform writes at its defaults: every attribute
    with its shape (``N`` the nodes, ``E`` the directed edges, ``P`` the node pairs within
    each graph, ``n^2`` summed over the graphs; numbers come from the settings) and dtype,
    read off the transform's output on :func:`probe_graph`. Encodings learned in the model,
    and GPSE (a checkpoint's output), are listed as such."""
    rows = ["| name | attribute | shape | dtype |", "| --- | --- | --- | --- |"]
    for name, cls in encodings().items():
        if cls.transform_class is None:
            rows.append(f"| `{name}` | (none: learned in the model) | | |")
            continue
        if cls.requires:
            rows.append(f"| `{name}` | (needs {', '.join(cls.requires)}) | | |")
            continue
        graph = probe_graph()
        before = set(graph.keys())
        out = cls().transform()(graph)
        num_edges = graph.edge_index.size(1)
        for key in sorted(set(out.keys()) - before):
            value = out[key]
            rows.append(f"| `{name}` | `{key}` | "
                        f"{_shape_text(value.shape, PROBE_NODES, num_edges)} | "
                        f"{str(value.dtype).removeprefix('torch.')} |")
    return "\n".join(rows)


DOCS_TABLE_START = "<!-- encodings table: generated -->"
DOCS_TABLE_END = "<!-- end of the generated table -->"
ATTRIBUTES_START = "<!-- attributes table: generated -->"
ATTRIBUTES_END = "<!-- end of the generated attributes -->"


def write_docs_table(path: str) -> None:
    """Replace the generated tables of the markdown file at ``path`` (between
    :data:`DOCS_TABLE_START` and :data:`DOCS_TABLE_END`, and where the file has them,
    :data:`ATTRIBUTES_START` and :data:`ATTRIBUTES_END`) by :func:`markdown_table` and
    :func:`attributes_table`: ``graphpe encodings --write-docs docs/encodings.md``."""
    from pathlib import Path

    text = Path(path).read_text()
    for first, last, table in ((DOCS_TABLE_START, DOCS_TABLE_END, markdown_table),
                               (ATTRIBUTES_START, ATTRIBUTES_END, attributes_table)):
        if first not in text:
            continue
        start, end = text.index(first), text.index(last)
        text = f"{text[:start]}{first}\n{table()}\n{text[end:]}"
    Path(path).write_text(text)


def cli_help() -> str:
    """The command line's ``--pe`` help, from the declarations."""
    groups = {NODE: "node encodings", GATE: "message gates (--model gine, gps or gatedgcn)",
              PAIR: "pairwise, as attention biases (--model gps, graphormer) or pair features "
                    "(--model grit)"}
    parts = [f"{label}: " + ", ".join(encodings(kind)) for kind, label in groups.items()]
    return ("comma-separated encodings, each a name with optional settings, e.g. "
            "'rwse:walk_length=20,lap:k=4', lists with '/': 'hkdiag:times=1/2/4'; 'none' for "
            "no PE. " + "; ".join(parts) + ". `graphpe encodings` lists each with its settings")

