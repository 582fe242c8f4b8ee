"""Fixed-shape batches, so ``torch.compile`` and CUDA graphs can take a whole GPS step.

A PyG ``Batch`` has a different node and edge count every step, and the eager GPS forward reads
the graph sizes on the host (the attention layout). Neither can be captured once and replayed.
:func:`static_batch` lays a batch out in fixed shapes instead: graph ``g``'s nodes are rows
``g * S`` to ``g * S + n_g - 1`` of ``G * S + 1`` rows (``G`` graph slots of ``S`` nodes, and
one sink row at the end that padding edges point to), its edges padded to a fixed count, with
masks for the real nodes and graphs. :class:`StaticGPS` runs a :class:`~graphpe.nn.GPS` on such
a batch with the same parameters and the same maths: the attention is one
``scaled_dot_product_attention`` over ``[G, heads, S, S]`` with the padding keys masked, the
norms take their statistics over the real nodes only, and pooling sums the real rows. Its
forward has no host synchronization and no data-dependent shape, so
``torch.compile(StaticGPS(model), fullgraph=True, dynamic=False)`` is one graph per shape key
``(G, S, E)``, and with ``mode="reduce-overhead"`` on CUDA one CUDA graph each.

Every graph is padded to the same ``S``: on a GPU that costs nothing (the step is bound by
kernel launches, not arithmetic), on a CPU it does (the padded rows go through every matrix
product): there the eager bucketed path (:class:`~graphpe.layers.attention.GraphLayout`) is the
fast one. Where graph sizes vary widely (a few graphs of hundreds of nodes among molecules of
twenty), one shape for the run (:func:`static_shapes`) pads everything to the outliers; leave
``graph_size`` and ``num_edges`` to :func:`static_batch`'s per-batch rounding instead: a few
shapes, one compiled graph each (raise ``torch._dynamo.config.recompile_limit`` above their
number).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field, replace

import torch
import torch.nn.functional as F
from torch import Tensor, nn
from torch_geometric.nn.norm import BatchNorm as PygBatchNorm

from graphpe.encodings.laplacian import LapPEEncoder
from graphpe.layers.common import form_of, read_attribute
from graphpe.layers.encoders import LinearSEEncoder, PairBiasEncoder, pair_values, parameter_dtype
from graphpe.layers.layer_maths import gps_layer
from graphpe.ops.checks import check_positive_int

logger = logging.getLogger(__name__)

# Finite, not -inf: a graph slot with no real node (a short last batch) then gets a uniform,
# finite softmax instead of NaN; next to any real key, exp(-1e9 - max) is exactly 0 in float32.
MASKED_LOGIT = -1e9
NODE_ATTRS_SKIPPED = ("x", "batch", "ptr", "edge_index", "edge_attr", "y")


def _round_up(value: int, multiple: int) -> int:
    return -(-value // multiple) * multiple


@dataclass
class StaticBatch:
    """A batch of graphs in fixed shapes (see the module docstring). ``num_graphs`` (``G``)
    slots of ``graph_size`` (``S``) rows each, then a sink row: ``num_rows = G * S + 1``.

    Attributes:
        x: node features ``[num_rows, ...]`` (0 on padding rows).
        edge_index: ``[2, num_edges]`` in padded row ids; padding edges run sink -> sink.
        edge_attr: ``[num_edges, ...]`` or None.
        node_mask: ``[num_rows]`` float, 1 on real nodes.
        edge_mask: ``[num_edges]`` float, 1 on real edges (the first ones).
        graph_mask: ``[G]`` float, 1 on the slots that hold a graph of the batch.
        graph_count: real graphs (an int: known on the host when the batch is built).
        y: graph targets ``[G, ...]`` (0 on empty slots) or None.
        node_attrs: the batch's other node attributes (PEs), padded as ``x``.
        pair_attrs: pairwise encodings (attributes ``<name>`` with ``<name>_index``, as
            ``RRWP``, ``SPD``, ... write them), dense: ``name -> (values [G, S, S, ...],
            listed [G, S, S] bool)``, entry ``[g, a, b]`` for the pair of slot ``g``'s nodes
            ``a`` and ``b``; ``SPD(path_hops=...)``'s path edges as ``<name>_path`` ``[G, S,
            S, path_hops]``, ids of this batch's edges (-1: none).
    """

    num_graphs: int
    graph_size: int
    x: Tensor
    edge_index: Tensor
    edge_attr: Tensor | None
    node_mask: Tensor
    graph_mask: Tensor
    graph_count: int
    edge_mask: Tensor | None = None
    y: Tensor | None = None
    node_attrs: dict[str, Tensor] = field(default_factory=dict)
    pair_attrs: dict[str, tuple[Tensor, Tensor]] = field(default_factory=dict)

    @property
    def num_rows(self) -> int:
        return self.num_graphs * self.graph_size + 1

    @property
    def shape_key(self) -> tuple[int, int, int]:
        """``(G, S, E)``: batches with equal keys share one compiled graph."""
        return self.num_graphs, self.graph_size, self.edge_index.size(1)

    def apply(self, fn) -> StaticBatch:
        """A copy with ``fn`` applied to every tensor."""
        def each(t):
            return None if t is None else fn(t)

        return replace(self, x=each(self.x), edge_index=each(self.edge_index),
                       edge_attr=each(self.edge_attr), node_mask=each(self.node_mask),
                       edge_mask=each(self.edge_mask),
                       graph_mask=each(self.graph_mask), y=each(self.y),
                       node_attrs={k: each(v) for k, v in self.node_attrs.items()},
                       pair_attrs={k: (each(v), each(m)) for k, (v, m) in
                                   self.pair_attrs.items()})

    def to(self, device: torch.device | str, non_blocking: bool = False) -> StaticBatch:
        return self.apply(lambda t: t.to(device, non_blocking=non_blocking))

    def pin_memory(self) -> StaticBatch:
        """Page-locked copies (``DataLoader(pin_memory=True)`` calls this), so ``to(cuda,
        non_blocking=True)`` overlaps the copy with the GPU's work."""
        return self.apply(lambda t: t.pin_memory())


