"""Link prediction on Cora and CiteSeer: a GCN / GraphSAGE link predictor with and without node
encodings and pair features, over seeded random link splits, beside the graph autoencoders'
published numbers.

    python benchmarks/link_planetoid.py                      # the grid below, resumable
    python benchmarks/link_planetoid.py --datasets Cora --models gcn --pes none,lap --seeds 2
    python benchmarks/link_planetoid.py --models seal --pes drnl --pairs off   # SEAL (below)
    python benchmarks/link_planetoid.py --models gcn --pes none --pairs spd+cn+ppr+resistance

The protocol is Kipf & Welling's ("Variational graph auto-encoders", NIPS 2016 workshop, Table
1): 85 / 5 / 10 % of the undirected edges for training / validation / test, as many sampled
non-edges as held-out edges (PyG's ``RandomLinkSplit``, one split per seed), test ROC-AUC and
average precision; Hits@K (OGB's count) is reported beside them. The model
(:func:`graphpe.link.fit_link`): ``--layers`` graph convolutions ``--channels`` wide with
dropout 0.5 and a linear output, a decoder ``MLP(h_u * h_v || f(u, v))`` (``--decoder dot``: the
graph autoencoders' inner product plus a linear map of ``f``), the pair features ``f`` of
``--pairs`` (``on``: the capped distance with the pair's own edge set aside, common neighbours,
Adamic-Adar, resource allocation; ``off``: none; or names of
``graphpe.ops.link_features.PAIR_FEATURES`` joined by ``+``); full batch, Adam at ``--lr``,
``--epochs`` epochs with patience ``--patience``, the test metrics at the best validation
ROC-AUC. ``--models seal`` trains SEAL instead (:func:`graphpe.link.fit_seal`, settings in
:data:`SEAL`), its ``--pes`` the node labels of the enclosing subgraphs. Each split seed also
seeds the model. One thread.

Rows go to ``--json`` (default ``benchmarks/results/link_planetoid.json``) as they finish; a
rerun skips the rows it holds at the same settings. The data: PyG's Planetoid files, copied
from ``../shared/data/planetoid`` into ``--root`` (skipped with its reason where absent).
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS"):
    os.environ[_var] = "1"

import argparse  # noqa: E402
import dataclasses  # noqa: E402
import json  # noqa: E402
import shutil  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
from pathlib import Path  # noqa: E402

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from common import DEFAULT_SHARED  # noqa: E402

from graphpe.datasets.heart import HEURISTICS  # noqa: E402  (``--models heuristic``'s names)

DEFAULT_JSON = HERE / "results" / "link_planetoid.json"
HEART_JSON = HERE / "results" / "link_heart.json"
HEART_PUBLISHED = {
    "source": "Li et al., Evaluating Graph Neural Networks for Link Prediction: Current "
              "Pitfalls and New Benchmarking, NeurIPS 2023 (HeaRT), Table 3: its numbers "
              "could not be read offline here, so none is quoted; its own split files and "
              "Andersen-push PageRank differ from this benchmark's (graphpe.datasets.heart)",
    "rows": []}
#: Kipf & Welling (2016), Table 1: test ROC-AUC and AP (%), mean ± std over 10 runs
PUBLISHED = {
    "source": "Kipf & Welling, Variational Graph Auto-Encoders, NIPS 2016 Bayesian deep "
              "learning workshop, Table 1 (arXiv:1611.07308)",
    "rows": [
        {"model": "GAE", "dataset": "Cora", "rocauc": [91.0, 0.02], "ap": [92.0, 0.03]},
        {"model": "VGAE", "dataset": "Cora", "rocauc": [91.4, 0.01], "ap": [92.6, 0.01]},
        {"model": "GAE", "dataset": "CiteSeer", "rocauc": [89.5, 0.04], "ap": [89.9, 0.05]},
        {"model": "VGAE", "dataset": "CiteSeer", "rocauc": [90.8, 0.02], "ap": [92.0, 0.02]},
    ]}


#: SEAL's settings (``--models seal``; its ``--pes`` are the labels: drnl, de, de+): a GIN
#: over each pair's 2-hop enclosing subgraph, PyG's SEAL example's size (32 channels, 3
#: layers, batches of 32 pairs there, 128 here), Adam at lr 1e-3, at most 30 epochs with
#: patience 10 (PyG's example: 50 epochs of a DGCNN at lr 1e-4)
SEAL = {"model": {"hops": 2, "channels": 32, "layers": 3, "batch_pairs": 128, "dropout": 0.5},
        "fit": {"epochs": 30, "patience": 10, "lr": 1e-3}}
SEAL_LABELS = ("drnl", "de", "de+")


def prepared_root(root: Path, name: str, shared: Path = DEFAULT_SHARED) -> Path:
    """``root`` holding ``name``'s Planetoid files, copied from the shared data."""
    if not (root / name / "raw").is_dir():
        source = shared / "planetoid" / name
        if not source.is_dir():
            sys.exit(f"{source} not found: this benchmark reads PyG's Planetoid files of "
                     f"{name} (give --shared, or --root a folder in PyG's layout)")
        shutil.copytree(source / "raw", root / name / "raw", dirs_exist_ok=True)
    return root


