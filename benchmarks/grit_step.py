"""GRIT training step on ZINC: graphpe's compiled pair kernels against the same model written
as torch operations (the formulation of GRIT's own code: gathers, elementwise products, the
signed square root, a scatter softmax and scatter sums over the pair list).

    python benchmarks/grit_step.py --threads 1

One model (GRIT 4 x 64, 4 heads, RRWP K=21 over all pairs, batch 128), the same weights and
batches; the two paths take turns within each round (``GRITAttention.use_kernels``), and the
median over rounds is reported, with the pairs per batch and the step's forward, backward and
optimizer milliseconds. The tests check that both paths give the same values and gradients.
With ``--device cuda`` only the torch formulation runs (the compiled kernels are CPU code).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import DEFAULT_ROOT, DEFAULT_SHARED, place  # noqa: E402
from train_step_breakdown import phases  # noqa: E402

from graphpe.nn import GRITAttention  # noqa: E402
from graphpe.nn.build import build_model  # noqa: E402


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--batch-size", type=int, default=128)
    ap.add_argument("--steps", type=int, default=4, help="steps per path per round")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--num-steps", type=int, default=21, help="RRWP K")
    ap.add_argument("--root", type=Path, default=DEFAULT_ROOT)
    ap.add_argument("--shared", type=Path, default=DEFAULT_SHARED)
    ap.add_argument("--json", type=Path, default=Path("benchmarks/results/grit_step.json"))
    args = ap.parse_args(argv)
    torch.set_num_threads(args.threads)
    if not place("ZINC", args.root, args.shared):
        print("[skip] no offline ZINC copy: nothing measured", file=sys.stderr)
        return
    from torch_geometric.loader import DataLoader

    from graphpe.datasets import load_dataset
    from graphpe.transforms import RRWP, precompute

    bundle = load_dataset("ZINC", args.root)
    graphs = precompute(bundle.train[: args.batch_size * (args.steps + 1)],
                        RRWP(args.num_steps), progress=False)
    device = torch.device(args.device)
    batches = [b.to(device) for b in DataLoader(graphs, batch_size=args.batch_size)]
    warm, timed = batches[:1], batches[1:]
    torch.manual_seed(0)
    model = build_model({"model": "grit", "channels": 64, "layers": 4, "heads": 4,
                         **bundle.model_kwargs(),
                         "pair": {"rrwp": {"num_steps": args.num_steps}}}).to(device).train()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    attentions = [m for m in model.modules() if isinstance(m, GRITAttention)]
    paths = {"torch operations": False, "graphpe compiled kernels": True}
    if device.type != "cpu":
        paths = {f"torch operations ({device.type})": False}
    per_round = {name: {"forward": [], "backward": [], "optimizer": []} for name in paths}
    for r in range(args.rounds + 1):  # round 0 warms both paths up (and compiles)
        for name, use_kernels in paths.items():
            for a in attentions:
                a.use_kernels = use_kernels
            for b in warm:
                phases(model, opt, b, device)
            sums = [0.0, 0.0, 0.0]
            for b in timed:
                for i, t in enumerate(phases(model, opt, b, device)):
                    sums[i] += t
            if r:
                for key, total in zip(("forward", "backward", "optimizer"), sums, strict=True):
                    per_round[name][key].append(total / len(timed) * 1e3)
    pairs = statistics.mean(b.rrwp.size(0) for b in timed)
    where = (f"CPU, {args.threads} thread(s)" if device.type == "cpu"
             else torch.cuda.get_device_name(device))
    print(f"GRIT training step, ZINC, batch {args.batch_size} ({pairs:,.0f} pairs), {where}: "
          f"median of {args.rounds} rounds x {len(timed)} steps (ms)")
    print(f"{'':<28}{'forward':>9}{'backward':>10}{'optimizer':>11}{'step':>8}{'speedup':>9}")
    rows, base = [], None
    for name in paths:
        med = {k: statistics.median(v) for k, v in per_round[name].items()}
        step = sum(med.values())
        base = step if base is None else base
        rows.append({"path": name, **{f"{k}_ms": round(v, 2) for k, v in med.items()},
                     "step_ms": round(step, 2), "speedup": round(base / step, 2)})
        print(f"{name:<28}{med['forward']:>9.1f}{med['backward']:>10.1f}"
              f"{med['optimizer']:>11.1f}{step:>8.1f}{base / step:>8.2f}x")
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps({
        "command": " ".join(["python benchmarks/grit_step.py",
                             *(sys.argv[1:] if argv is None else argv)]),
        "device": args.device, "threads": args.threads, "batch_size": args.batch_size,
        "pairs_per_batch": pairs, "rounds": args.rounds, "steps": len(timed),
        "torch": torch.__version__, "rows": rows}, indent=2))
    print(f"wrote {args.json}")


if __name__ == "__main__":
    main()
