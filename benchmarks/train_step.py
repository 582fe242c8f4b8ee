"""GPS training step: PyG's example model (``examples/graph_gps.py``: ``GPSConv`` + ``GINEConv``)
against graphpe's GPS of the same shape, on the same ZINC batches, interleaved in one process.

    python benchmarks/train_step.py --threads 1                # CPU, batch 32
    python benchmarks/train_step.py --threads 1 --epoch        # + one full ZINC epoch each
    python benchmarks/train_step.py --device cuda --epoch      # on a GPU
    python benchmarks/train_step.py --compile                  # + torch.compile'd graphpe
    python benchmarks/train_step.py --on-the-fly               # + OnTheFlyPE inside the step

Shape (PyG's example): 10 layers, 64 channels, 4 heads, GINE, attention dropout 0.5, RWPE 20
(PyG's ``AddRandomWalkPE``, computed once before timing), sum pooling, L1 loss, Adam(lr=1e-3).
A step is forward, backward and the optimizer step. Every model sees the same batches; the
models take turns batch by batch (``--rounds`` rounds of ``--steps`` steps each) so drift of the
machine hits all of them alike; the table gives the median over rounds of ms per step and the
ratio ``PyG / model`` (higher is faster).

Models:
- ``pyg GPSConv``: PyG's example, verbatim maths (``to_dense_batch`` + ``nn.MultiheadAttention``).
- ``graphpe padded``: graphpe's ``GPS`` with ``attention_buckets=1``: every graph padded to the
  batch's largest, as ``GPSConv``.
- ``graphpe``: graphpe's ``GPS`` as built by default: attention over size buckets of the batch
  (no padding to the largest graph), one layout per forward, GINE as three tensor calls.

- ``graphpe, fused Adam``: the same with ``Adam(fused=True)`` (one kernel for the update, as
  ``graphpe.train`` runs it); every other row uses the example's plain ``Adam``, so the target
  is judged on ``graphpe``.
- ``graphpe compiled`` (``--compile``): the same model through ``torch.compile(dynamic=True)``;
  the first steps (compilation) are excluded and reported as ``compile_s``.

``--on-the-fly``: graphpe's GPS of the same shape with RWSE(16), LapPE(8) and RFP(16, 8)
encoders on ``--otf-batch-size`` graphs, the PEs precomputed against the same step with the
PEs computed by ``OnTheFlyPE`` inside it (``--otf-draws`` RFP draws, default 1 as ``RFP(16, 8)``).

Targets (issue 12): CPU, 1 thread, batch 32: graphpe >= 2x PyG, compiled >= 3x; GPU: >= 10x
per ZINC epoch; OnTheFlyPE adds < 15% to a GPS step on 128 ZINC graphs (CPU).
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
import time
from pathlib import Path

import torch
from torch import nn

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import DEFAULT_ROOT, DEFAULT_SHARED, place  # noqa: E402

from graphpe.nn import GPS, RWSEEncoder  # noqa: E402
from graphpe.nn.build import build_model  # noqa: E402
from graphpe.transforms import RFP, RWSE, LaplacianPE, OnTheFlyPE  # noqa: E402

TARGET_CPU, TARGET_GPU, TARGET_COMPILED, TARGET_OTF = 2.0, 10.0, 3.0, 0.15


class PygGPS(nn.Module):
    """PyG's ``examples/graph_gps.py`` model (the ``multihead`` attention variant)."""

    def __init__(self, channels: int = 64, pe_dim: int = 8, num_layers: int = 10,
                 walk_length: int = 20, attn_dropout: float = 0.5) -> None:
        super().__init__()
        from torch_geometric.nn import GINEConv, GPSConv

        self.node_emb = nn.Embedding(28, channels - pe_dim)
        self.pe_lin = nn.Linear(walk_length, pe_dim)
        self.pe_norm = nn.BatchNorm1d(walk_length)
        self.edge_emb = nn.Embedding(4, channels)
        self.convs = nn.ModuleList()
        for _ in range(num_layers):
            mlp = nn.Sequential(nn.Linear(channels, channels), nn.ReLU(),
                                nn.Linear(channels, channels))
            self.convs.append(GPSConv(channels, GINEConv(mlp), heads=4, attn_type="multihead",
                                      attn_kwargs={"dropout": attn_dropout}))
        self.mlp = nn.Sequential(
            nn.Linear(channels, channels // 2), nn.ReLU(),
            nn.Linear(channels // 2, channels // 4), nn.ReLU(),
            nn.Linear(channels // 4, 1),
        )

    def forward(self, batch):
        from torch_geometric.nn import global_add_pool

        x = torch.cat((self.node_emb(batch.x.squeeze(-1)),
                       self.pe_lin(self.pe_norm(batch.pe))), 1)
        edge_attr = self.edge_emb(batch.edge_attr)
        for conv in self.convs:
            x = conv(x, batch.edge_index, batch.batch, edge_attr=edge_attr)
        return self.mlp(global_add_pool(x, batch.batch))


def graphpe_gps(attention_buckets: int | None = None, channels: int = 64, num_layers: int = 10,
                walk_length: int = 20, attn_dropout: float = 0.5) -> GPS:
    """graphpe's GPS of the example's shape (RWPE through ``RWSEEncoder`` on ``pe``)."""
    kwargs = {} if attention_buckets is None else {"attention_buckets": attention_buckets}
    return GPS(channels, num_layers, 1, node_vocab=28, edge_vocab=4, heads=4,
               attn_dropout=attn_dropout, norm="batch_norm", pool="sum",
               pe_encoders=[RWSEEncoder(walk_length, channels, attr_name="pe")], **kwargs)


def load_zinc(root: Path, shared: Path, limit: int | None, walk_length: int):
    """ZINC-12k train graphs with PyG's RWPE in ``pe``; None without the offline copy."""
    if not place("ZINC", root, shared):
        return None
    import torch_geometric.transforms as T
    from torch_geometric.datasets import ZINC

    dataset = ZINC(str(root / "ZINC"), subset=True, split="train")
    transform = T.AddRandomWalkPE(walk_length, attr_name="pe")
    count = len(dataset) if limit is None else min(limit, len(dataset))
    return [transform(dataset[i]) for i in range(count)]


def sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def timed(step, batches: list, device: torch.device) -> float:
    """Seconds for ``step`` over ``batches``, the device synchronized on both ends."""
    sync(device)
    start = time.perf_counter()
    for b in batches:
        step(b)
    sync(device)
    return time.perf_counter() - start


def make_step(model: nn.Module, device: torch.device, fused: bool = False,
              autocast: torch.dtype | None = None):
    """Forward, backward and Adam step; ``autocast``: the forward in mixed precision (bfloat16
    or float16 products, the loss in float32; float16 without loss scaling here: the timing is
    the same)."""
    model.to(device).train()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3, fused=fused or None)

    def step(batch) -> None:
        opt.zero_grad(set_to_none=True)
        with torch.autocast(device.type, dtype=autocast or torch.float32,
                            enabled=autocast is not None):
            out = model(batch)
        loss = (out.float().squeeze(-1) - batch.y).abs().mean()
        loss.backward()
        opt.step()

    return step


def make_static_step(model: nn.Module, device: torch.device, shapes: dict, compiled: bool):
    """The step on fixed-shape batches (:class:`graphpe.nn.StaticGPS`): the batch is padded
    inside the step (``static_batch``, counted), the loss is the same L1 mean over the real
    graphs. ``compiled``: one ``torch.compile(fullgraph=True, dynamic=False)`` graph, with
    ``mode='reduce-overhead'`` (CUDA graphs) on CUDA."""
    from graphpe.nn import StaticGPS, static_batch

    model.to(device).train()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    forward = StaticGPS(model)
    if compiled:
        forward = torch.compile(forward, fullgraph=True, dynamic=False,
                                mode="reduce-overhead" if device.type == "cuda" else None)

    def step(batch) -> None:
        sb = static_batch(batch, **shapes)
        if compiled:
            torch.compiler.cudagraph_mark_step_begin()  # a new iteration of captured graphs
        opt.zero_grad(set_to_none=True)
        pred = forward(sb).squeeze(-1)
        loss = ((pred - sb.y).abs() * sb.graph_mask).sum() / sb.graph_count
        loss.backward()
        opt.step()

    return step


def on_the_fly_rows(graphs, device: torch.device, batch_size: int, draws: int, rounds: int,
                     steps: int) -> dict:
    """GPS step with RWSE(16) + LapPE(8) + RFP(16, 8) precomputed vs computed inside it."""
    from torch_geometric.data import Batch

    transforms = [RWSE(16), LaplacianPE(8), RFP(dim=16, steps=8, num_draws=draws, seed=0)]
    torch.manual_seed(0)
    model = build_model({"model": "gps", "channels": 64, "layers": 10, "out_dim": 1,
                         "node_vocab": 28, "edge_vocab": 4, "heads": 4, "attn_dropout": 0.5,
                         "pe": {"rwse": {"walk_length": 16}, "lap": {"k": 8},
                                "rfp": {"dim": 16, "steps": 8}}})
    step = make_step(model, device)
    on_the_fly = OnTheFlyPE(transforms)
    raw = [Batch.from_data_list(graphs[i * batch_size:(i + 1) * batch_size]).to(device)
           for i in range(max(1, min(steps, len(graphs) // batch_size)))]
    pre = [on_the_fly(b) for b in raw]
    for b in pre[:2]:
        step(b)
    times = {"precomputed": [], "on the fly": [], "OnTheFlyPE alone": []}
    for _ in range(rounds):
        for name, fn in (("precomputed", lambda i: step(pre[i])),
                         ("on the fly", lambda i: step(on_the_fly(raw[i]))),
                         ("OnTheFlyPE alone", lambda i: on_the_fly(raw[i]))):
            sync(device)
            t0 = time.perf_counter()
            for i in range(len(raw)):
                fn(i)
            sync(device)
            times[name].append((time.perf_counter() - t0) / len(raw) * 1e3)
    med = {k: statistics.median(v) for k, v in times.items()}
    return {"batch_size": batch_size, "rfp_draws": draws,
            "ms_precomputed": round(med["precomputed"], 2),
            "ms_on_the_fly": round(med["on the fly"], 2),
            "ms_pe_alone": round(med["OnTheFlyPE alone"], 2),
            "overhead": round(med["on the fly"] / med["precomputed"] - 1, 4)}


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--steps", type=int, default=10, help="steps per model per round")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--epoch", action="store_true", help="also time one full ZINC epoch each")
    ap.add_argument("--compile", action="store_true", help="add graphpe through torch.compile")
    ap.add_argument("--static", action="store_true",
                    help="add graphpe on fixed-shape batches (StaticGPS), eager and, with "
                         "--compile, as one compiled graph (CUDA graphs on CUDA)")
    ap.add_argument("--precision", default="",
                    help="mixed-precision rows for both models, comma-separated: bf16, fp16")
    ap.add_argument("--on-the-fly", action="store_true",
                    help="measure OnTheFlyPE inside graphpe's GPS step")
    ap.add_argument("--otf-batch-size", type=int, default=128)
    ap.add_argument("--otf-draws", default="1,4", help="RFP draws, comma-separated")
    ap.add_argument("--limit", type=int, default=None, help="use only the first N graphs")
    ap.add_argument("--root", type=Path, default=DEFAULT_ROOT)
    ap.add_argument("--shared", type=Path, default=DEFAULT_SHARED)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", type=Path, default=Path("benchmarks/results/train_step.json"))
    args = ap.parse_args(argv)
    torch.set_num_threads(args.threads)
    device = torch.device(args.device)
    limit = args.limit
    if limit is None and not args.epoch:
        limit = max(args.batch_size * args.steps * args.rounds,
                    args.otf_batch_size * args.steps if args.on_the_fly else 0)
    graphs = load_zinc(args.root, args.shared, limit, 20)
    if graphs is None:
        print("[skip] no offline ZINC copy: nothing measured", file=sys.stderr)
        return
    from torch_geometric.loader import DataLoader

    batches = [b.to(device) for b in DataLoader(graphs, batch_size=args.batch_size)]
    torch.manual_seed(args.seed)
    models = {
        "pyg GPSConv": PygGPS(),
        "graphpe padded": graphpe_gps(attention_buckets=1),
        "graphpe": graphpe_gps(),
        "graphpe, fused Adam": graphpe_gps(),
    }
    if args.compile:
        torch.manual_seed(args.seed)
        models["graphpe compiled"] = torch.compile(graphpe_gps(), dynamic=True)
    static_names = []
    if args.static:
        from graphpe.nn import static_shapes

        torch.manual_seed(args.seed)
        models["graphpe static"] = graphpe_gps()
        static_names.append("graphpe static")
        if args.compile:
            torch.manual_seed(args.seed)
            models["graphpe static compiled"] = graphpe_gps()
            static_names.append("graphpe static compiled")
        shapes = static_shapes(graphs, args.batch_size)
    # last: on a GPU run with --epoch their epochs come after issue 12's rows
    amp = {}  # row -> autocast dtype
    for precision in filter(None, args.precision.split(",")):
        dtype = {"bf16": torch.bfloat16, "fp16": torch.float16}[precision]
        torch.manual_seed(args.seed)
        models[f"pyg GPSConv {precision}"] = PygGPS()
        models[f"graphpe {precision}"] = graphpe_gps()
        amp.update({f"pyg GPSConv {precision}": dtype, f"graphpe {precision}": dtype})
    params = {name: sum(p.numel() for p in m.parameters()) for name, m in models.items()}
    steps = {name: (make_static_step(m, device, shapes, "compiled" in name)
                    if name in static_names
                    else make_step(m, device, fused="fused" in name, autocast=amp.get(name)))
             for name, m in models.items()}
    compile_s, failed = {}, {}
    for name, step in list(steps.items()):  # warm-up (first-call costs, compilation)
        sync(device)
        t0 = time.perf_counter()
        try:
            for b in batches[:3]:
                step(b)
        except Exception as err:  # noqa: BLE001 - a new path failing must not cost the others
            if name not in static_names and name not in amp:
                raise
            # the static paths are new on GPUs, which are lent rarely: record why and go on
            failed[name] = f"{type(err).__name__}: {err}"[:2000]
            print(f"[{name} failed, left out] {failed[name]}", file=sys.stderr)
            del steps[name], models[name]
            continue
        sync(device)
        if "compiled" in name:
            compile_s[name] = round(time.perf_counter() - t0, 1)

    per_round: dict[str, list[float]] = {name: [] for name in models}
    for r in range(args.rounds):
        chunk = [batches[(r * args.steps + i) % len(batches)] for i in range(args.steps)]
        for name, step in steps.items():
            per_round[name].append(timed(step, chunk, device) / len(chunk) * 1e3)

    base = statistics.median(per_round["pyg GPSConv"])
    target = TARGET_GPU if device.type == "cuda" else TARGET_CPU
    rows = []
    print(f"\nGPS training step, ZINC, batch {args.batch_size}, {device.type}"
          f"{'' if device.type == 'cuda' else f', {args.threads} thread(s)'}: median of "
          f"{args.rounds} rounds x {args.steps} steps")
    print(f"{'model':<26}{'params':>9}{'ms/step':>10}{'vs PyG':>8}")
    for name in models:
        ms = statistics.median(per_round[name])
        row = {"model": name, "params": params[name], "ms_per_step": round(ms, 2),
               "speedup_vs_pyg": round(base / ms, 2),
               "rounds_ms": [round(v, 2) for v in per_round[name]], "epoch_s": None}
        note = ""
        if name.startswith("graphpe ") and name in amp:  # against PyG in the same precision
            same = statistics.median(per_round[name.replace("graphpe", "pyg GPSConv", 1)])
            row["speedup_vs_pyg_same_precision"] = round(same / ms, 2)
            note = f"  ({same / ms:.2f}x PyG in {name.split()[-1]})"
        rows.append(row)
        print(f"{name:<26}{params[name]:>9,}{ms:>10.1f}{base / ms:>7.2f}x{note}")
    eager = next(r for r in rows if r["model"] == "graphpe")["speedup_vs_pyg"]
    print(f"\ntarget graphpe >= {target:g}x PyG: {eager:.2f}x "
          f"({'met' if eager >= target else 'NOT met'})")
    for row in rows:
        if "compiled" in row["model"]:
            comp = row["speedup_vs_pyg"]
            print(f"target {row['model']} >= {TARGET_COMPILED:g}x PyG: {comp:.2f}x "
                  f"({'met' if comp >= TARGET_COMPILED else 'NOT met'}; its first 3 steps, "
                  f"compiling included, took {compile_s[row['model']]:.0f} s)")
    if static_names:
        print(f"static shape: {shapes} (every batch padded to it)")
    otf_rows = []
    result = {
        "command": " ".join(["python benchmarks/train_step.py",
                             *(sys.argv[1:] if argv is None else argv)]),
        "device": device.type, "threads": args.threads, "batch_size": args.batch_size,
        "graphs": len(graphs), "rounds": args.rounds, "steps": args.steps,
        "torch": torch.__version__, "machine": platform.processor() or platform.machine(),
        "gpu": torch.cuda.get_device_name(device) if device.type == "cuda" else None,
        "target": target, "rows": rows, "compile_s": compile_s, "on_the_fly": otf_rows,
        "static_shape": shapes if static_names else None, "failed": failed,
    }
    args.json.parent.mkdir(parents=True, exist_ok=True)
    # written now and again after each epoch and OnTheFlyPE row: a run stopped by a time cap
    # (the GPU script's) keeps what it measured
    args.json.write_text(json.dumps(result, indent=2))
    if args.epoch:
        print("\none full ZINC epoch each:")
        for row in rows:
            if row["model"] in amp:  # steps suffice: not worth a GPU run's capped time
                continue
            row["epoch_s"] = round(timed(steps[row["model"]], batches, device), 2)
            args.json.write_text(json.dumps(result, indent=2))
            print(f"  {row['model']:<26}{row['epoch_s']:8.1f} s")
    if args.on_the_fly:
        print(f"\nOnTheFlyPE(RWSE(16), LapPE(8), RFP(16, 8)) inside graphpe's GPS step, "
              f"{args.otf_batch_size} graphs:")
        for draws in (int(d) for d in args.otf_draws.split(",")):
            row = on_the_fly_rows(graphs, device, args.otf_batch_size, draws, args.rounds,
                                  args.steps)
            otf_rows.append(row)
            args.json.write_text(json.dumps(result, indent=2))
            print(f"  RFP draws {draws}: step {row['ms_precomputed']:.1f} ms precomputed, "
                  f"{row['ms_on_the_fly']:.1f} ms on the fly (+{row['overhead']:.1%}; PEs alone "
                  f"{row['ms_pe_alone']:.1f} ms); target < {TARGET_OTF:.0%}: "
                  f"{'met' if row['overhead'] < TARGET_OTF else 'NOT met'}")
    print(f"wrote {args.json}")


if __name__ == "__main__":
    main()