#: the --pairs of the first grid: off and on (its rows keep these keys)
PAIR_SETS = {"off": False, "on": True}


def pair_feature_set(pairs: bool | str, max_dist: int):
    """The features of a row's ``pairs``: none (False), the default set (True) or the names
    joined by ``+``."""
    from graphpe.ops.link_features import PairFeatureSet

    if isinstance(pairs, bool):
        return PairFeatureSet(max_dist=max_dist) if pairs else PairFeatureSet(())
    return PairFeatureSet(tuple(pairs.split("+")), max_dist)


def settings_of(args: argparse.Namespace) -> dict:
    return {k: getattr(args, k) for k in ("channels", "layers", "dropout", "lr", "epochs",
                                          "patience", "max_dist", "decoder", "negatives")}


def heuristic_row(split, name: str, seed: int) -> dict:
    """A heuristic's own scores of the held-out pairs (no training): resource allocation,
    personalized PageRank or feature cosine, as HeaRT's negatives rank nodes
    (:class:`graphpe.datasets.heart.HeuristicScores` on the training graph; for the test
    pairs the validation edges join it)."""
    import numpy as np
    import torch

    from graphpe.datasets.heart import HeuristicScores
    from graphpe.ops.link import adjacency

    n, features = split.num_nodes, split.graph.x.double().numpy()
    row = {"dataset": split.name, "model": "heuristic", "split_seed": seed,
           "seconds_per_epoch": 0.0, "pe_seconds": 0.0, "best_epoch": None}
    for part in ("val", "test"):
        known = split.train_pos if part == "val" else torch.cat([split.train_pos,
                                                                 split.val_pos], 1)
        scorer = HeuristicScores(adjacency(known, n), features)
        pairs, labels = split.targets(part)
        scores = np.empty(pairs.size(1))
        sources, inverse = np.unique(pairs[0].numpy(), return_inverse=True)
        for lo in range(0, sources.size, 512):
            block = scorer.score(name, sources[lo:lo + 512])
            mine = (inverse >= lo) & (inverse < lo + 512)
            scores[mine] = block[inverse[mine] - lo, pairs[1].numpy()[mine]]
        positive = labels.numpy() > 0
        row[part] = split.metrics(scores[positive], scores[~positive])
    return row


