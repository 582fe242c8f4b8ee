"""Random Feature Propagation.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch import Tensor, nn
from torch_geometric.utils import add_remaining_self_loops, softmax

from graphpe.encodings.registry import Encoding, register, setting, setting_of
from graphpe.encodings.transform import PETransform, option
from graphpe.layers.common import mlp, read_attribute
from graphpe.ops.checks import (
    check_choice,
    check_non_negative_int,
    check_positive_int,
    check_seed,
)
from graphpe.ops.graph import check_num_nodes, single_graph_ptr
from graphpe.ops.propagate import (
    OPERATORS,
    PROPAGATION_NORMS,
    propagate,
    random_feature_propagation,
)


def _int_at_least(low: int) -> Callable[[str, object], int]:
    def check(name: str, value: object) -> int:
        if isinstance(value, bool) or not isinstance(value, int) or value < low:
            raise ValueError(f"{name} must be an int >= {low}, got {value!r}")
        return value
    return check


# the trajectory's shape: the transform's defaults, which its encoder reads as well
DEFAULT_DIM = 16
DEFAULT_STEPS = 8


@dataclass(eq=False, repr=False)
class RFP(PETransform):
    r"""Random Feature Propagation (Eliasof, Frasca, Bevilacqua, Treister, Chechik, Maron,
    "Graph Positional Encoding via Random Feature Propagation", ICML 2023, PMLR 202).

    Random node features :math:`R_0 \sim \mathcal{N}(0, 1)^{n \times d}` are propagated with a
    graph operator :math:`S` and normalized per graph after every step,

    .. math:: R_\ell = \mathrm{normalize}(S R_{\ell - 1}), \qquad \ell = 1, \dots, L,

    and the encoding is the trajectory :math:`[R_0, R_1, \dots, R_L]`: early blocks carry the
    expressivity of random features, late blocks approach the dominant eigenvectors of
    :math:`S` (with ``qr``, an orthonormal basis of the dominant subspace; with ``l2``, each
    column runs its own power iteration). :math:`R_0` is normalized the same way, so every
    block has the same scale. ``num_draws`` independent draws are stacked.

    Writes ``rfp`` ``[N, num_draws, dim * (steps + 1)]`` (name configurable).

    Args:
        dim: random features per draw, ``d``.
        steps: propagation steps, ``L``.
        num_draws: independent initializations (the paper's DSS encoder pools over several).
        operator: ``gcn`` (``D~^-1/2 (A+I) D~^-1/2``), ``adj`` (``D^-1/2 A D^-1/2``), ``rw``
            (``D^-1 A``) or ``lap_shift`` (``2I - L_sym``).
        normalization: ``qr`` (per-graph orthonormalization) or ``l2`` (per-graph unit columns).
        seed: seed of the draws (None: a fresh random seed); calls draw successive features
            from one generator, and :func:`~graphpe.transforms.precompute` restarts it, so a
            dataset precompute is reproducible.
        attr_name: attribute written.
    """

    dim: int = option(DEFAULT_DIM, _int_at_least(1))
    steps: int = option(DEFAULT_STEPS, _int_at_least(0))
    num_draws: int = option(4, _int_at_least(1))
    operator: str = option("gcn", lambda name, value: check_choice(name, value, OPERATORS))
    normalization: str = option("qr", lambda name, value: check_choice(
        name, value, PROPAGATION_NORMS))
    seed: int | None = option(0, lambda name, value: check_seed(value, name))
    attr_name: str = option("rfp")

    @property
    def draws_random(self) -> bool:
        return True

    distributed_path = "RFP by distributed propagation and CholeskyQR2"

    def compute_rows(self, rows, exchange) -> tuple[dict[str, Tensor], dict]:
        from graphpe.ops.distributed import distributed_rfp, own_draws

        x0 = own_draws(self.shared_generator(exchange.group), rows.partition, self.num_draws,
                       self.dim)
        products = exchange.calls
        rfp = distributed_rfp(rows, exchange, x0, self.steps, self.operator,
                              self.normalization)
        return {self.attr_name: rfp}, {"method": "distributed propagation, CholeskyQR2",
                                       "products": exchange.calls - products}

    def compute(
        self,
        edge_index: Tensor,
        num_nodes: int,
        ptr: Tensor | None,
        edge_weight: Tensor | None = None,
    ) -> dict[str, Tensor]:
        check_num_nodes(num_nodes)  # before the draw: the graph is validated after it
        # drawn on the CPU generator, so a seed gives the same features on every device
        x0 = torch.randn(num_nodes, self.num_draws, self.dim, generator=self.draw_generator())
        rfp = random_feature_propagation(
            edge_index, num_nodes, x0.to(edge_index.device), self.steps, self.operator,
            self.normalization, ptr=ptr, edge_weight=edge_weight)
        return {self.attr_name: rfp}


POOLINGS = ("sum", "mean")


RESAMPLE = ("forward", "epoch", "fixed")


READOUTS = ("trajectory", "gram")


class RFPEncoder(nn.Module):
    r"""Maps RFP trajectories ``[N, draws, F]`` to node embeddings ``[N, channels]``.

    A DeepSets network over the draws (Zaheer et al., 2017):
    :math:`\rho\big(\sum_b \phi(r_b)\big)` (or the mean), so the output does not depend on the
    order of the draws. With ``sign_invariant``, :math:`\phi(r) + \phi(-r)` replaces
    :math:`\phi(r)`, making the output invariant to flipping the sign of a draw.

    What ``phi`` sees of a draw (``readout``):

    - ``trajectory``: the raw trajectory ``r = [X_0, ..., X_L]_i`` of node ``i``. The network must
      learn, from examples, to ignore which Gaussian draw it got.
    - ``gram``: the inner products of the node's steps over the feature axis,
      :math:`G_{lm}(i) = \tfrac{n}{d} \langle X_l(i), X_m(i) \rangle` for ``l <= m``, with ``n``
      the size of the node's graph and ``d = dim`` (so ``G_00`` averages 1 over a graph).
      These do not change when the draw is rotated (``X_0 -> X_0 Q`` for orthogonal ``Q``
      commutes with unnormalized propagation), so ``phi`` reads estimates of
      :math:`(S^{l+m})_{ii}`-like return quantities rather than noise.

    Args:
        channels: output channels.
        dim: the RFP ``dim`` (features per step); the input is ``[N, draws, dim * (steps + 1)]``
            (a :class:`LearnedRFP`'s ``out_dim`` is ``dim * (steps + 1)`` of its own).
        steps: the RFP ``steps``.
        readout: ``gram`` or ``trajectory``, see above.
        hidden: hidden width of ``phi`` and ``rho`` (default ``channels``).
        pooling: ``sum`` or ``mean`` over draws.
        sign_invariant: see above (``gram`` is sign invariant already).
        attr_name: attribute read when ``forward`` is given a ``Data``/``Batch``.
        dropout: dropout inside the MLPs.
    """

    # what writes the input, for the error naming a missing attribute
    producer = "RFP(attr_name={0.attr_name!r})"

    @property
    def static_shapes(self) -> bool:
        """Whether StaticGPS runs this encoder: with the ``trajectory`` readout only (its
        static path has no ``gram`` readout)."""
        return self.readout == "trajectory"

    def __init__(
        self,
        channels: int,
        *,
        dim: int = DEFAULT_DIM,
        steps: int = DEFAULT_STEPS,
        readout: str = "gram",
        hidden: int | None = None,
        pooling: str = "sum",
        sign_invariant: bool = False,
        attr_name: str = "rfp",
        dropout: float = 0.0,
    ) -> None:
        super().__init__()
        for name, value in (("channels", channels), ("dim", dim)):
            check_positive_int(name, value)
        check_non_negative_int("steps", steps)
        if pooling not in POOLINGS:
            raise ValueError(f"pooling must be one of {POOLINGS}, got {pooling!r}")
        if readout not in READOUTS:
            raise ValueError(f"readout must be one of {READOUTS}, got {readout!r}")
        in_dim = dim * (steps + 1)
        phi_in = in_dim
        if readout == "gram":
            blocks = steps + 1
            upper = torch.triu_indices(blocks, blocks)
            self.register_buffer("upper", upper[0] * blocks + upper[1], persistent=False)
            phi_in = upper.size(1)
        hidden = hidden or channels
        self.in_dim, self.dim, self.channels = in_dim, dim, channels
        self.pooling, self.sign_invariant, self.attr_name = pooling, sign_invariant, attr_name
        self.readout, self.steps = readout, steps
        self.phi = mlp([phi_in, hidden, hidden], dropout)
        self.rho = mlp([hidden, hidden, channels], dropout)

    def forward(self, batch_or_rfp) -> Tensor:
        """A batch carrying ``attr_name`` ``[N, draws, in_dim]`` (as ``RFP`` writes it), or that
        tensor itself -> ``[N, channels]``."""
        sizes = None
        if isinstance(batch_or_rfp, Tensor):
            rfp = batch_or_rfp
        else:

            rfp = read_attribute(batch_or_rfp, self.attr_name, self.producer.format(self))
            ptr, graph = batch_or_rfp.get("ptr"), batch_or_rfp.get("batch")
            if ptr is not None and graph is not None:
                sizes = (ptr[1:] - ptr[:-1])[graph]
        if rfp.dim() == 2:
            rfp = rfp.unsqueeze(1)
        if rfp.dim() != 3 or rfp.size(-1) != self.in_dim:
            raise ValueError(
                f"expected RFP features [N, draws, {self.in_dim}], got {list(rfp.shape)}"
            )
        rfp = rfp.to(next(self.parameters()).dtype)  # float64 models take float64 PEs
        if self.readout == "gram":
            rfp = self.gram(rfp, sizes)
        h = self.phi(rfp)
        if self.sign_invariant:
            h = h + self.phi(-rfp)
        h = h.sum(1) if self.pooling == "sum" else h.mean(1)
        return self.rho(h)

    def gram(self, rfp: Tensor, sizes: Tensor | None = None) -> Tensor:
        """``[N, draws, dim * (steps + 1)]`` -> the upper triangle of each node's scaled Gram
        matrix of steps, ``[N, draws, (steps + 1)(steps + 2) / 2]``. ``sizes`` holds each
        node's graph size (``None``: all ``N`` nodes are one graph)."""
        num_nodes, draws, _ = rfp.shape
        blocks, dim = self.steps + 1, self.dim
        x = rfp.reshape(num_nodes, draws, blocks, dim)
        scale = (sizes.to(rfp.dtype) if sizes is not None
                 else rfp.new_full((num_nodes,), float(num_nodes))) / dim
        gram = (x @ x.transpose(-1, -2)).flatten(2)[..., self.upper]
        return gram * scale.view(num_nodes, 1, 1)

    def extra_repr(self) -> str:
        return (f"channels={self.channels}, dim={self.dim}, steps={self.steps}, "
                f"readout={self.readout!r}, pooling={self.pooling!r}, "
                f"sign_invariant={self.sign_invariant}")


class LearnedRFP(nn.Module):
    r"""RFP with a learned propagation operator, drawn and propagated inside ``forward``.

    The operator is attention over edges (Velickovic et al., 2018), recomputed every call from
    the node features ``h``: with self loops added,

    .. math:: S_{ij} = \operatorname{softmax}_{j \in N(i) \cup \{i\}}
        \mathrm{LeakyReLU}\big(a_s^\top W h_i + a_d^\top W h_j\big),

    and random features are propagated with it as in :func:`graphpe.ops.propagate`
    (per-graph normalization), differentiably in ``W``, ``a_s``, ``a_d``. Returns the trajectory
    ``[N, num_draws, dim * (steps + 1)]``, to be encoded by :class:`RFPEncoder`.

    Args:
        in_channels: width of ``h``.
        dim, steps, num_draws: as in :class:`graphpe.transforms.RFP`.
        normalization: ``l2`` (default) or ``qr`` (Householder/Cholesky-QR gradients are
            unstable for graphs with fewer nodes than ``dim``).
        resample: ``forward``: fresh draws at every call; ``epoch``: draws seeded by
            ``(seed, epoch)``, advanced by :meth:`next_epoch`; ``fixed``: draws seeded by
            ``seed`` at every call. Seeded draws depend on the node order of the batch.
        seed: base seed for ``epoch`` and ``fixed``.
        attention_dim: width of ``W h``.
    """

    def __init__(
        self,
        in_channels: int,
        dim: int = 16,
        steps: int = 8,
        num_draws: int = 1,
        normalization: str = "l2",
        resample: str = "forward",
        seed: int = 0,
        attention_dim: int = 32,
    ) -> None:
        super().__init__()
        if normalization not in PROPAGATION_NORMS:
            raise ValueError(
                f"normalization must be one of {PROPAGATION_NORMS}, got {normalization!r}"
            )
        if resample not in RESAMPLE:
            raise ValueError(f"resample must be one of {RESAMPLE}, got {resample!r}")
        for name, value, low in (("dim", dim, 1), ("steps", steps, 0), ("num_draws", num_draws, 1),
                                 ("in_channels", in_channels, 1)):
            if isinstance(value, bool) or not isinstance(value, int) or value < low:
                raise ValueError(f"{name} must be an int >= {low}, got {value!r}")
        self.dim, self.steps, self.num_draws = dim, steps, num_draws
        self.normalization, self.resample, self.seed = normalization, resample, seed
        self.epoch = 0
        self.lin = nn.Linear(in_channels, attention_dim, bias=False)
        self.att_src = nn.Parameter(torch.empty(attention_dim))
        self.att_dst = nn.Parameter(torch.empty(attention_dim))
        nn.init.normal_(self.att_src, std=attention_dim**-0.5)
        nn.init.normal_(self.att_dst, std=attention_dim**-0.5)

    @property
    def out_dim(self) -> int:
        """Trajectory length per draw, the ``in_dim`` of an :class:`RFPEncoder`."""
        return self.dim * (self.steps + 1)

    def next_epoch(self) -> None:
        self.epoch += 1

    def operator(self, h: Tensor, edge_index: Tensor) -> tuple[Tensor, Tensor]:
        """``(edge_index, values)`` of the row-softmax attention operator, self loops added."""
        edge_index, _ = add_remaining_self_loops(edge_index, num_nodes=h.size(0))
        wh = self.lin(h)
        score = (wh * self.att_src).sum(-1)[edge_index[0]] + (wh * self.att_dst).sum(-1)[
            edge_index[1]
        ]
        values = softmax(nn.functional.leaky_relu(score, 0.2), edge_index[0], num_nodes=h.size(0))
        return edge_index, values

    def draw(self, num_nodes: int, device: torch.device, dtype: torch.dtype) -> Tensor:
        shape = (num_nodes, self.num_draws, self.dim)
        if self.resample == "forward":
            return torch.randn(shape, device=device, dtype=dtype)
        gen = torch.Generator().manual_seed(
            self.seed if self.resample == "fixed" else self.seed * 1_000_003 + self.epoch
        )
        return torch.randn(shape, generator=gen).to(device=device, dtype=dtype)

    def forward(self, h: Tensor, edge_index: Tensor, ptr: Tensor | None = None) -> Tensor:
        num_nodes = h.size(0)
        if ptr is None:
            ptr = single_graph_ptr(num_nodes, h.device)
        op = self.operator(h, edge_index)
        x0 = self.draw(num_nodes, h.device, h.dtype)
        traj = propagate(op, x0, self.steps, self.normalization, ptr=ptr)
        return traj.permute(1, 2, 0, 3).reshape(num_nodes, self.num_draws, -1)


@register
class RFPSpec(Encoding):
    name = "rfp"
    summary = "Random Feature Propagation: trajectories of random features under an operator"
    paper = "Eliasof et al., Graph Positional Encoding via Random Feature Propagation, ICML 2023"
    family = "propagate"
    demo = 3
    reference_test = "tests/ops/propagate/test_rfp.py::test_operators_match_dense_definitions"

    transform_class = RFP
    encoder_class = RFPEncoder

    dim: int = setting_of(RFP, "dim")
    steps: int = setting_of(RFP, "steps")
    num_draws: int = setting_of(RFP, "num_draws")
    operator: str = setting_of(RFP, "operator")
    normalization: str = setting_of(RFP, "normalization")
    seed: int | None = setting_of(RFP, "seed")
    # what RFPEncoder's phi sees of each draw (gram: rotation-invariant inner products)
    readout: str = setting("gram", lambda name, value: check_choice(name, value, READOUTS))

    def encoder(self, channels: int) -> nn.Module:
        return RFPEncoder(channels, dim=self.dim, steps=self.steps, readout=self.readout)