def static_batch(
    batch,
    num_graphs: int | None = None,
    graph_size: int | None = None,
    num_edges: int | None = None,
    size_multiple: int = 8,
    edge_multiple: int = 256,
) -> StaticBatch:
    """Lay out a PyG ``Batch`` in fixed shapes.

    Args:
        batch: a ``Batch`` (with ``ptr``) or a single ``Data``.
        num_graphs: graph slots ``G`` (default: the batch's graph count; give the loader's
            ``batch_size`` so a short last batch keeps the shape).
        graph_size: nodes per slot ``S`` (default: the largest graph rounded up to
            ``size_multiple``; give the dataset's largest graph for one shape throughout).
        num_edges: padded edge count (default: the batch's rounded up to ``edge_multiple``).
        size_multiple, edge_multiple: the rounding of the defaults, which bounds how many
            distinct shapes (compiled graphs) a dataset produces.
    """
    ptr = batch.get("ptr")
    num_nodes = int(batch.num_nodes)
    if ptr is None:
        ptr = torch.tensor([0, num_nodes])
    ptr = ptr.cpu()
    sizes = ptr[1:] - ptr[:-1]
    count = sizes.numel()
    largest = int(sizes.max()) if count else 0
    edge_index = batch.edge_index
    edges = edge_index.size(1)
    G = count if num_graphs is None else num_graphs
    S = _round_up(max(largest, 1), size_multiple) if graph_size is None else graph_size
    E = _round_up(max(edges, 1), edge_multiple) if num_edges is None else num_edges
    G, S, E = _checked_shape((G, S, E), (count, largest, edges))
    rows, sink = G * S + 1, G * S
    device = edge_index.device
    graph = torch.repeat_interleave(torch.arange(count), sizes)
    slot = (graph * S + torch.arange(num_nodes) - ptr[:-1][graph]).to(device)

    def pad_nodes(t: Tensor) -> Tensor:
        out = t.new_zeros((rows,) + tuple(t.shape[1:]))
        out[slot] = t
        return out

    padded_edges = edge_index.new_full((2, E), sink)
    padded_edges[:, :edges] = slot[edge_index]
    edge_attr = batch.get("edge_attr")
    if edge_attr is not None:
        edge_attr = torch.cat([edge_attr, edge_attr.new_zeros((E - edges,)
                                                              + tuple(edge_attr.shape[1:]))])
    node_mask = torch.zeros(rows, device=device)
    node_mask[slot] = 1.0
    graph_mask = torch.zeros(G, device=device)
    graph_mask[:count] = 1.0
    y = batch.get("y")
    if y is not None:
        if y.size(0) != count:
            raise ValueError(f"static batches carry graph targets: y must have one row per "
                             f"graph ({count}), got {tuple(y.shape)}")
        y = torch.cat([y, y.new_zeros((G - count,) + tuple(y.shape[1:]))])
    attrs = {key: pad_nodes(batch[key]) for key in batch.keys()
             if key not in NODE_ATTRS_SKIPPED and isinstance(batch[key], Tensor)
             and batch[key].dim() >= 1 and batch[key].size(0) == num_nodes
             and batch.is_node_attr(key)}
    first_edge = None
    if edges:  # each graph's first edge in the batch (SPD's path edges are graph-local)
        counts = torch.bincount(graph.to(device)[edge_index[0]], minlength=count)
        first_edge = counts.cumsum(0) - counts
    pairs = _dense_pairs(batch, slot, G, S, first_edge)
    x = batch.get("x")
    edge_mask = torch.zeros(E, device=device)
    edge_mask[:edges] = 1.0
    return StaticBatch(G, S, pad_nodes(x) if x is not None else None, padded_edges, edge_attr,
                       node_mask, graph_mask, count, edge_mask, y, attrs, pairs)