def summary(rows: list[dict], metric: str = "rocauc") -> list[dict]:
    """Mean ± std over seeds per (dataset, model, pe, pairs) of each test metric, and the
    paired difference of the test ``metric`` to the same model without encodings or pair
    features (``<metric>_vs_plain``)."""
    cells: dict[tuple, list[dict]] = {}
    for row in rows:
        cells.setdefault((row["dataset"], row["model"], row["pe_name"], row["pairs"]),
                         []).append(row)
    out = []
    for (dataset, model, pe, pairs), runs in cells.items():
        entry = {"dataset": dataset, "model": model, "pe": pe, "pairs": pairs,
                 "seeds": len(runs), "seconds_per_epoch": statistics.median(
                     r["seconds_per_epoch"] for r in runs),
                 "pe_seconds": statistics.median(r["pe_seconds"] for r in runs)}
        for name in runs[0]["test"]:
            values = [r["test"][name] for r in runs]
            entry[name] = [statistics.mean(values),
                           statistics.stdev(values) if len(values) > 1 else 0.0]
        base = {r["split_seed"]: r["test"][metric] for r in cells.get(
            (dataset, model, "none", False), [])}
        diffs = [r["test"][metric] - base[r["split_seed"]] for r in runs
                 if r["split_seed"] in base]
        if (pe, pairs) != ("none", False) and len(diffs) > 1:
            se = statistics.stdev(diffs) / len(diffs) ** 0.5
            entry[f"{metric}_vs_plain"] = [statistics.mean(diffs), se,
                                           abs(statistics.mean(diffs)) > 2 * se]
        out.append(entry)
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--datasets", default="Cora,CiteSeer")
    parser.add_argument("--models", default="gcn,sage")
    parser.add_argument("--pes", default="none,lap,rwse")
    parser.add_argument("--pairs", default="off,on",
                        help="comma-separated pair feature sets: off, on (spd+cn), or names "
                             "joined by '+' (spd+cn+ppr+resistance)")
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--channels", type=int, default=128)
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--dropout", type=float, default=0.5)
    parser.add_argument("--lr", type=float, default=0.01)
    parser.add_argument("--epochs", type=int, default=200)
    parser.add_argument("--patience", type=int, default=50)
    parser.add_argument("--max-dist", type=int, default=3)
    parser.add_argument("--decoder", default="mlp", choices=("mlp", "dot"))
    parser.add_argument("--root", type=Path, default=Path.home() / ".cache" / "graphpe")
    parser.add_argument("--shared", type=Path, default=DEFAULT_SHARED)
    parser.add_argument("--negatives", default="random", choices=("random", "heart"),
                        help="the held-out edges' negatives: random (one each, ROC-AUC) or "
                             "HeaRT's 500 hard ones each (MRR; --json defaults to "
                             "results/link_heart.json; --models heuristic scores the pairs "
                             "by each of --pes ra, ppr, cos without training)")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args(argv)
    if args.json is None:
        args.json = DEFAULT_JSON if args.negatives == "random" else HEART_JSON
    import torch

    from graphpe.datasets.heart import heart_split
    from graphpe.datasets.link import load_link_dataset
    from graphpe.link import fit_link, fit_seal
    from graphpe.train_config import TrainConfig

    torch.set_num_threads(1)
    settings = settings_of(args)
    result = json.loads(args.json.read_text()) if args.json.exists() else {}
    if "settings" in result:  # grids run before --negatives existed drew random ones
        result["settings"] = {"negatives": "random", **result["settings"]}
    if result.get("rows") and result.get("settings") != settings:
        differ = {k: (result["settings"].get(k), v) for k, v in settings.items()
                  if result["settings"].get(k) != v}
        sys.exit(f"{args.json} holds {len(result['rows'])} rows at other settings "
                 f"(theirs, these: {differ}); give the same settings to add to them, or "
                 "another --json")
    result.setdefault("rows", [])
    result["settings"] = settings
    result.update(published=PUBLISHED if args.negatives == "random" else HEART_PUBLISHED,
                  command="python benchmarks/link_planetoid.py" + (
                      "" if args.negatives == "random" else " --negatives heart"))
    metric = "rocauc" if args.negatives == "random" else "mrr"
    done = {(r["dataset"], r["model"], r["pe_name"], r["pairs"], r["split_seed"])
            for r in result["rows"]}
    config = TrainConfig(epochs=args.epochs, lr=args.lr, weight_decay=0.0, optimizer="adam",
                         patience=args.patience, progress=False)
    for dataset in args.datasets.split(","):
        root = prepared_root(args.root, dataset, args.shared)
        for seed in range(args.seeds):
            split = load_link_dataset(dataset, root, seed=seed)
            if args.negatives == "heart":
                split = heart_split(split, seed=seed)
            for model in args.models.split(","):
                for pe in args.pes.split(","):
                    for pairs in [PAIR_SETS.get(p, p) for p in args.pairs.split(",")]:
                        if (dataset, model, pe, pairs, seed) in done:
                            continue
                        if model == "heuristic":  # pe names the heuristic
                            if pairs or pe not in HEURISTICS:
                                continue
                            row = heuristic_row(split, pe, seed)
                        elif pe in HEURISTICS:  # the heuristics' names: no encodings
                            continue
                        elif model == "seal":  # pe names the labels; no pair features
                            if pairs or pe not in SEAL_LABELS:
                                continue
                            row = fit_seal(split, labels=pe, **SEAL["model"],
                                           config=dataclasses.replace(
                                               config, seed=seed, **SEAL["fit"]))
                        else:
                            row = fit_link(split, () if pe == "none" else (pe,), model,
                                           args.channels, args.layers,
                                           pair_features=pair_feature_set(pairs,
                                                                          args.max_dist),
                                           decoder=args.decoder,
                                           config=dataclasses.replace(config, seed=seed),
                                           dropout=args.dropout, head_hidden=[])
                        row.update(pe_name=pe, pairs=pairs, dataset=dataset)
                        result["rows"].append(row)
                        result["summary"] = summary(result["rows"], metric)
                        args.json.parent.mkdir(parents=True, exist_ok=True)
                        args.json.write_text(json.dumps(result, indent=1))
                        print(f"{dataset} {model} {pe} pairs={pairs} seed {seed}: test "
                              + ", ".join(f"{k} {v:.4f}" for k, v in row["test"].items()),
                              flush=True)
    if result["rows"]:  # the summary from every row, also where none was added
        result["summary"] = summary(result["rows"], metric)
        args.json.write_text(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
