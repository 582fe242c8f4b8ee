"""SPE encoder training step: graphpe's ``SPEEncoder`` (every graph's real pair rows in one
GIN, no padding) against the same encoder in the SPE authors' layout (each node's rows of
``W`` padded to the batch's largest graph, a mask through the GIN, its batch norms and the
sum over columns; graphpe's layout before this benchmark).

    python benchmarks/spe_step.py --threads 1

SPE (Huang et al., ICLR 2024): ``W = V diag(phi(lambda)) V^T`` per graph, ``[n, n, m]``,
then ``rho``, a GIN over the graph with the ``n`` columns as a batch axis, summed over the
columns. ``paper``: the paper's ZINC encoder (all 37 eigenpairs, ``m = 16``, ``rho`` 8 x
128), batch 128; ``preset``: graphpe's ``spe`` preset (k = 8, ``m = 8``, ``rho`` 2 x 32),
batch 32. Both rows run the same modules with the same parameters on the same ZINC-12k
batches (``LaplacianPE(k, keep_trivial=True)``), forward, backward (a squared-output loss)
and a plain ``Adam`` step, the layouts taking turns within each round; medians over rounds.
The padded row is written here with torch operations as the authors' code does (their loop
over graphs that builds and pads ``W`` is left out: one batched product instead).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import torch
from torch import Tensor

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import DEFAULT_ROOT, DEFAULT_SHARED, place  # noqa: E402

from graphpe.nn import SPEEncoder  # noqa: E402

SHAPES = {
    "paper": {"k": 37, "m": 16, "rho_hidden": 128, "rho_layers": 8, "batch_size": 128},
    "preset": {"k": 8, "m": 8, "rho_hidden": 32, "rho_layers": 2, "batch_size": 32},
}


def padded_spe(enc: SPEEncoder, batch) -> Tensor:
    """``enc``'s output computed in the authors' padded layout: ``[N, n_max, m]`` rows of
    ``W`` per node, the GIN's messages gathered and ``index_add``-ed over whole padded
    blocks, batch norms over the entries a mask keeps, padding zeroed after every layer."""
    vecs, vals, mask = batch.lap_pe, batch.lap_eigvals, batch.lap_mask
    graph, ptr = batch.batch, batch.ptr
    counts = ptr[1:] - ptr[:-1]
    n_max = int(counts.max())
    weights = enc.phi(vals[ptr[:-1]].unsqueeze(-1)) * mask[ptr[:-1]].unsqueeze(-1)
    dense = vecs.new_zeros(counts.numel(), n_max, enc.k)
    dense[graph, torch.arange(vecs.size(0), device=vecs.device) - ptr[graph]] = vecs
    h = torch.bmm(dense[graph], vecs.unsqueeze(-1) * weights[graph])  # [N, n_max, m]
    keep = (torch.arange(n_max, device=h.device) < counts[graph].unsqueeze(1)).unsqueeze(-1)
    keep = keep.to(h.dtype)
    h = h * keep
    src, dst = batch.edge_index
    rho = enc.rho
    for layer, mlp in enumerate(rho.mlps):
        agg = torch.zeros_like(h).index_add_(0, dst, h[src])
        h = mlp((1 + rho.eps[layer]) * h + agg)
        if layer < len(rho.mlps) - 1:
            flat = h.reshape(-1, h.size(-1))
            real = keep.expand(*h.shape[:-1], 1).reshape(-1).bool()
            out = torch.zeros_like(flat)
            out[real] = rho.norms[layer](flat[real])
            h = torch.relu(out.view_as(h))
        h = h * keep
    return enc.out(enc.out_norm(h.sum(1)))


def load_batches(root: Path, shared: Path, k: int, batch_size: int, count: int):
    """``count`` ZINC-12k train batches with ``LaplacianPE(k, keep_trivial=True)``; None
    without the offline copy."""
    if not place("ZINC", root, shared):
        return None
    from torch_geometric.datasets import ZINC
    from torch_geometric.loader import DataLoader

    from graphpe.transforms import LaplacianPE

    dataset = ZINC(str(root / "ZINC"), subset=True, split="train")
    graphs = [dataset[i] for i in range(batch_size * count)]
    return [LaplacianPE(k, keep_trivial=True)(b) for b in DataLoader(graphs, batch_size)]


def make_step(enc: SPEEncoder, forward, device: torch.device):
    opt = torch.optim.Adam(enc.parameters(), lr=1e-3)

    def step(batch) -> None:
        opt.zero_grad(set_to_none=True)
        forward(enc, batch).square().mean().backward()
        opt.step()
        if device.type == "cuda":  # the step's time, not its launch
            torch.cuda.synchronize(device)

    return step


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--device", default="cpu", help="cpu, cuda, cuda:1, ...")
    ap.add_argument("--shapes", default="paper,preset")
    ap.add_argument("--steps", type=int, default=2, help="steps per layout per round")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--limit-batch", type=int, default=None,
                    help="graphs per batch instead of the shape's (smoke runs)")
    ap.add_argument("--root", type=Path, default=DEFAULT_ROOT)
    ap.add_argument("--shared", type=Path, default=DEFAULT_SHARED)
    ap.add_argument("--json", type=Path, default=Path("benchmarks/results/spe_step.json"))
    args = ap.parse_args(argv)
    torch.set_num_threads(args.threads)
    device = torch.device(args.device)
    rows = []
    for shape in args.shapes.split(","):
        config = dict(SHAPES[shape])
        batch_size = args.limit_batch or config["batch_size"]
        del config["batch_size"]
        batches = load_batches(args.root, args.shared, config["k"], batch_size, args.steps + 1)
        if batches is None:
            print("[skip] no offline ZINC copy: nothing measured", file=sys.stderr)
            return
        batches = [b.to(device) for b in batches]
        warm, timed = batches[:1], batches[1:]
        torch.manual_seed(0)
        encoders = {"padded (authors' layout)": SPEEncoder(config["k"], 64, **{
            key: config[key] for key in ("m", "rho_hidden", "rho_layers")})}
        encoders["graphpe"] = SPEEncoder(config["k"], 64, **{
            key: config[key] for key in ("m", "rho_hidden", "rho_layers")})
        encoders["graphpe"].load_state_dict(encoders["padded (authors' layout)"].state_dict())
        encoders = {name: enc.to(device) for name, enc in encoders.items()}
        forwards = {"padded (authors' layout)": padded_spe, "graphpe": SPEEncoder.__call__}
        # the layouts compute the same encoder: checked before timing
        with torch.no_grad():
            a, b = (forwards[name](enc.eval(), warm[0]) for name, enc in encoders.items())
        error = float((a - b).abs().max() / b.abs().max())
        steps = {name: make_step(enc.train(), forwards[name], device)
                 for name, enc in encoders.items()}
        times: dict[str, list[float]] = {name: [] for name in encoders}
        for r in range(args.rounds + 1):  # round 0 warms up
            for name, step in steps.items():
                step(warm[0])
                start = time.perf_counter()
                for batch in timed:
                    step(batch)
                if r:
                    times[name].append((time.perf_counter() - start) / len(timed) * 1e3)
        nodes = sum(b.num_nodes for b in timed) / len(timed)
        pairs = sum(int(((b.ptr[1:] - b.ptr[:-1]) ** 2).sum()) for b in timed) / len(timed)
        padded = sum(b.num_nodes * int((b.ptr[1:] - b.ptr[:-1]).max()) for b in timed) / len(timed)
        base = statistics.median(times["padded (authors' layout)"])
        where = f"CPU, {args.threads} thread(s)" if device.type == "cpu" else str(device)
        print(f"SPE encoder step, {shape} shape ({config}), ZINC batch {batch_size}, {where}: "
              f"median of {args.rounds} rounds x {len(timed)} steps; "
              f"pair rows {pairs:,.0f}, padded rows {padded:,.0f}; largest output difference "
              f"{error:.1e} (relative)")
        for name, values in times.items():
            ms = statistics.median(values)
            rows.append({"shape": shape, **config, "batch_size": batch_size, "layout": name,
                         "ms_per_step": round(ms, 1), "speedup_vs_padded": round(base / ms, 2),
                         "rounds_ms": [round(v, 1) for v in values], "nodes": round(nodes),
                         "pair_rows": round(pairs), "padded_rows": round(padded),
                         "max_relative_difference": error})
            print(f"  {name:<28}{ms:>10.1f} ms{base / ms:>7.2f}x")
    result = {"command": " ".join(["python benchmarks/spe_step.py",
                                   *(sys.argv[1:] if argv is None else argv)]),
              "device": device.type, "threads": args.threads, "rounds": args.rounds,
              "steps": args.steps, "torch": torch.__version__,
              "gpu": torch.cuda.get_device_name(device) if device.type == "cuda" else None,
              "rows": rows}
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(result, indent=2))
    print(f"wrote {args.json}")


if __name__ == "__main__":
    main()
