"""GINE training step: graphpe's ``GINE`` model against the same network built from PyG's
``GINEConv`` (without edge features, GIN against PyG's ``GINConv``; and GatedGCN against
GraphGPS's ``GatedGCNLayer``).

    python benchmarks/gine_step.py --threads 1

The network of ``graphpe train --model gine`` (the default model; also the base of the RFP,
SPE and expressivity reproductions): atom and bond embeddings, ``layers`` x (``GINEConv`` with
MLP ``Linear -> BatchNorm1d -> ReLU -> Linear`` and a learned ``eps``, then ``BatchNorm1d``,
ReLU and a residual), sum pooling and an MLP head. PyG's side uses ``GINEConv`` and PyG's
``global_add_pool``; graphpe's is ``graphpe.nn.GINE`` with its fused layers
(:mod:`graphpe.layers.fused_gine`, the default) and module by module (``fused = False``), same
parameter count. ``--variants gin`` drops the bond features: PyG's ``GINConv`` network
against graphpe's ``GINE`` built without ``edge_vocab`` (GIN layers, also fused);
``--variants gatedgcn`` GraphGPS's ``GatedGCNLayer`` (a PyG ``MessagePassing`` with
``scatter``, as in GraphGPS's ``gatedgcn_layer.py``; residual, 4 x (node and edge update)) against
``graphpe.nn.GatedGCN`` (whose last layer skips the edge update nobody reads). Forward,
backward and a plain ``Adam`` step on the same ZINC-12k batches, the models taking turns
within each round; medians over rounds, ms per step.
"""

from __future__ import annotations

import argparse
import copy
import json
import statistics
import sys
import time
from pathlib import Path

import torch
from torch import nn

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import DEFAULT_ROOT, DEFAULT_SHARED  # noqa: E402
from train_step import load_zinc  # noqa: E402

from graphpe.nn import GINE, GatedGCN  # noqa: E402


class PygGINE(nn.Module):
    """``graphpe.nn.GINE``'s network from PyG's ``GINEConv`` and ``global_add_pool``."""

    def __init__(self, channels: int, layers: int, edges: bool = True) -> None:
        super().__init__()
        from torch_geometric.nn import GINConv, GINEConv

        self.node_emb = nn.Embedding(28, channels)
        self.edge_emb = nn.Embedding(4, channels) if edges else None
        conv = GINEConv if edges else GINConv
        self.convs = nn.ModuleList(conv(nn.Sequential(
            nn.Linear(channels, channels), nn.BatchNorm1d(channels), nn.ReLU(),
            nn.Linear(channels, channels)), train_eps=True) for _ in range(layers))
        self.norms = nn.ModuleList(nn.BatchNorm1d(channels) for _ in range(layers))
        self.head = nn.Sequential(nn.Linear(channels, channels), nn.ReLU(),
                                  nn.Linear(channels, 1))

    def forward(self, batch):
        from torch_geometric.nn import global_add_pool

        h = self.node_emb(batch.x.view(-1))
        if self.edge_emb is None:
            for conv, norm in zip(self.convs, self.norms, strict=True):
                h = h + torch.relu(norm(conv(h, batch.edge_index)))
        else:
            e = self.edge_emb(batch.edge_attr.view(-1))
            for conv, norm in zip(self.convs, self.norms, strict=True):
                h = h + torch.relu(norm(conv(h, batch.edge_index, e)))
        return self.head(global_add_pool(h, batch.batch, size=batch.num_graphs))


class GraphGPSGatedGCN(nn.Module):
    """The GatedGCN network of GraphGPS's layer: embeddings, ``layers`` x GraphGPS's
    ``GatedGCNLayer`` (residual, dropout 0), sum pooling and the MLP head."""

    def __init__(self, channels: int, layers: int) -> None:
        super().__init__()
        from torch_geometric.nn import MessagePassing
        from torch_geometric.utils import scatter

        class Layer(MessagePassing):  # GraphGPS's GatedGCNLayer, its maths and layout
            def __init__(self) -> None:
                super().__init__()
                self.A, self.B, self.C, self.D, self.E = (nn.Linear(channels, channels)
                                                          for _ in range(5))
                self.bn_node_x = nn.BatchNorm1d(channels)
                self.bn_edge_e = nn.BatchNorm1d(channels)

            def forward(self, x, edge_index, e):
                x_new, e_new = self.propagate(edge_index, Bx=self.B(x), Dx=self.D(x),
                                              Ex=self.E(x), Ce=self.C(e), Ax=self.A(x))
                x_new = torch.relu(self.bn_node_x(x_new))
                e_new = torch.relu(self.bn_edge_e(e_new))
                return x + x_new, e + e_new

            def message(self, Dx_i, Ex_j, Ce):
                e_ij = Dx_i + Ex_j + Ce
                self._e = e_ij
                return torch.sigmoid(e_ij)

            def aggregate(self, sigma, index, Bx_j, Bx):
                num = scatter(sigma * Bx_j, index, 0, dim_size=Bx.size(0), reduce="sum")
                den = scatter(sigma, index, 0, dim_size=Bx.size(0), reduce="sum")
                return num / (den + 1e-6)

            def update(self, aggr_out, Ax):
                return Ax + aggr_out, self._e

        self.node_emb = nn.Embedding(28, channels)
        self.edge_emb = nn.Embedding(4, channels)
        self.convs = nn.ModuleList(Layer() for _ in range(layers))
        self.head = nn.Sequential(nn.Linear(channels, channels), nn.ReLU(),
                                  nn.Linear(channels, 1))

    def forward(self, batch):
        from torch_geometric.nn import global_add_pool

        h = self.node_emb(batch.x.view(-1))
        e = self.edge_emb(batch.edge_attr.view(-1))
        for conv in self.convs:
            h, e = conv(h, batch.edge_index, e)
        return self.head(global_add_pool(h, batch.batch, size=batch.num_graphs))


