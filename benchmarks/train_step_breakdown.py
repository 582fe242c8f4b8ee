"""Where a GPS training step's time goes: PyG's example model against graphpe's GPS, phase by
phase, and what graphpe's attention core costs.

    python benchmarks/train_step_breakdown.py --threads 1

Same models, batches and optimizer (plain Adam) as ``benchmarks/train_step.py``. Reports, as
medians over rounds in which the variants take turns:

- forward, backward and optimizer milliseconds per step for both models;
- graphpe's step module by module (``GPSLayer.fused = False``: every submodule its own
  autograd node), against the default one autograd node per layer (:mod:`graphpe.layers.fused`);
- graphpe's module-by-module step with its attention core replaced (diagnostics, not models:
  their outputs are wrong): without the attention-weight dropout, and with the core (scores,
  softmax, dropout, ``PV`` and their backward) replaced by passing ``V`` through;
- the step on a batch of one small graph (the smallest loaded), for both models: the cost that
  does not grow with the batch (dispatch, autograd bookkeeping, Python);
- the share of the step that matrix products take (``mm``, ``addmm``, ``bmm``, ``baddbmm``;
  self CPU time under ``torch.profiler``), and the rate of the linear layers' products
  timed alone on a batch's node count (GFLOP/s).

It says how far graphpe's step is from the issue-12 target (2x PyG on the CPU): the products
are a floor no re-arrangement removes, the rest is what fusion could still save.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import DEFAULT_ROOT, DEFAULT_SHARED  # noqa: E402
from train_step import PygGPS, graphpe_gps, load_zinc, sync  # noqa: E402

import graphpe.layers.attention as attention  # noqa: E402

CPU = torch.device("cpu")
MATMULS = ("aten::mm", "aten::addmm", "aten::bmm", "aten::baddbmm")


def phases(model, opt, batch, device: torch.device = CPU) -> tuple[float, float, float]:
    """Forward, backward and optimizer seconds of one training step (the device synchronized
    between phases)."""
    def now():
        sync(device)
        return time.perf_counter()

    t0 = now()
    opt.zero_grad(set_to_none=True)
    loss = (model(batch).squeeze(-1) - batch.y).abs().mean()
    t1 = now()
    loss.backward()
    t2 = now()
    opt.step()
    return t1 - t0, t2 - t1, now() - t2


def pass_values(qkv, layout, heads, dropout, pair_bias=None, pair_slots=None):
    """Diagnostic stand-in for the attention core: the values, unattended."""
    return qkv[:, 2 * qkv.size(1) // 3:] * 1.0


def matmul_share(model, opt, batches) -> dict:
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU]) as prof:
        for b in batches:
            phases(model, opt, b)
    events = prof.key_averages()
    total = sum(e.self_cpu_time_total for e in events)
    mm = sum(e.self_cpu_time_total for e in events if e.key in MATMULS)
    return {"matmul_share": mm / total, "matmul_ms_per_step": mm / 1e3 / len(batches)}


def linear_product_rate(nodes: int, channels: int = 64, repeats: int = 200) -> float:
    """GFLOP/s of the GPS layer's linear maps (``channels`` -> channels, 2 channels, 3
    channels and back) on ``nodes`` rows, timed alone: how fast this CPU runs the step's
    products when nothing else is in the way."""
    import torch.nn.functional as F

    shapes = [(channels, channels), (channels, 2 * channels), (2 * channels, channels),
              (channels, 3 * channels)]
    flops, seconds = 0.0, 0.0
    for d_in, d_out in shapes:
        x, w = torch.randn(nodes, d_in), torch.randn(d_out, d_in)
        for _ in range(20):  # warm-up
            F.linear(x, w)
        start = time.perf_counter()
        for _ in range(repeats):
            F.linear(x, w)
        seconds += time.perf_counter() - start
        flops += 2.0 * nodes * d_in * d_out * repeats
    return flops / seconds / 1e9


def one_graph_steps(models: dict, opts: dict, graph_batch, rounds: int,
                    steps: int = 20) -> dict[str, float]:
    """Median ms of a step (forward, backward, optimizer) on a batch of one small graph, the
    models taking turns: the part of a step that does not grow with the batch (dispatch,
    autograd bookkeeping, Python)."""
    times = {name: [] for name in models}
    for r in range(rounds + 1):  # round 0 warms up
        for name, model in models.items():
            start = time.perf_counter()
            for _ in range(steps):
                phases(model, opts[name], graph_batch)
            if r:
                times[name].append((time.perf_counter() - start) / steps * 1e3)
    return {name: round(statistics.median(t), 2) for name, t in times.items()}


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--steps", type=int, default=10, help="steps per variant per round")
    ap.add_argument("--rounds", type=int, default=6)
    ap.add_argument("--root", type=Path, default=DEFAULT_ROOT)
    ap.add_argument("--shared", type=Path, default=DEFAULT_SHARED)
    ap.add_argument("--json", type=Path,
                    default=Path("benchmarks/results/train_step_breakdown.json"))
    args = ap.parse_args(argv)
    torch.set_num_threads(args.threads)
    graphs = load_zinc(args.root, args.shared, args.batch_size * (args.steps + 2), 20)
    if graphs is None:
        print("[skip] no offline ZINC copy: nothing measured", file=sys.stderr)
        return
    from torch_geometric.loader import DataLoader

    batches = list(DataLoader(graphs, batch_size=args.batch_size))
    warm, timed = batches[:2], batches[2:]
    torch.manual_seed(0)
    models = {"pyg GPSConv": PygGPS(), "graphpe": graphpe_gps()}
    opts = {name: torch.optim.Adam(m.train().parameters(), lr=1e-3)
            for name, m in models.items()}
    core = attention._attention_core

    def no_dropout(qkv, layout, heads, dropout, pair_bias=None, pair_slots=None):
        return core(qkv, layout, heads, 0.0, pair_bias, pair_slots)

    variants = {  # (model, attention core, layers fused)
        "pyg GPSConv": ("pyg GPSConv", core, False),
        "graphpe": ("graphpe", core, True),
        "graphpe, module by module": ("graphpe", core, False),
        # the diagnostics change the core the module path calls
        "graphpe, no attention dropout": ("graphpe", no_dropout, False),
        "graphpe, no attention core": ("graphpe", pass_values, False),
    }
    per_round = {name: {"forward": [], "backward": [], "optimizer": []} for name in variants}
    try:
        for r in range(args.rounds + 1):  # round 0 warms every variant up
            for name, (model, use_core, fused) in variants.items():
                attention._attention_core = use_core
                for layer in getattr(models[model], "layers", ()):
                    layer.fused = fused
                for b in warm:
                    phases(models[model], opts[model], b)
                sums = [0.0, 0.0, 0.0]
                for b in timed:
                    for i, t in enumerate(phases(models[model], opts[model], b)):
                        sums[i] += t
                if r:
                    for key, total in zip(("forward", "backward", "optimizer"), sums,
                                          strict=True):
                        per_round[name][key].append(total / len(timed) * 1e3)
    finally:
        attention._attention_core = core
        for layer in models["graphpe"].layers:
            layer.fused = True
    shares = {name: matmul_share(models[name], opts[name], timed) for name in models}
    nodes = round(statistics.mean(b.num_nodes for b in timed))
    rate = linear_product_rate(nodes)
    smallest = min(graphs, key=lambda g: g.num_nodes)
    one_graph = one_graph_steps(models, opts, next(iter(DataLoader([smallest], batch_size=1))),
                                args.rounds)

    rows = []
    base = None
    print(f"GPS training step, ZINC, batch {args.batch_size}, CPU, {args.threads} thread(s): "
          f"median of {args.rounds} rounds x {len(timed)} steps (ms)")
    print(f"{'':<32}{'forward':>9}{'backward':>10}{'optimizer':>11}{'step':>8}{'vs PyG':>8}")
    for name in variants:
        med = {k: statistics.median(v) for k, v in per_round[name].items()}
        step = sum(med.values())
        base = step if base is None else base
        row = {"variant": name, **{f"{k}_ms": round(v, 2) for k, v in med.items()},
               "step_ms": round(step, 2), "speedup_vs_pyg": round(base / step, 2),
               "diagnostic": name.startswith("graphpe, no ")}
        if name in shares:
            row.update({k: round(v, 3) for k, v in shares[name].items()})
        rows.append(row)
        print(f"{name:<32}{med['forward']:>9.1f}{med['backward']:>10.1f}"
              f"{med['optimizer']:>11.1f}{step:>8.1f}{base / step:>7.2f}x")
    for name, share in shares.items():
        print(f"{name}: matrix products {share['matmul_ms_per_step']:.1f} ms per step "
              f"({share['matmul_share']:.0%} of its self CPU time under the profiler)")
    print(f"the linear layers' products alone on {nodes} rows: {rate:.0f} GFLOP/s")
    print(f"a step on one {smallest.num_nodes}-node graph (what does not grow with the batch): "
          + ", ".join(f"{name} {ms:.1f} ms" for name, ms in one_graph.items()))
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps({
        "command": " ".join(["python benchmarks/train_step_breakdown.py",
                             *(sys.argv[1:] if argv is None else argv)]),
        "threads": args.threads, "batch_size": args.batch_size, "rounds": args.rounds,
        "steps": len(timed), "torch": torch.__version__, "rows": rows,
        "nodes_per_batch": nodes, "linear_gflops": round(rate, 1),
        "one_graph": {"nodes": smallest.num_nodes, "step_ms": one_graph}}, indent=2))
    print(f"wrote {args.json}")


if __name__ == "__main__":
    main()