def _checked_shape(shape: tuple[int, int, int],
                   needed: tuple[int, int, int]) -> tuple[int, int, int]:
    """``(G, S, E)``, positive ints that hold the batch's ``(graphs, largest graph, edges)``
    (ValueError otherwise)."""
    G, S, E = (check_positive_int(name, value) for name, value in zip(
        ("num_graphs", "graph_size", "num_edges"), shape, strict=True))
    count, largest, edges = needed
    if count > G:
        raise ValueError(f"the batch has {count} graphs, more than num_graphs={G}")
    if largest > S:
        raise ValueError(f"the batch's largest graph has {largest} nodes, more than "
                         f"graph_size={S}")
    if edges > E:
        raise ValueError(f"the batch has {edges} edges, more than num_edges={E}")
    return G, S, E


def _dense_pairs(batch, slot: Tensor, G: int, S: int,
                 first_edge: Tensor | None) -> dict[str, tuple[Tensor, Tensor]]:
    """:attr:`StaticBatch.pair_attrs` of ``batch``: each pairwise encoding ``<name>`` (with
    ``<name>_index``) dense, ``[G, S, S, ...]`` with its ``listed`` mask, and SPD's
    ``<name>_path`` with edge ids of the padded batch (``first_edge``: where each graph's edges
    start)."""
    pairs = {}
    for key in batch.keys():
        name = key[: -len("_index")]
        if not key.endswith("_index") or key == "edge_index" or batch.get(name) is None:
            continue
        index, values = batch[key], batch[name]
        if index.dim() != 2 or index.size(0) != 2 or values.size(0) != index.size(1):
            continue
        si, sj = slot[index[0]], slot[index[1]]
        if bool((si // S != sj // S).any()):
            raise ValueError(f"{key} holds a pair of nodes from different graphs")
        flat = si * S + sj % S  # = g * S * S + a * S + b
        dense = values.new_zeros((G * S * S,) + tuple(values.shape[1:]))
        dense[flat] = values
        listed = torch.zeros(G * S * S, dtype=torch.bool, device=slot.device)
        listed[flat] = True
        pairs[name] = (dense.view((G, S, S) + tuple(values.shape[1:])), listed.view(G, S, S))
        path = batch.get(f"{name}_path")
        if path is not None and path.dim() == 2 and path.size(0) == index.size(1):
            # SPD(path_hops=...)'s graph-local edge ids -> the padded batch's (edges keep
            # their order, padding edges go last); -1 (no edge) stays -1
            if first_edge is not None:
                path = torch.where(path >= 0, path + first_edge[si // S].unsqueeze(1), path)
            dense_path = path.new_full((G * S * S, path.size(1)), -1)
            dense_path[flat] = path
            pairs[f"{name}_path"] = (dense_path.view(G, S, S, -1), listed.view(G, S, S))
    return pairs


class StaticCollate:
    """``collate_fn`` for ``torch.utils.data.DataLoader``: a list of ``Data`` -> a
    :class:`StaticBatch` of fixed shape, so the padding runs in the loader's worker processes
    (``num_workers``), off the training loop::

        shapes = static_shapes(train_graphs, 32)
        loader = torch.utils.data.DataLoader(train_graphs, batch_size=32, shuffle=True,
                                             collate_fn=StaticCollate(**shapes),
                                             num_workers=4, pin_memory=True)

    Args:
        num_graphs, graph_size, num_edges: the shape (:func:`static_shapes` gives one that
            holds every batch); each batch is :func:`static_batch` of the collated graphs.
    """

    def __init__(self, num_graphs: int, graph_size: int, num_edges: int) -> None:
        self.shapes = {"num_graphs": num_graphs, "graph_size": graph_size,
                       "num_edges": num_edges}

    def __call__(self, graphs: list) -> StaticBatch:
        from torch_geometric.data import Batch

        return static_batch(Batch.from_data_list(graphs), **self.shapes)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({', '.join(f'{k}={v}' for k, v in self.shapes.items())})"


def static_shapes(graphs, batch_size: int, size_multiple: int = 8,
                  edge_multiple: int = 256) -> dict[str, int]:
    """One static shape that holds every batch of ``batch_size`` graphs drawn from ``graphs``
    (an iterable of ``Data``): ``batch_size`` slots of the largest graph's size, and the edges
    of the ``batch_size`` graphs with the most edges, rounded up. The keyword arguments of
    :func:`static_batch` (one compiled graph for the whole run)."""
    nodes, edges = [], []
    for g in graphs:  # once per run, two integers per graph (not on the training step's path)
        nodes.append(int(g.num_nodes))
        edges.append(int(g.edge_index.size(1)))
    if not nodes:
        raise ValueError("static_shapes needs at least one graph")
    top = sum(sorted(edges, reverse=True)[:batch_size])
    return {"num_graphs": batch_size,
            "graph_size": _round_up(max(max(nodes), 1), size_multiple),
            "num_edges": _round_up(max(top, 1), edge_multiple)}


def masked_batch_norm(norm: nn.Module | None, x: Tensor, mask: Tensor, count: Tensor) -> Tensor:
    """``norm`` (``torch.nn.BatchNorm1d`` or PyG's ``BatchNorm``; None: ``x``) applied to
    ``x [rows, C]`` with its training statistics over the rows ``mask`` marks (``count`` of
    them, a tensor: no host read). The same output and running-statistics update as the module
    on those rows alone; in eval mode the running statistics, as the module."""
    if norm is None or isinstance(norm, nn.Identity):
        return x
    bn = norm.module if isinstance(norm, PygBatchNorm) else norm
    if not isinstance(bn, nn.BatchNorm1d):
        raise ValueError(f"static batches take batch norms (or none), got {type(norm).__name__}")
    use_batch = bn.training or bn.running_mean is None
    if not use_batch:
        return F.batch_norm(x, bn.running_mean, bn.running_var, bn.weight, bn.bias, False, 0.0,
                            bn.eps)
    m = mask.unsqueeze(-1).to(x.dtype)
    mean = (x * m).sum(0) / count
    centered = x - mean
    var = (centered.square() * m).sum(0) / count
    if bn.training and bn.track_running_stats:
        with torch.no_grad():
            bn.num_batches_tracked.add_(1)
            momentum = (1.0 / bn.num_batches_tracked.to(x.dtype) if bn.momentum is None
                        else bn.momentum)
            unbiased = var * count / (count - 1).clamp(min=1)
            bn.running_mean.mul_(1 - momentum).add_(momentum * mean)
            bn.running_var.mul_(1 - momentum).add_(momentum * unbiased)
    out = centered * torch.rsqrt(var + bn.eps)
    if bn.affine:
        out = out * bn.weight + bn.bias
    return out


class StaticGPS(nn.Module):
    """A :class:`~graphpe.nn.GPS` run on a :class:`StaticBatch`: the same parameters (this
    wraps the model, it copies nothing) and the same maths as ``model(batch)``, in shapes that
    depend only on ``StaticBatch.shape_key``. Returns the graph predictions ``[G, out_dim]``
    (rows of empty slots are not meaningful: weight the loss by ``graph_mask``).

    Supported: graph-level tasks; ``mpnn`` ``gine``/``gin``/``gatedgcn``/None;
    ``attention`` ``multihead``/None, with a :class:`~graphpe.nn.PairBiasEncoder` (RRWP, SPD,
    resistance or heat-kernel biases, dense ``[G, heads, S, S]`` here); ``norm`` ``batch_norm``
    or None; PE encoders: every :class:`~graphpe.nn.LinearSEEncoder` (RWSE, LCP, the heat
    kernel diagonals, electrostatics, ...), :class:`~graphpe.nn.LapPEEncoder` and
    :class:`~graphpe.nn.RFPEncoder` (trajectory readout); ``reinject_pe``. Anything else
    raises at construction, naming what is not supported.
    """

    def __init__(self, model: nn.Module) -> None:
        super().__init__()
        reason = self.unsupported(model)
        if reason is not None:
            logger.debug("StaticGPS declines %s: %s", type(model).__name__, reason)
            raise ValueError(reason)
        self.model = model

    @staticmethod
    def unsupported(model: nn.Module) -> str | None:
        """Why this path does not run ``model`` (the message its construction raises), or
        None where it does: the configurations it declares to cover, which the parity tests
        enumerate."""
        if form_of(model) != "gps":
            return f"StaticGPS runs a GPS model, got {type(model).__name__}"
        if model.task == "node_classification":
            return "StaticGPS runs graph-level tasks (graph_regression, graph_classification)"
        for layer in model.layers:  # the modules it computes in fixed shapes
            if layer.attn is not None and form_of(layer.attn) != "multihead":
                return (f"StaticGPS supports attention 'multihead' or None: a "
                        f"MultiheadGraphAttention, got {type(layer.attn).__name__}")
            if layer.conv is not None and form_of(layer.conv) not in ("gin", "gatedgcn"):
                return (f"StaticGPS supports mpnn 'gine', 'gin', 'gatedgcn' or None, got "
                        f"{type(layer.conv).__name__}")
            if form_of(layer.conv) == "gatedgcn" and not layer.conv.residual:
                return "StaticGPS runs GatedGCN layers with their residuals"
        if model.peg_gates is not None:
            return "StaticGPS does not support PEG gates"
        if model.graph_token is not None:
            return "StaticGPS does not support the graph token"
        if model.pair_encoder is not None and not isinstance(model.pair_encoder,
                                                             PairBiasEncoder):
            return (f"StaticGPS takes attention biases (PairBiasEncoder), got "
                    f"{type(model.pair_encoder).__name__}")
        for layer in model.layers:
            for norm in (layer.norm1, layer.norm2, layer.norm3):
                if norm is not None and not isinstance(norm, (PygBatchNorm, nn.BatchNorm1d)):
                    return (f"StaticGPS supports norm='batch_norm' or None, got "
                            f"{type(norm).__name__}")
        for enc in model.pe_encoders:  # each encoder declares whether it runs here
            if not getattr(enc, "static_shapes", False):
                return (f"StaticGPS does not support the PE encoder {type(enc).__name__}: it "
                        "runs the encoders that declare static_shapes (node-wise ones: "
                        "LinearSEEncoder and its subclasses, LapPEEncoder, RFPEncoder with "
                        "readout='trajectory')")
        return None

    def _encode_pe(self, sb: StaticBatch, mask: Tensor, count: Tensor) -> Tensor | None:
        model = self.model
        if not model.pe_encoders:
            return None
        outs = []
        for enc in model.pe_encoders:
            if isinstance(enc, LinearSEEncoder):
                x = read_attribute(sb.node_attrs, enc.attr_name, enc.producer.format(enc))
                outs.append(enc.lin(masked_batch_norm(enc.norm, x.float(), mask, count)))
            elif isinstance(enc, LapPEEncoder):
                names = enc.attr_names
                vecs = read_attribute(sb.node_attrs, names[0], "LaplacianPE")
                vals = read_attribute(sb.node_attrs, names[1], "LaplacianPE")
                lap_mask = sb.node_attrs.get(names[2])
                graph = torch.arange(sb.num_rows, device=mask.device) // sb.graph_size
                outs.append(enc.encode(vecs, vals, lap_mask, graph.clamp(max=sb.num_graphs - 1),
                                       sb.num_graphs))
            else:
                outs.append(enc(read_attribute(sb.node_attrs, enc.attr_name,
                                               enc.producer.format(enc))))
        return model.join_pe(outs)

    def _pair_bias(self, sb: StaticBatch) -> Tensor:
        """The pair encoder's biases as a dense ``[G, heads, S, S]`` (0 on pairs not listed,
        as the eager attention adds nothing there)."""
        enc = self.model.pair_encoder
        if enc.attr_name not in sb.pair_attrs:
            raise ValueError(f"the static batch has no pairwise encoding {enc.attr_name!r} "
                             f"(attributes {enc.attr_name!r} and {enc.attr_name + '_index'!r})")
        dense, listed = sb.pair_attrs[enc.attr_name]
        G, S = sb.num_graphs, sb.graph_size
        values = pair_values(dense.reshape((G * S * S,) + tuple(dense.shape[3:])),
                             enc.attr_name, enc.in_dim, enc.num_categories,
                             parameter_dtype(enc))
        bias = enc.bias(values)
        if enc.path_hops:  # Graphormer's edge encoding, from the batch's own edge ids
            name = f"{enc.attr_name}_path"
            if name not in sb.pair_attrs:
                raise ValueError(f"the static batch has no {name!r} (SPD(path_hops="
                                 f"{enc.path_hops}) writes it)")
            path = sb.pair_attrs[name][0].reshape(G * S * S, -1)
            bias = bias + enc.edge_term(path, sb.edge_attr)
        bias = bias * listed.view(-1, 1)
        return bias.view(G, S, S, enc.heads).permute(0, 3, 1, 2)

    def _attention(self, attn, x: Tensor, key_bias: Tensor, sb: StaticBatch) -> Tensor:
        G, S, heads = sb.num_graphs, sb.graph_size, attn.heads
        qkv = F.linear(x[:G * S], attn.in_proj_weight, attn.in_proj_bias)
        q, k, v = qkv.view(G, S, 3, heads, attn.head_dim).permute(2, 0, 3, 1, 4).unbind(0)
        p = attn.dropout if attn.training else 0.0
        out = F.scaled_dot_product_attention(q, k, v, attn_mask=key_bias, dropout_p=p)
        out = out.transpose(1, 2).reshape(G * S, attn.channels)
        out = torch.cat([out, out.new_zeros(1, attn.channels)])  # the sink row
        return attn.out_proj(out)

    def _layer(self, layer, x: Tensor, sb: StaticBatch, edge_attr: Tensor | None,
               key_bias: Tensor, mask: Tensor, count: Tensor) -> tuple[Tensor, Tensor | None]:
        side = {"edges": edge_attr}  # GatedGCN's updated edge features

        gated = form_of(layer.conv) == "gatedgcn"

        def mpnn(x: Tensor) -> Tensor:
            if gated:  # its norms over the real nodes and the real edges
                return self._gated_gcn(layer.conv, x, sb, side, mask, count)
            # padding edges run sink -> sink: they reach no real row
            edges = edge_attr if "edge_attr" in layer.conv.reads else None
            h = layer.conv(x, sb.edge_index, edges)
            return F.dropout(h, layer.dropout, layer.training)

        def attention(x: Tensor) -> Tensor:
            h = self._attention(layer.attn, x, key_bias, sb)
            return F.dropout(h, layer.dropout, layer.training)

        def add_norm(i: int, h: Tensor, residual: Tensor | None,
                     plus: Tensor | None) -> Tensor:
            norm = (layer.norm1, layer.norm2, layer.norm3)[i - 1]
            out = masked_batch_norm(norm, h if residual is None else h + residual, mask, count)
            return out if plus is None else out + plus

        out = gps_layer(x, mpnn if layer.conv is not None else None,
                        attention if layer.attn is not None else None, layer.mlp, add_norm,
                        mpnn_residual=not gated)
        return out, side["edges"]

    @staticmethod
    def _gated_gcn(conv, x: Tensor, sb: StaticBatch, side: dict, mask: Tensor,
                   count: Tensor) -> Tensor:
        """:class:`~graphpe.layers.conv.GatedGCNLayer` with its batch norms over the real nodes
        and edges; the updated edge features go to ``side['edges']``."""
        edge_attr = side["edges"]
        x_hat, e_hat = conv.gated(x, sb.edge_index, edge_attr)
        # the node dropout draws before the edge dropout, as in the module
        h = x + F.dropout(F.relu(masked_batch_norm(conv.bn_node_x, x_hat, mask, count)),
                          conv.dropout, conv.training)
        if conv.bn_edge_e is not None:
            e = F.relu(masked_batch_norm(conv.bn_edge_e, e_hat, sb.edge_mask,
                                         sb.edge_mask.sum()))
            # padding edges start every layer at 0, as padding rows
            side["edges"] = torch.where(sb.edge_mask.unsqueeze(-1) > 0,
                                        edge_attr + F.dropout(e, conv.dropout, conv.training),
                                        0.0)
        else:
            side["edges"] = None
        return h

    def forward(self, sb: StaticBatch) -> Tensor:
        model = self.model
        G, S = sb.num_graphs, sb.graph_size
        mask = sb.node_mask
        count = mask.sum()
        if sb.x is None:
            raise ValueError("the model needs node features (the batch's x)")
        if model.edge_input is not None and sb.edge_attr is None:
            raise ValueError("the model was built with edge features but the batch has none")
        h = model.node_input(sb.x)
        pe = self._encode_pe(sb, mask, count)
        h = model.combine_pe(h, pe)
        edge_attr = model.edge_input(sb.edge_attr) if model.edge_input is not None else None
        edge_attr = model._edge_states(sb, edge_attr)  # GatedGCN without edge features
        # Padding rows start every layer at 0. Left alone they would not stay finite: the sink
        # row takes the messages of every padding edge (hundreds per batch), each layer
        # multiplies that, and an inf there is a NaN after any product with the mask.
        real = mask.unsqueeze(-1) > 0
        h = torch.where(real, h, 0.0)
        # additive key bias [G, 1, 1, S]: 0 on real nodes, MASKED_LOGIT on padding
        key_bias = ((1.0 - mask[:G * S].view(G, 1, 1, S)) * MASKED_LOGIT).to(h.dtype)
        if model.pair_encoder is not None:  # [G, heads, S, S]: one bias per pair and head
            key_bias = key_bias + self._pair_bias(sb).to(h.dtype)
        for i, layer in enumerate(model.layers):
            h = model.reinjected(h, pe, i)
            h, edge_attr = self._layer(layer, h, sb, edge_attr, key_bias, mask, count)
            h = torch.where(real, h, 0.0)
        nodes = (h * mask.unsqueeze(-1))[:G * S].view(G, S, -1)
        if model.pool == "sum":
            pooled = nodes.sum(1)
        elif model.pool == "mean":
            pooled = nodes.sum(1) / mask[:G * S].view(G, S).sum(1, keepdim=True).clamp(min=1)
        else:
            real = mask[:G * S].view(G, S, 1) > 0
            pooled = h[:G * S].view(G, S, -1).masked_fill(~real, float("-inf")).amax(1)
            pooled = torch.where(sb.graph_mask.unsqueeze(-1) > 0, pooled, 0.0)
        return model.head(pooled)
