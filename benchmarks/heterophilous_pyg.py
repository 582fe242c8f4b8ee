"""graphpe's Polynormer / SGFormer / GCN / GraphSAGE against PyG's own on a heterophilous set
(Minesweeper, Tolokers), at the same settings and budget: the test ROC-AUC over the fixed
splits side by side, and the training epoch's seconds, measured in turn in one process.

    python benchmarks/heterophilous_pyg.py --accuracy --model polynormer --splits all
    python benchmarks/heterophilous_pyg.py --timing --model polynormer --rounds 7

The two sides compute the same function given the same weights (``tests/nn/test_scalable.py``
checks it): PyG's ``Polynormer`` / ``SGFormer`` read inputs as wide as their hidden layers, so
PyG's side is ``Linear(features, channels)`` then PyG's model, as graphpe's node embedding is
(for GCN / GraphSAGE, PyG's model is its examples' stack of convolutions, :func:`pyg_conv_stack`,
and graphpe's ``gcn`` / ``sage`` has one linear map as its head);
PyG's returns log-probabilities of two classes (trained with the negative log-likelihood, the
ROC-AUC read from the second class's probability), graphpe's one logit (binary cross-entropy,
the ROC-AUC of the logit): for two classes the same model family. Both train full batch with
Adam at ``--lr`` without weight decay for ``--epochs`` epochs (Polynormer: the first
``--local-epochs`` in its local stage, PyG's example's ``model._global = False``), each split
from seed ``--seed + split``, the test ROC-AUC at the best validation epoch. PyG's side is the
training loop of PyG's examples (``examples/polynormer.py``): the model's forward, the loss
on the training nodes, ``backward``, ``step``; graphpe's is ``graphpe.train.run``.

The timing runs ``--rounds`` training epochs of each side in turn (all meet the same load),
one thread: graphpe, PyG as its examples call it (``edge_index``) and PyG's best full-batch
path (cached ``GCNConv`` normalization on a CSR ``adj_t``); it reports the medians, the spread,
and graphpe's speed against PyG's faster path. Rows go to ``--json``
(default ``benchmarks/results/heterophilous_pyg.json``).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
import warnings
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from heterophilous import prepared_root  # noqa: E402

DEFAULT_JSON = HERE / "results" / "heterophilous_pyg.json"
ARXIV = "ogbn-arxiv-graph"
#: the width of the random features both sides read where a graph has none (arxiv's staged
#: graph: OGB's text embeddings cannot be staged)
STRUCTURE_ONLY_FEATURES = 128


def dataset_name(args: argparse.Namespace) -> str:
    """``load_dataset``'s name of ``--dataset``: arxiv's graph is a GraphSAINT-layout folder
    of the shared data."""
    if args.dataset != ARXIV:
        return args.dataset
    from common import DEFAULT_SHARED

    folder = DEFAULT_SHARED / ARXIV
    if not folder.is_dir():
        sys.exit(f"{folder} not found: the arxiv timing reads OGB's arxiv graph there")
    return f"graph:{folder}"


def pyg_conv_stack(kind: str, channels: int, layers: int, dropout: float, classes: int = 2):
    """PyG's full-batch GCN / GraphSAGE as its examples write them (``examples/gcn.py``,
    ``ogbn_arxiv``'s GCN): ``layers`` convolutions (``GCNConv`` or ``SAGEConv``) ``channels``
    wide, each followed by ReLU and dropout, then a linear map to ``classes``; called as
    PyG's Polynormer is, ``(x, edge_index or adj_t, batch)``."""
    import torch
    import torch.nn.functional as F
    from torch_geometric.nn import GCNConv, SAGEConv

    class ConvStack(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            conv = GCNConv if kind == "gcn" else SAGEConv
            self.convs = torch.nn.ModuleList(conv(channels, channels) for _ in range(layers))
            self.out = torch.nn.Linear(channels, classes)

        def forward(self, x, adjacency, batch=None):
            for conv in self.convs:
                x = F.dropout(F.relu(conv(x, adjacency)), dropout, self.training)
            return F.log_softmax(self.out(x), dim=-1)

    return ConvStack()


def logit_as_two_classes(channels: int):
    """A head of one logit ``z`` written as PyG's two classes ``[0, z]``: under PyG's
    ``log_softmax`` and negative log-likelihood that is binary cross-entropy on ``z``, as
    graphpe trains (``--pyg-head logit``: PyG's model with graphpe's head and loss)."""
    import torch

    class LogitAsTwoClasses(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.logit = torch.nn.Linear(channels, 1)

        def forward(self, x):
            z = self.logit(x)
            return torch.cat([torch.zeros_like(z), z], dim=-1)

    return LogitAsTwoClasses()


def pyg_model(kind: str, features: int, args: argparse.Namespace, classes: int = 2):
    """``Linear(features, channels)`` then PyG's ``kind`` with ``classes`` outputs (with
    ``args.pyg_head == "logit"``, SGFormer's last layer one logit as two classes)."""
    import torch
    from torch_geometric.nn.models import Polynormer, SGFormer

    if kind == "polynormer":
        body = Polynormer(args.channels, args.channels, classes, local_layers=args.layers,
                          global_layers=args.global_layers, dropout=args.dropout,
                          global_dropout=args.dropout)
    elif kind == "sgformer":
        body = SGFormer(args.channels, args.channels, classes, gnn_num_layers=args.layers,
                        gnn_dropout=args.dropout, trans_dropout=args.dropout)
    else:
        body = pyg_conv_stack(kind, args.channels, args.layers, args.dropout, classes)
    if getattr(args, "pyg_head", "two-class") == "logit":
        body.fc = logit_as_two_classes(args.channels)
        body.params2 = [*body.graph_conv.parameters(), *body.fc.parameters()]
    return torch.nn.Sequential(torch.nn.Linear(features, args.channels)), body


def graphpe_options(kind: str, args: argparse.Namespace) -> dict:
    options = {"dropout": args.dropout}
    if kind == "polynormer":
        options.update(global_layers=args.global_layers, global_dropout=args.dropout,
                       local_epochs=args.local_epochs)
    elif kind == "sgformer":
        options.update(trans_dropout=args.dropout)
    else:  # the convolutions, then one linear map to the output (PyG's stack above)
        options.update(head_hidden=[])
    return options


def pyg_split(kind: str, graph, split: int, args: argparse.Namespace) -> dict:
    """PyG's model trained on ``split`` as PyG's examples train it."""
    import torch
    import torch.nn.functional as F

    from graphpe.datasets import BinaryROCAUC
    from graphpe.train import seed_everything

    seed_everything(args.seed + split)
    embed, body = pyg_model(kind, graph.x.size(1), args)
    params = [*embed.parameters(), *body.parameters()]
    opt = torch.optim.Adam(params, lr=args.lr)
    batch = torch.zeros(graph.num_nodes, dtype=torch.long)
    masks = {part: graph[f"{part}_mask"][:, split] for part in ("train", "val", "test")}
    y = graph.y
    best = {"val": -1.0}
    start = time.perf_counter()
    for epoch in range(args.epochs):
        if kind == "polynormer":
            body._global = epoch >= args.local_epochs
        embed.train(), body.train()
        opt.zero_grad()
        out = body(embed(graph.x), graph.edge_index, batch)
        F.nll_loss(out[masks["train"]], y[masks["train"]]).backward()
        opt.step()
        embed.eval(), body.eval()
        with torch.no_grad():
            score = body(embed(graph.x), graph.edge_index, batch)[:, 1]
        metric = {part: BinaryROCAUC().eval({"y_true": y[masks[part]].numpy(),
                                             "y_pred": score[masks[part]].numpy()})["rocauc"]
                  for part in ("val", "test")}
        if metric["val"] > best["val"]:
            best = {**metric, "epoch": epoch}
    return {"library": "pyg", "split": split, **best,
            "seconds_per_epoch": (time.perf_counter() - start) / args.epochs}


def graphpe_split(kind: str, root: Path, split: int, args: argparse.Namespace) -> dict:
    """graphpe's model trained on ``split`` through ``graphpe.train.run``."""
    from graphpe.datasets import load_dataset
    from graphpe.train import TrainConfig, run

    bundle = load_dataset(args.dataset, root, fold=split)
    config = TrainConfig(epochs=args.epochs, lr=args.lr, weight_decay=0.0, optimizer="adam",
                         schedule="constant", warmup_epochs=0, clip_norm=0.0,
                         patience=args.epochs, seed=args.seed + split, progress=False)
    record = run(bundle, (), model=kind, channels=args.channels, layers=args.layers,
                 config=config, **graphpe_options(kind, args))
    return {"library": "graphpe", "split": split, "val": record["val"], "test": record["test"],
            "epoch": record["best_epoch"], "seconds_per_epoch": record["seconds_per_epoch"]}


def summary(rows: list[dict]) -> dict:
    """Each side's mean ± std, and the paired difference graphpe - PyG with its standard
    error over the splits both ran."""
    out = {}
    for library in ("pyg", "graphpe"):
        tests = [r["test"] for r in rows if r["library"] == library]
        if tests:
            out[library] = {"runs": len(tests), "test_mean": statistics.mean(tests),
                            "test_std": statistics.stdev(tests) if len(tests) > 1 else 0.0}
    pyg = {r["split"]: r["test"] for r in rows if r["library"] == "pyg"}
    ours = {r["split"]: r["test"] for r in rows if r["library"] == "graphpe"}
    diffs = [ours[s] - pyg[s] for s in sorted(set(pyg) & set(ours))]
    if len(diffs) > 1:
        se = statistics.stdev(diffs) / len(diffs) ** 0.5
        out["difference"] = {"mean": statistics.mean(diffs), "se": se,
                             "within_two_se": abs(statistics.mean(diffs)) <= 2 * se}
    return out


def timing(kind: str, root: Path, args: argparse.Namespace) -> dict:
    """``args.rounds`` training epochs of each side in turn, in this process: graphpe, PyG as
    its examples call it (``edge_index``, the normalization recomputed each call), and PyG's
    best full-batch path (its ``GCNConv``s ``cached``, reading a CSR ``adj_t``, as PyG's and
    OGB's full-batch GCN examples run), checked to compute what the ``edge_index`` call does."""
    import torch
    import torch.nn.functional as F
    from torch_geometric.data import Batch
    from torch_geometric.utils import to_torch_csr_tensor

    from graphpe.datasets import load_dataset
    from graphpe.nn import build_model

    bundle = load_dataset(dataset_name(args), root)
    graph = bundle.train[0]
    data_kwargs = bundle.model_kwargs()
    if not graph.x.is_floating_point():  # arxiv's staged graph has no features: random ones
        graph = graph.clone()
        graph.x = torch.randn(graph.num_nodes, STRUCTURE_ONLY_FEATURES,
                              generator=torch.Generator().manual_seed(0))
        data_kwargs.update(node_vocab=None, node_dim=STRUCTURE_ONLY_FEATURES)
    collated = Batch.from_data_list([graph])
    ours = build_model({"model": kind, "channels": args.channels, "layers": args.layers,
                        **data_kwargs, **graphpe_options(kind, args)})
    classes = max(2, bundle.out_dim)
    embed, body = pyg_model(kind, graph.x.size(1), args, classes)
    cached = pyg_model(kind, graph.x.size(1), args, classes)
    cached[0].load_state_dict(embed.state_dict())
    cached[1].load_state_dict(body.state_dict())
    convs = [m for m in cached[1].modules() if hasattr(m, "cached")]
    for conv in convs:
        conv.cached = True
    with warnings.catch_warnings():  # torch's notes that CSR support is in beta
        warnings.simplefilter("ignore", UserWarning)
        adj_t = to_torch_csr_tensor(graph.edge_index.flip(0), size=(graph.num_nodes,) * 2)
    if kind == "polynormer":
        body._global, cached[1]._global, ours.global_stage = True, True, True
    batch = torch.zeros(graph.num_nodes, dtype=torch.long)
    mask, y = graph.train_mask, graph.y.view(-1)
    with torch.no_grad():
        body.eval(), cached[1].eval()
        plain = body(embed(graph.x), graph.edge_index, batch)
        gap = (cached[1](cached[0](graph.x), adj_t, batch) - plain).abs().max().item()
    if gap > 1e-4:
        raise RuntimeError(f"PyG's cached CSR path differs from its edge_index path by {gap}")

    def step_ours(opt):
        opt.zero_grad()
        out = ours(collated)[mask]
        if bundle.out_dim == 1:
            F.binary_cross_entropy_with_logits(out.view(-1), y[mask].float()).backward()
        else:
            F.cross_entropy(out, y[mask]).backward()
        opt.step()

    def pyg_step(model, adjacency):
        def step(opt):
            opt.zero_grad()
            F.nll_loss(model[1](model[0](graph.x), adjacency, batch)[mask], y[mask]).backward()
            opt.step()
        return step

    models = {"graphpe": list(ours.parameters()),
              "pyg": [*embed.parameters(), *body.parameters()],
              "pyg_cached_csr": [*cached[0].parameters(), *cached[1].parameters()]}
    opts = {k: torch.optim.Adam(v, lr=args.lr) for k, v in models.items()}
    steps = {"graphpe": step_ours, "pyg": pyg_step((embed, body), graph.edge_index),
             "pyg_cached_csr": pyg_step(cached, adj_t)}
    ours.train(), embed.train(), body.train(), cached[0].train(), cached[1].train()
    seconds = {k: [] for k in steps}
    order = list(steps)
    for round_ in range(args.rounds + 1):
        for library in order[round_ % len(order):] + order[:round_ % len(order)]:
            start = time.perf_counter()
            steps[library](opts[library])
            if round_:  # the first round warms every side up
                seconds[library].append(time.perf_counter() - start)
    medians = {k: statistics.median(v) for k, v in seconds.items()}
    best = min(("pyg", "pyg_cached_csr"), key=medians.get)
    return {"model": kind, "rounds": args.rounds, "threads": torch.get_num_threads(),
            "seconds": seconds, "median": medians, "pyg_best_path": best,
            "cached_gap": gap, "pyg_over_graphpe": medians[best] / medians["graphpe"],
            "spread": {k: [min(v), max(v)] for k, v in seconds.items()}}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--accuracy", action="store_true")
    parser.add_argument("--timing", action="store_true")
    parser.add_argument("--dataset", default="Minesweeper",
                        choices=("Minesweeper", "Tolokers", ARXIV),
                        help=f"{ARXIV}: the timing on OGB's arxiv citation graph "
                             "(../shared/data/ogbn-arxiv-graph, its 40 classes)")
    parser.add_argument("--model", default="polynormer",
                        choices=("polynormer", "sgformer", "gcn", "sage"))
    parser.add_argument("--splits", default="all", help="'all' or indices like 0,1,2")
    parser.add_argument("--channels", type=int, default=64)
    parser.add_argument("--layers", type=int, default=3)
    parser.add_argument("--global-layers", type=int, default=2)
    parser.add_argument("--dropout", type=float, default=0.3)
    parser.add_argument("--lr", type=float, default=1e-3)
    parser.add_argument("--epochs", type=int, default=300)
    parser.add_argument("--local-epochs", type=int, default=50)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--root", type=Path,
                        default=Path.home() / ".cache" / "graphpe" / "heterophilous")
    parser.add_argument("--json", type=Path, default=DEFAULT_JSON)
    parser.add_argument("--pyg-head", default="two-class", choices=("two-class", "logit"),
                        help="logit: PyG's SGFormer with graphpe's head (one logit, binary "
                             "cross-entropy), beside graphpe's runs of the two-class entry")
    args = parser.parse_args(argv)
    if not (args.accuracy or args.timing):
        parser.error("give --accuracy, --timing or both")
    if args.pyg_head == "logit" and (args.model != "sgformer" or args.timing):
        parser.error("--pyg-head logit is an accuracy check of SGFormer's head: give "
                     "--accuracy --model sgformer")
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    import torch

    torch.set_num_threads(1)
    if args.dataset == ARXIV:
        if args.accuracy:
            parser.error(f"{ARXIV} has no fixed splits to compare over: give --timing")
        root = args.root
    else:
        root = prepared_root(args.root, args.dataset)
    result = json.loads(args.json.read_text()) if args.json.exists() else {}
    settings = {k: getattr(args, k) for k in ("dataset", "model", "channels", "layers",
                                              "global_layers", "dropout", "lr", "epochs",
                                              "local_epochs", "seed")}
    key = f"{args.dataset}-{args.model}"
    base = result.get(key)
    if args.pyg_head == "logit":  # graphpe's side is the two-class entry's, split for split
        key += "-pyg-logit"
    entry = result.setdefault(key, {"settings": settings, "rows": []})
    if entry["settings"] != settings:
        if entry["rows"]:
            differ = {k: (entry["settings"].get(k), v) for k, v in settings.items()
                      if entry["settings"].get(k) != v}
            sys.exit(f"{args.json}: {key} holds {len(entry['rows'])} runs at other settings "
                     f"(theirs, these: {differ}); give the same settings to add to them, or "
                     "another --json")
        entry["settings"] = settings
    if args.accuracy:
        from graphpe.compare import parse_splits
        from graphpe.datasets.heterophilous import archive_path, read_split_archive, split_count

        graph = read_split_archive(archive_path(args.dataset, root))
        splits = split_count(graph)
        done = {(r["library"], r["split"]) for r in entry["rows"]}
        for split in parse_splits(args.splits, splits, args.dataset):
            for library in ("pyg", "graphpe"):
                if (library, split) in done:
                    continue
                if library == "graphpe" and args.pyg_head == "logit":
                    if base is None or base["settings"] != settings:
                        continue
                    entry["rows"] += [r for r in base["rows"]
                                      if r["library"] == "graphpe" and r["split"] == split]
                    continue
                row = pyg_split(args.model, graph, split, args) if library == "pyg" else \
                    graphpe_split(args.model, root, split, args)
                entry["rows"].append(row)
                print(json.dumps(row), flush=True)
                entry["summary"] = summary(entry["rows"])
                args.json.parent.mkdir(parents=True, exist_ok=True)
                args.json.write_text(json.dumps(result, indent=1))
        entry["summary"] = summary(entry["rows"])
    if args.timing:
        entry["timing"] = timing(args.model, root, args)
        print(json.dumps({k: entry["timing"][k] for k in ("median", "pyg_over_graphpe")}))
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(result, indent=1))
    print(json.dumps(entry.get("summary", {}), indent=1))


if __name__ == "__main__":
    main()