def make_step(model: nn.Module):
    model.train()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)

    def step(batch) -> None:
        opt.zero_grad(set_to_none=True)
        loss = (model(batch).squeeze(-1) - batch.y).abs().mean()
        loss.backward()
        opt.step()

    return step


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--channels", type=int, default=64)
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--variants", default="gine,gin,gatedgcn")
    ap.add_argument("--steps", type=int, default=10, help="steps per model per round")
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--root", type=Path, default=DEFAULT_ROOT)
    ap.add_argument("--shared", type=Path, default=DEFAULT_SHARED)
    ap.add_argument("--json", type=Path, default=Path("benchmarks/results/gine_step.json"))
    args = ap.parse_args(argv)
    torch.set_num_threads(args.threads)
    graphs = load_zinc(args.root, args.shared, args.batch_size * (args.steps + 2), 20)
    if graphs is None:
        print("[skip] no offline ZINC copy: nothing measured", file=sys.stderr)
        return
    from torch_geometric.loader import DataLoader

    batches = list(DataLoader(graphs, batch_size=args.batch_size))
    warm, timed = batches[:2], batches[2:]
    models, base_of = {}, {}
    for variant in args.variants.split(","):
        if variant == "gatedgcn":
            torch.manual_seed(0)
            peer = "GraphGPS GatedGCNLayer"
            models.update({peer: GraphGPSGatedGCN(args.channels, args.layers),
                           "graphpe GatedGCN": GatedGCN(args.channels, args.layers, 1,
                                                        node_vocab=28, edge_vocab=4)})
            base_of.update({peer: peer, "graphpe GatedGCN": peer})
            continue
        edges = variant == "gine"
        torch.manual_seed(0)
        fused = GINE(args.channels, args.layers, 1, node_vocab=28,
                     edge_vocab=4 if edges else None)
        module = copy.deepcopy(fused)
        module.fused = False
        name = "GINE" if edges else "GIN"
        pyg = f"pyg {name}Conv"
        models.update({pyg: PygGINE(args.channels, args.layers, edges),
                       f"graphpe {name}": fused, f"graphpe {name}, module by module": module})
        base_of.update({pyg: pyg, f"graphpe {name}": pyg,
                        f"graphpe {name}, module by module": pyg})
    params = {name: sum(p.numel() for p in m.parameters()) for name, m in models.items()}
    steps = {name: make_step(m) for name, m in models.items()}
    times: dict[str, list[float]] = {name: [] for name in models}
    for r in range(args.rounds + 1):  # round 0 warms up
        for name, step in steps.items():
            for b in warm:
                step(b)
            start = time.perf_counter()
            for b in timed:
                step(b)
            if r:
                times[name].append((time.perf_counter() - start) / len(timed) * 1e3)
    rows = []
    print(f"GINE/GIN/GatedGCN training step ({args.layers} layers x {args.channels} channels), "
          f"ZINC, batch "
          f"{args.batch_size}, CPU, {args.threads} thread(s): median of {args.rounds} rounds x "
          f"{len(timed)} steps")
    for name, values in times.items():
        base = statistics.median(times[base_of[name]])
        ms = statistics.median(values)
        rows.append({"model": name, "params": params[name], "ms_per_step": round(ms, 2),
                     "speedup_vs_pyg": round(base / ms, 2),
                     "rounds_ms": [round(v, 2) for v in values]})
        print(f"  {name:<32}{params[name]:>9,}{ms:>9.1f} ms{base / ms:>7.2f}x")
    result = {"command": " ".join(["python benchmarks/gine_step.py",
                                   *(sys.argv[1:] if argv is None else argv)]),
              "threads": args.threads, "channels": args.channels, "layers": args.layers,
              "batch_size": args.batch_size, "rounds": args.rounds, "steps": len(timed),
              "torch": torch.__version__, "rows": rows}
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(result, indent=2))
    print(f"wrote {args.json}")


if __name__ == "__main__":
    main()
