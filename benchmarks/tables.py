"""README and docs tables from benchmark JSON: no number in the README or the docs is typed by
hand.

    python benchmarks/tables.py                       # print every table it can build
    python benchmarks/tables.py --write README.md docs/benchmarks.md   # replace marked blocks
    python benchmarks/tables.py --write-all           # the README and every page of docs/
    python benchmarks/tables.py --plots DIR           # the docs' plots, from the same JSON

A block sits between ``<!-- table:NAME -->`` and ``<!-- /table:NAME -->``; ``NAME`` is a key
of :data:`TABLES`, which says which JSON file(s) it is built from (``encodings`` is built from
graphpe's registry of encodings instead). ``tests/docs/test_tables.py`` checks that every
marked block is current and that every table whose JSON exists is shown somewhere.
"""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]


def _rate(value: float | None) -> str:
    return "" if value is None else f"{value:,.0f}"


def precompute_table(data: dict) -> str:
    """Encoding throughput per path against PyG (from ``benchmarks/precompute.py``)."""
    lines = [
        f"`python benchmarks/precompute.py --threads {data['threads']}` (graphpe "
        f"{data['graphpe']}, PyG {data['pyg']}, torch {data['torch']}; best of "
        f"{data['repeats']}):",
        "",
        "| dataset | encoding | path | graphpe graphs/s | PyG graphs/s | vs PyG | target |",
        "| --- | --- | --- | ---: | ---: | ---: | --- |",
    ]
    for r in data["rows"]:
        ratio = "" if r["ratio"] is None else f"{r['ratio']:.1f}x"
        target = ""
        if "target" in r:
            target = f"{r['target']} {'met' if r['met'] else '**not met**'}"
        lines.append(f"| {r['dataset']} | {r['encoding']} | {r['path']} | "
                     f"{_rate(r['graphpe_graphs_per_s'])} | {_rate(r['pyg_graphs_per_s'])} | "
                     f"{ratio} | {target} |")
    errors = []
    for r in data["rows"]:
        if r["path"] == "dataset" and r["max_error"] is not None:
            if r["pyg_max_error"] is not None:
                errors.append(f"{r['dataset']} {r['encoding']}: largest projector difference "
                              f"to a float64 numpy eigh {r['max_error']:.1e} (PyG "
                              f"{r['pyg_max_error']:.1e})")
            else:
                errors.append(f"{r['dataset']} {r['encoding']}: largest difference to PyG "
                              f"{r['max_error']:.1e}")
    lines += ["", "Accuracy: " + "; ".join(errors) + "."]
    failed = {(r["dataset"], r["encoding"]): r["pyg_failed_graphs"] for r in data["rows"]
              if r["pyg_failed_graphs"]}
    for (dataset, encoding), count in failed.items():
        lines.append(f"PyG raised on {count} graphs of {dataset} ({encoding}); graphpe encodes "
                     "every graph.")
    return "\n".join(lines)


def rfp_large_table(data: dict) -> str:
    """Graph preparation and propagation on one large graph (from ``benchmarks/rfp.py``)."""
    lines = ["| step | time | vs a bare SpMM step or trajectory |", "| --- | ---: | ---: |"]
    for r in data["rows"]:
        if r.get("part") != "large":
            continue
        if r["method"] == "operator build":
            lines.append(f"| operator build ({r['nodes']:,} nodes, {r['input_edges']:,} input "
                         f"edges, {r['nnz']:,} nonzeros) | {r['seconds']:.2f} s | "
                         f"{r['ratio_to_bare_trajectory']:.2f}x a trajectory |")
        else:
            ratio = f"{r['ratio_to_bare']:.2f}x" if "ratio_to_bare" in r else "1x"
            lines.append(f"| {r['method']}, d = {r['dim']} | "
                         f"{r['seconds_per_step'] * 1e3:.0f} ms per step | {ratio} |")
    return "\n".join(lines)


def train_step_table(data: dict) -> str:
    """GPS training step against PyG's example model (from ``benchmarks/train_step.py``)."""
    where = (f"{data['gpu']}" if data["device"] == "cuda"
             else f"CPU, {data['threads']} thread{'s' if data['threads'] > 1 else ''}")
    lines = [
        f"`{data.get('command', 'python benchmarks/train_step.py')}` ({where}, batch "
        f"{data['batch_size']}, torch "
        f"{data['torch']}; median of {data['rounds']} rounds x {data['steps']} steps, the models "
        "taking turns):",
        "",
        "| model | parameters | ms per step | vs PyG | one ZINC epoch |",
        "| --- | ---: | ---: | ---: | ---: |",
    ]
    for r in data["rows"]:
        epoch = "" if r.get("epoch_s") is None else f"{r['epoch_s']:.1f} s"
        lines.append(f"| {r['model']} | {r['params']:,} | {r['ms_per_step']:.1f} | "
                     f"{r['speedup_vs_pyg']:.2f}x | {epoch} |")
    eager = next(r for r in data["rows"] if r["model"] == "graphpe")["speedup_vs_pyg"]
    verdict = "met" if eager >= data["target"] else "**not met**"
    lines += ["", f"- Target graphpe >= {data['target']:g}x PyG: {eager:.2f}x, {verdict}."]
    compile_s = data.get("compile_s")
    if isinstance(compile_s, (int, float)):  # older records: one compiled model
        compile_s = {"graphpe compiled": compile_s}
    for name, seconds in (compile_s or {}).items():
        comp = next(r for r in data["rows"] if r["model"] == name)
        verdict = "met" if comp["speedup_vs_pyg"] >= 3 else "**not met**"
        lines.append(f"- Target {name} >= 3x PyG: {comp['speedup_vs_pyg']:.2f}x, {verdict} "
                     f"(its first 3 steps, compilation included: {seconds:.0f} s).")
    for r in data["rows"]:
        if "speedup_vs_pyg_same_precision" in r:  # a mixed-precision row (--precision)
            precision = r["model"].split()[-1]
            fp32 = next(x for x in data["rows"] if x["model"] == "graphpe")["ms_per_step"]
            lines.append(f"- {r['model']} (mixed precision, `torch.autocast`): "
                         f"{r['speedup_vs_pyg_same_precision']:.2f}x PyG's step in {precision}; "
                         f"{r['ms_per_step']:.1f} ms against graphpe's {fp32:.1f} ms in "
                         "float32.")
    for name, why in (data.get("failed") or {}).items():
        lines.append(f"- {name}: failed in its first steps and was left out ({why[:300]}).")
    if data.get("static_shape"):
        shape = data["static_shape"]
        lines.append(f"- graphpe static: every batch padded to {shape['num_graphs']} graphs "
                     f"of {shape['graph_size']} nodes and {shape['num_edges']:,} edges "
                     "(`graphpe.nn.StaticGPS`), the padding counted in the step.")
    for r in data.get("on_the_fly", []):
        verdict = "met" if r["overhead"] < 0.15 else "**not met**"
        lines.append(f"- OnTheFlyPE(RWSE(16), LapPE(8), RFP(16, 8), {r['rfp_draws']} draw"
                     f"{'s' if r['rfp_draws'] > 1 else ''}) inside the step on "
                     f"{r['batch_size']} graphs: {r['ms_precomputed']:.0f} ms -> "
                     f"{r['ms_on_the_fly']:.0f} ms, +{r['overhead']:.1%} (target < 15%, "
                     f"{verdict}).")
    return "\n".join(lines)


def train_step_breakdown_table(data: dict) -> str:
    """Phases of the GPS step and the attention core's cost (from
    ``benchmarks/train_step_breakdown.py``)."""
    lines = [f"`{data['command']}` (CPU, {data['threads']} thread, batch {data['batch_size']}, "
             f"torch {data['torch']}; median of {data['rounds']} rounds x {data['steps']} "
             "steps, ms; rows marked * are diagnostics with the attention core changed, "
             "not models):", "",
             "| | forward | backward | optimizer | step | vs PyG | matrix products |",
             "| --- | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for r in data["rows"]:
        mm = "" if "matmul_ms_per_step" not in r else (
            f"{r['matmul_ms_per_step']:.1f} ms ({r['matmul_share']:.0%})")
        lines.append(f"| {r['variant']}{' *' if r['diagnostic'] else ''} | "
                     f"{r['forward_ms']:.1f} | {r['backward_ms']:.1f} | "
                     f"{r['optimizer_ms']:.1f} | {r['step_ms']:.1f} | "
                     f"{r['speedup_vs_pyg']:.2f}x | {mm} |")
    if "linear_gflops" in data:
        lines += ["", f"The linear layers' products alone (64 -> 64, 128, 192 channels and "
                  f"128 -> 64, on {data['nodes_per_batch']} rows, one thread): "
                  f"{data['linear_gflops']:.0f} GFLOP/s."]
    if "one_graph" in data:
        one = data["one_graph"]
        lines += ["", f"A step on a batch of one {one['nodes']}-node graph (the cost that does "
                  "not grow with the batch: dispatch, autograd bookkeeping, Python): "
                  + ", ".join(f"{name} {ms:.1f} ms" for name, ms in one["step_ms"].items())
                  + "."]
    return "\n".join(lines)


def gpu_table(data: dict) -> str:
    """Encodings, one large graph and the GPS step with OnTheFlyPE on a GPU (from
    ``benchmarks/gpu.py``)."""
    info = data["info"]
    lines = [f"`python benchmarks/gpu.py` ({info.get('gpu', info['device'])}, torch "
             f"{info['torch']}; PyG graph by graph on the same machine's CPU, one thread):", "",
             "| what | size | seconds | throughput | vs PyG (CPU) | check |",
             "| --- | --- | ---: | ---: | ---: | --- |"]
    for r in data["rows"]:
        if r["part"] == "zinc":
            ratio = (f"{r['speedup_vs_pyg_cpu']:.0f}x" if "speedup_vs_pyg_cpu" in r else "")
            check = next((f"max diff vs CPU {r[k]:.1e}" for k in
                          ("max_eigval_diff_vs_cpu", "max_diff_vs_cpu") if k in r), "")
            lines.append(f"| {r['encoding']} | {r['graphs']:,} ZINC graphs, one batch | "
                         f"{r['seconds']:.3f} | {r['graphs_per_s']:,.0f} graphs/s | {ratio} | "
                         f"{check} |")
        elif r["part"] == "large":
            extra = (f"{r['ratio_to_bare']:.2f}x a bare SpMM" if "ratio_to_bare" in r else "")
            lines.append(f"| {r['method']} | {r['nodes']:,} nodes, {r['nnz']:,} nonzeros | "
                         f"{r['seconds']:.4f} | | | {extra} |")
        elif r["part"] == "train":
            extra = (f"+{r['overhead']:.0%} over the precomputed step"
                     if "overhead" in r and "alone" not in r["method"] else "")
            lines.append(f"| {r['method']} | batch of {r['batch']} | {r['seconds']:.4f} | | | "
                         f"{extra} |")
    return "\n".join(lines)


def inference_table(data: dict) -> str:
    """GPS evaluation forward against PyG's example model (from ``benchmarks/inference.py``)."""
    lines = [f"`{data['command']}` (CPU, {data['threads']} thread, torch {data['torch']}; "
             f"`eval()` under `torch.inference_mode()`, median of {data['rounds']} rounds x "
             f"{data['batches']} batches, the models taking turns):", "",
             "| batch | nodes | model | ms per batch | vs PyG |",
             "| ---: | ---: | --- | ---: | ---: |"]
    for r in data["rows"]:
        lines.append(f"| {r['batch_size']} | {r['nodes']:,} | {r['model']} | "
                     f"{r['ms_per_batch']:.1f} | {r['speedup_vs_pyg']:.2f}x |")
    return "\n".join(lines)


def gine_step_table(data: dict) -> str:
    """GINE, GIN and GatedGCN training steps against the same networks from PyG's GINEConv /
    GINConv and GraphGPS's GatedGCNLayer (from ``benchmarks/gine_step.py``)."""
    lines = [f"`{data['command']}` ({data['layers']} layers x {data['channels']} channels, "
             f"ZINC batch {data['batch_size']}, CPU, {data['threads']} thread, torch "
             f"{data['torch']}; forward, backward and plain Adam, median of {data['rounds']} "
             f"rounds x {data['steps']} steps, the models taking turns):", "",
             "| model | parameters | ms per step | vs the reference (same network) |",
             "| --- | ---: | ---: | ---: |"]
    for r in data["rows"]:
        lines.append(f"| {r['model']} | {r['params']:,} | {r['ms_per_step']:.1f} | "
                     f"{r['speedup_vs_pyg']:.2f}x |")
    return "\n".join(lines)


def pair_bias_step_table(data: dict) -> str:
    """GPS step with each pairwise attention bias, fused and module by module (from
    ``benchmarks/pair_bias_step.py``)."""
    lines = [f"`{data['command']}` (GPS 4 x 64 + RWSE(16), ZINC batches of "
             f"{data['batch_size']}, CPU, {data['threads']} thread, torch {data['torch']}; "
             f"forward, backward and plain Adam, median of {data['rounds']} rounds, the "
             "variants taking turns):", "",
             "| attention bias | fused layers | module by module | fused, vs no bias |",
             "| --- | ---: | ---: | ---: |"]
    ms = {(r["bias"], r["fused"]): r["ms_per_step"] for r in data["rows"]}
    base = ms.get(("none", True))
    for bias in dict.fromkeys(r["bias"] for r in data["rows"]):
        ratio = f"{ms[(bias, True)] / base:.2f}x" if base else ""
        lines.append(f"| {bias} | {ms[(bias, True)]:.1f} ms | {ms[(bias, False)]:.1f} ms | "
                     f"{ratio} |")
    return "\n".join(lines)


def spe_step_table(data: dict) -> str:
    """SPE encoder step, pair rows against the authors' padded layout (from
    ``benchmarks/spe_step.py``)."""
    where = (f"CPU, {data['threads']} thread" if data.get("device", "cpu") == "cpu"
             else data["gpu"])
    lines = [f"`{data['command']}` ({where}, torch {data['torch']}; "
             "encoder forward, backward and plain Adam on ZINC-12k batches, median of "
             f"{data['rounds']} rounds x {data['steps']} steps, the layouts taking turns):", "",
             "| shape | batch | rows of rho: pairs / padded | layout | ms per step | vs padded "
             "|", "| --- | ---: | ---: | --- | ---: | ---: |"]
    for r in data["rows"]:
        shape = (f"{r['shape']}: k={r['k']}, m={r['m']}, rho {r['rho_layers']} x "
                 f"{r['rho_hidden']}")
        lines.append(f"| {shape} | {r['batch_size']} | {r['pair_rows']:,} / "
                     f"{r['padded_rows']:,} | {r['layout']} | {r['ms_per_step']:,.1f} | "
                     f"{r['speedup_vs_padded']:.2f}x |")
    return "\n".join(lines)


def train_step_gpu_table(data: dict) -> str:
    """``benchmarks/train_step.py --device cuda``: the same table as on the CPU."""
    return train_step_table(data)


def gps_curve_table(runs: list[dict]) -> str:
    """Test MAE of the GPS with bucketed attention, padded attention and fixed-shape batches
    (from ``benchmarks/gps_curve.py``)."""
    lines = ["| layout | seeds | epochs | test MAE per seed | mean |",
             "| --- | --- | ---: | --- | ---: |"]
    for variant in sorted({r["variant"] for r in runs}):
        mine = sorted((r for r in runs if r["variant"] == variant), key=lambda r: r["seed"])
        maes = [r["test_mae"] for r in mine]
        lines.append(f"| {variant} | {', '.join(str(r['seed']) for r in mine)} | "
                     f"{mine[0]['epochs']} | {', '.join(f'{m:.4f}' for m in maes)} | "
                     f"{sum(maes) / len(maes):.4f} |")
    return "\n".join(lines)


def ddp_table(data: dict) -> str:
    """Data-parallel throughput (from ``benchmarks/ddp.py``)."""
    verdict = "met" if data["speedup"] >= data["target"] else "**not met**"
    return (f"`python benchmarks/ddp.py --processes {data['processes']}` (GPS of PyG's example "
            f"shape on ZINC, batch {data['batch_size']} per process, {data['threads']} thread "
            f"each): 1 process {data['graphs_per_s_1']:,.0f} graphs/s, {data['processes']} "
            f"processes {data['graphs_per_s_n']:,.0f} graphs/s, **{data['speedup']:.2f}x** "
            f"(target >= {data['target']}x, {verdict}).")


def precompute_workers_table(data: dict) -> str:
    """Sharded precompute (from ``benchmarks/precompute_workers.py``)."""
    verdict = "met" if data["speedup"] >= data["target"] else "**not met**"
    return (f"`python benchmarks/precompute_workers.py --workers {data['workers']}` "
            f"({data['graphs']:,} ZINC graphs, LapPE(8) + RWSE(16) + LCP): 1 worker "
            f"{data['seconds_1']:.2f} s, {data['workers']} workers {data['seconds_n']:.2f} s, "
            f"**{data['speedup']:.2f}x** (target >= {data['target']}x, {verdict}); outputs "
            f"bit-identical: {'yes' if data['identical'] else '**no**'}.")


def pairwise_table(data: dict) -> str:
    """Pairwise encodings against per-graph references (from ``benchmarks/pairwise.py``)."""
    lines = [f"`python benchmarks/pairwise.py --threads {data['threads']}` (all pairs of "
             f"{data['graphs']:,} ZINC graphs):", "",
             "| encoding | graphpe graphs/s | reference | reference graphs/s | ratio |",
             "| --- | ---: | --- | ---: | ---: |"]
    for r in data["rows"]:
        ratio = f"{r['speedup']:.1f}x"
        if "target" in r:
            met = r["speedup"] >= r["target"] and r["max_error"] <= 1e-6
            ratio += f" (target {r['target']:g}x: {'met' if met else '**not met**'})"
        lines.append(f"| {r['encoding']} | {r['graphpe_graphs_per_s']:,.0f} | {r['reference']} "
                     f"| {r['reference_graphs_per_s']:,.1f} | {ratio} |")
    for r in data["rows"]:
        if "write_floor_graphs_per_s" in r:
            floor = r["write_floor_graphs_per_s"]
            lines += ["", f"Only writing {r['encoding']}'s output (values and pair index) into "
                      f"fresh memory, as every call must: {floor:,.0f} graphs/s, "
                      f"{floor / r['reference_graphs_per_s']:.1f}x the reference."]
    return "\n".join(lines)


def pairwise_large_table(data: dict) -> str:
    """Pairs within a few hops of one large graph (from ``benchmarks/pairwise_large.py``)."""
    lines = [f"`python benchmarks/pairwise_large.py --threads {data['threads']}` (random graph, "
             f"{data['nodes']:,} nodes, {data['undirected_edges']:,} edges; "
             f"{data['pairs']:,} pairs listed of {data['all_pairs']:,}):", "",
             "| what | seconds | peak memory | networkx (scaled from sampled sources) |",
             "| --- | ---: | ---: | --- |"]
    for r in data["rows"]:
        ref = (f"{r['reference_seconds']:.1f} s, graphpe {r['speedup']:.1f}x, same pairs: "
               f"{'yes' if r['same_pairs_on_sampled_sources'] else '**no**'}"
               if "reference_seconds" in r else "")
        lines.append(f"| {r['what']} | {r['seconds']:.2f} | {r['peak_mb']:.0f} MB | {ref} |")
    return "\n".join(lines)


def papers_lcp_table(data: dict) -> str:
    """The LCP paper's table against graphpe (from ``benchmarks/papers/lcp.py``)."""
    datasets = [d for d in ("IMDB-BINARY", "MUTAG", "PROTEINS", "Cora", "CiteSeer")
                if any(r["dataset"] == d for r in data["rows"])]
    datasets += sorted({r["dataset"] for r in data["rows"]} - set(datasets))
    pes = ("none", "lap", "rwse", "lcp", "lcp+rwse")
    cells = {(r["dataset"], r["model"], r["pe"]): r for r in data["rows"]}
    settings = sorted({(r["max_epochs"], r["patience"]) for r in data["rows"]})
    lines = [
        "Test accuracy (%), mean +- 2 std / sqrt(trials); paper (100 trials) / graphpe (trials "
        "in brackets). graphpe: `python benchmarks/papers/lcp.py`, PEs concatenated to x, at "
        "most " + ", ".join(f"{m} epochs (patience {p})" for m, p in settings) + ".",
        "",
        "| model | PE | " + " | ".join(datasets) + " |",
        "| --- | --- |" + " ---: |" * len(datasets),
    ]

    def paper(r: dict) -> str:
        if r.get("paper_mean") is None:
            return "-"
        ci = r.get("paper_ci")
        return f"{r['paper_mean']:.1f}" + ("" if ci is None else f" +- {ci:.1f}")

    for model in ("gcn", "gin"):
        for pe in pes:
            row = [cells.get((d, model, pe)) for d in datasets]
            if not any(row):
                continue
            texts = []
            for r in row:
                if r is None:
                    texts.append("")
                    continue
                texts.append(f"{paper(r)} / **{r['test_mean']:.1f} +- "
                             f"{r['test_ci']:.1f}** ({r['trials']})")
            label = {"none": "none", "lap": "LapPE", "rwse": "RWPE", "lcp": "LCP",
                     "lcp+rwse": "LCP+RWPE"}[pe]
            lines.append(f"| {model.upper()} | {label} | " + " | ".join(texts) + " |")
    timing = {t["dataset"]: t for t in data.get("orc_timing", [])}
    if timing:
        lines += ["", "ORC preprocessing (exact, alpha = 0, one process):", "",
                  "| dataset | graphs | edges | graphpe LCP | GraphRicciCurvature | speedup | "
                  "max LCP diff |", "| --- | ---: | ---: | ---: | ---: | ---: | ---: |"]
        for d in datasets + sorted(set(timing) - set(datasets)):
            t = timing.get(d)
            if t is None:
                continue
            if t.get("reference_seconds") is None:
                ref, speedup, diff = "n/a", "", ""
            else:
                ref = f"{t['reference_seconds']:.1f} s"
                if t["reference_extrapolated"]:
                    ref += (f" (extrapolated from {t['reference_graphs_timed']} of "
                            f"{t['graphs']} graphs)")
                speedup, diff = f"{t['speedup']:,.0f}x", f"{t['max_lcp_diff']:.0e}"
            lines.append(f"| {d} | {t['graphs']:,} | {t['undirected_edges']:,} | "
                         f"{t['graphpe_seconds']:.2f} s | {ref} | {speedup} | {diff} |")
    return "\n".join(lines)


def papers_rfp_table(data: dict) -> str:
    """RFP on CSL and EXP against frozen random features and LapPE (from
    ``benchmarks/papers/rfp.py``)."""
    rows = data["rows"]
    datasets = sorted({r["dataset"] for r in rows})
    order = ["rfp", "rfp-trajectory", "rfp-frozen", "random-frozen", "lap"]
    labels = {"rfp": "RFP, gram readout, resampled every epoch (graphpe default)",
              "rfp-trajectory": "RFP, raw trajectory readout, resampled",
              "rfp-frozen": "RFP, gram readout, drawn once (frozen)",
              "random-frozen": "random node features, drawn once (no propagation)",
              "lap": "LapPE k=8"}
    cells = {(r["dataset"], r["variant"]): r for r in rows}
    epochs = sorted({r["epochs"] for r in rows})
    lines = [f"`python benchmarks/papers/rfp.py` (GINE 4 x 32, {'/'.join(map(str, epochs))} "
             "epochs, test accuracy at the best validation epoch, mean over folds):", "",
             "| variant | " + " | ".join(datasets) + " |",
             "| --- |" + " ---: |" * len(datasets)]
    for variant in order:
        row = [cells.get((d, variant)) for d in datasets]
        if not any(row):
            continue
        lines.append(f"| {labels[variant]} | " + " | ".join(
            "" if r is None else f"{r['test_accuracy']:.3f} ({len(r['folds'])} folds)"
            for r in row) + " |")
    targets = []
    for d in datasets:
        r = cells.get((d, "rfp"))
        if r and r["target"]:
            met = "met" if r["test_accuracy"] >= r["target"] else "**not met**"
            targets.append(f"{d} >= {r['target']:.2f}: {met}")
    if targets:
        lines += ["", "Targets (RFP default): " + "; ".join(targets) + "."]
    return "\n".join(lines)


def papers_spe_table(data: dict) -> str:
    """SPE's ZINC model for a short budget (from ``benchmarks/papers/spe.py``)."""
    lines = ["`python benchmarks/papers/spe.py [--device cuda]` (GINE 4 x 128, mean pooling, "
             "batch 128; on the CPU 1 thread; the paper trains 1000 epochs):", "",
             "| PE | device | epochs | train graphs | test MAE | best val MAE | "
             "paper (1000 epochs) | parameters | s/epoch |",
             "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for r in sorted(data["rows"], key=lambda r: (r["device"], r["epochs"], r["train_graphs"],
                                                ["none", "signnet", "spe"].index(r["pe"]))):
        lines.append(f"| {r['pe']} | {r['device']} | {r['epochs']} | {r['train_graphs']:,} | "
                     f"{r['test_mae']:.4f} | {r['val_mae']:.4f} | "
                     f"{r['paper_test_mae_1000_epochs']:.4f} | {r['params']:,} | "
                     f"{r['seconds_per_epoch']:.0f} |")
    return "\n".join(lines)


def expressivity_pairs_table(data: dict) -> str:
    """Pairs separated per encoding (from ``benchmarks/expressivity_pairs.py``)."""
    labels = data["labels"]
    lines = ["`python benchmarks/expressivity_pairs.py` (1-WL-equivalent, non-isomorphic "
             "pairs; an encoding separates a pair when colour refinement seeded by it tells "
             "the two graphs apart):", "",
             "| family | pairs | " + " | ".join(labels) + " |",
             "| --- | ---: |" + " ---: |" * len(labels)]
    for r in data["rows"]:
        lines.append(f"| {r['family']} | {r['pairs']} | " +
                     " | ".join(str(r[lab]) for lab in labels) + " |")
    lines.append(f"| **total** | {data['pairs']} | " +
                 " | ".join(f"**{data['total'][lab]}**" for lab in labels) + " |")
    false = sum(data["control_false_separations"].values())
    lines += ["", f"Control: a graph against a relabelled copy of itself is separated "
                  f"{false} times over all encodings."]
    return "\n".join(lines)


def directed_table(data: dict) -> str:
    """Directed encodings and cycle counts against their reference code, graph by graph (from
    ``benchmarks/directed.py``)."""
    lines = [
        f"`python benchmarks/directed.py --threads {data['threads']}` ({data['dataset']}; the "
        "directed encodings read a directed copy, each edge kept in one direction by a seeded "
        f"coin; graphpe {data['graphpe']}, torch {data['torch']}, numpy {data['numpy']}, numba "
        f"{data['numba']}, networkx {data['networkx']}; best of {data['repeats']}):",
        "",
        "| encoding | reference (graph by graph) | reference graphs/s | graphpe path | "
        "graphpe graphs/s | vs reference | max difference | target |",
        "| --- | --- | ---: | --- | ---: | ---: | ---: | --- |",
    ]
    for r in data["rows"]:
        target = ""
        if "target" in r:
            target = f"{r['target']} {'met' if r['met'] else '**not met**'}"
        lines.append(f"| {r['label']} | {r['reference']} | {_rate(r['reference_graphs_per_s'])} "
                     f"| {r['path']} | {_rate(r['graphpe_graphs_per_s'])} | {r['ratio']:.1f}x | "
                     f"{r['max_error']:.1e} | {target} |")
    others = []
    for r in data["rows"]:
        if r["path"] != "per-graph":
            continue
        for name, rate in r["references_graphs_per_s"].items():
            if name != r["reference"]:
                others.append(f"{r['label']}: {name} {_rate(rate)} graphs/s")
    metrics = list(dict.fromkeys(f"{r['label']}: {r['error_metric']}" for r in data["rows"]))
    lines += ["", "The ratio is against the fastest reference; also timed: "
              + ("; ".join(others) or "none") + ".",
              "Max difference to the reference: " + "; ".join(metrics) + "."]
    if data.get("numba_reference_failure"):
        lines.append(f"The reference did not compile under numba "
                     f"({data['numba_reference_failure']}).")
    return "\n".join(lines)


def measurement_cell(result: dict | None, timeout: float, missing: str = "") -> str:
    """One measurement of ``benchmarks/large_graphs.py`` as a table cell: its seconds, a
    refusal, ``> timeout``, or its failure status (``missing`` where it was not run)."""
    if result is None:
        return missing
    if result["status"] == "timeout":
        return f"> {timeout:.0f} s"
    if result["status"] != "ok":
        return result["status"]
    if "refused" in result:
        return f"refused in {result['seconds']:.2f} s"
    return f"{result['seconds']:.2f} s"


def large_graphs_table(data: dict) -> str:
    """Real large graphs of each kind against PyG and scipy called directly (from
    ``benchmarks/large_graphs.py``)."""
    timeout = data["timeout"]

    def cell(result: dict | None) -> str:
        return measurement_cell(result, timeout)

    source = "generated stand-ins (`--synthetic`)" if data["synthetic"] else "real graphs"
    options = ""
    if data.get("encodings", "lappe,rwse,lcp") != "lappe,rwse,lcp":
        options += f" --encodings {data['encodings']}"
    if data.get("kept_other_rows"):
        options += " --keep-other-rows"
    lines = [
        f"`python benchmarks/large_graphs.py --timeout {timeout:.0f}{options}` ({source}; "
        f"one thread, "
        f"each measurement in its own subprocess, stopped after {timeout:.0f} s, "
        f"{data['memory_gb']:g} GiB of address space; LapPE k = {data['k']}, RWSE "
        f"{data['walk_length']} steps, LCP exact Ollivier-Ricci with its default budget):",
        "",
        "| graph | kind | nodes | edges | encoding | graphpe (default) | fastest graphpe "
        "solver | PyG | scipy | scipy shift-invert | accuracy | target |",
        "| --- | --- | ---: | ---: | --- | ---: | ---: | ---: | ---: | ---: | --- | --- |",
    ]
    for r in data["rows"]:
        ours = r["graphpe"]
        if r["encoding"].startswith("LapPE"):
            acc = ours.get("residual")
            acc = "" if acc is None else f"residual {acc:.1e}"
        elif r["encoding"].startswith("RWSE"):
            acc = r.get("max_diff")
            acc = "" if acc is None else f"max diff {acc:.1e} ({r['diff_against']})"
        else:
            acc = f"{ours['cells']:.2g} transport cells" if "cells" in ours else ""
        target = ("met" if r["met"] else "**not met**") + (f" ({r['why']})" if r["why"] else "")
        ours_cell = cell(ours)
        if ours.get("solved_by"):
            ours_cell += f" ({', '.join(ours['solved_by'])})"
        best = ""
        if r.get("solvers"):
            timed = [(name, res["seconds"]) for name, res in
                     {"auto": ours, **r["solvers"]}.items()
                     if res.get("status") == "ok" and res.get("residual", 1.0) <= 1e-6]
            if timed:
                name, seconds = min(timed, key=lambda t: t[1])
                best = f"{seconds:.2f} s ({name})"
        encoding = r["encoding"] + (" *" if r.get("carried") else "")
        lines.append(f"| {r['graph']} | {r['kind']} | {r['nodes']:,} | {r['edges']:,} | "
                     f"{encoding} | {ours_cell} | {best} | {cell(r.get('pyg'))} | "
                     f"{cell(r.get('scipy'))} | {cell(r.get('scipy_si'))} | {acc} | "
                     f"{target} |")
    if any(r.get("carried") for r in data["rows"]):
        lines += ["", "\\* carried over from the previous run (`--keep-other-rows`): the "
                  "encodings not measured in this one."]
    if data.get("skipped"):
        lines += ["", "Not in the cache: " + "; ".join(data["skipped"].values()) + "."]
    return "\n".join(lines)


def lappe_vs_pyg_table(data: dict) -> str:
    """graphpe's default LapPE against PyG's transform, first and second call in fresh
    processes, rounds in turn, with the eigenvalues against a converged reference (from
    ``benchmarks/lappe_vs_pyg.py``)."""
    def seconds(side: dict, key: str) -> str:
        return f"{side[key]:.2f} s" if key in side else "-"

    def ratio(r: dict | None) -> str:
        return "-" if r is None else f"{r['median']:.2f}x ({r['low']:.2f}-{r['high']:.2f})"

    def error(side: dict) -> str:
        e = side.get("eigenvalue_error")
        return "-" if e is None else f"{e:.1e}"

    def residual(side: dict) -> str:
        return f"{side['residual']:.1e}" if "residual" in side else "-"

    def angle(side: dict) -> str:
        return f"{side['subspace_sin']:.1e}" if "subspace_sin" in side else "-"

    lines = [
        f"`{data['command']}` (one thread; {data['rounds']} rounds in turn, each side in a "
        f"fresh process per round, stopped after {data['timeout']:.0f} s; LapPE k = "
        f"{data['k']}: graphpe's `LaplacianPE(k={data['k']})` against PyG's "
        f"`AddLaplacianEigenvectorPE({data['k']}, is_undirected=True)`; medians over the "
        "rounds, each ratio PyG / graphpe with the lowest and highest round's in brackets; "
        "eigenvalues: the largest difference of each side's sorted Rayleigh quotients to "
        "scipy's converged `eigsh(L, 18, which=\"SA\", tol=0)`, beside the smallest gap "
        "between the reference's eigenvalues; eigenspace: the sine of the largest principal "
        "angle between each side's columns and the reference's, beside the gap past the "
        "16th eigenvalue; the largest residual `|L v - lambda v|` of "
        "each side's unit columns; where measured, PyG asked for graphpe's accuracy (float64 "
        f"edge weights, ARPACK's `tol={data.get('float64_tol', 1e-9):g}`), its second call "
        "against graphpe's in the first round):",
        "",
        "| graph | kind | nodes (measured) | edges | graphpe first call | PyG first call | "
        "first call, x PyG | graphpe second call | PyG second call | second call, x PyG | "
        "eigenvalues off (graphpe / PyG) | smallest gap | eigenspace off (graphpe / PyG) | "
        "gap past the 16th | residual (graphpe / PyG) | x PyG at graphpe's accuracy | target |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: "
        "| ---: | ---: | ---: | ---: | --- |",
    ]
    for r in data["rows"]:
        ours, pyg = r["graphpe"], r["pyg"]
        nodes = f"{r['nodes']:,}"
        if r["components"] > 1:
            nodes += f" ({r['measured_nodes']:,}: largest of {r['components']:,} components)"
        gap = r["reference"].get("min_gap")
        after = f"{r['reference']['gap_after']:.1e}" if "gap_after" in r["reference"] else "-"
        target = "met" if r["met"] else f"**not met** ({r['why']})"
        graph = r["graph"] + (" \\*" if r.get("carried") else "")
        lines.append(
            f"| {graph} | {r['kind']} | {nodes} | {r['measured_edges']:,} | "
            f"{seconds(ours, 'first_s')} | {seconds(pyg, 'first_s')} | "
            f"{ratio(r['first_ratio'])} | {seconds(ours, 'second_s')} | "
            f"{seconds(pyg, 'second_s')} | {ratio(r['second_ratio'])} | {error(ours)} / "
            f"{error(pyg)} | {'-' if gap is None else f'{gap:.1e}'} | "
            f"{angle(ours)} / {angle(pyg)} | {after} | "
            f"{residual(ours)} / {residual(pyg)} | {ratio(r.get('float64_ratio'))} | "
            f"{target} |")
    if any(r.get("carried") for r in data["rows"]):
        lines += ["", "\\* carried over from an earlier run of the same script "
                  "(`--keep-other-rows`): the graphs not measured in the last one."]
    return "\n".join(lines)


def rwse_estimator_table(data: dict) -> str:
    """RWSE estimated by random walks: seconds, and the estimates against exact values, per
    graph, estimator and number of walks (from ``benchmarks/rwse_estimator.py``)."""
    walks = data["walks"]
    most = max(walks)
    per = " / ".join(str(w) for w in walks)
    lines = [
        f"`{data['command'].strip()}` (one thread, T = {data['walk_length']} steps; per "
        f"estimator the seconds and the share of `(node, t)` within 4 standard errors of the "
        f"exact value for {per} walks per node, and for {most} walks the share within 3, the "
        "share outside 4 below the exact value (a rare return not seen) and the root mean "
        "square error):",
        "",
        f"| graph | nodes | edges | exact RWSE | estimator | seconds ({per} walks) | within 4 "
        f"s.e. ({per}) | within 3 s.e. ({most}) | outside 4 s.e., below ({most}) | "
        f"RMSE ({most}) |",
        "| --- | ---: | ---: | --- | --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    graphs = list(dict.fromkeys(r["graph"] for r in data["rows"]))
    for graph in graphs:
        rows = [r for r in data["rows"] if r["graph"] == graph]
        first = rows[0]
        if "exact_predicted_seconds" in first:
            exact = (f"predicted {first['exact_predicted_seconds']:,.0f} s (not run); "
                     f"{first['checked_nodes']} nodes checked against exact columns")
        else:
            exact = f"{first['exact_seconds']:.2f} s"
        for k, estimator in enumerate(dict.fromkeys(r["estimator"] for r in rows)):
            by_walks = {r["walks"]: r for r in rows if r["estimator"] == estimator}
            seconds = " / ".join(f"{by_walks[w]['seconds']:.2f}" if w in by_walks else ""
                                 for w in walks)
            within = " / ".join(f"{by_walks[w]['within_4se']:.1%}" if w in by_walks else ""
                                for w in walks)
            top = by_walks.get(most)
            tail = ("| | |" if top is None else
                    f"| {top['within_3se']:.1%} | {top['outside_4se_below_exact']:.1%} | "
                    f"{top['rmse']:.1e} |")
            head = (f"| {graph} | {first['nodes']:,} | {first['edges']:,} | {exact} "
                    if k == 0 else "| | | | ")
            lines.append(f"{head}| {estimator} | {seconds} | {within} {tail}")
    for r in data["rows"]:
        if "exact_prediction" in r:
            lines += ["", f"{r['graph']}'s exact paths (graphpe.ops.walk.large's prediction, "
                      f"in {r['prediction_seconds']:.1f} s): {r['exact_prediction']}."]
            break
    for name, reason in (data.get("skipped") or {}).items():
        lines += ["", f"Skipped {name}: {reason}."]
    return "\n".join(lines)


def arxiv_encodings_table(data: dict) -> str:
    """ogbn-arxiv's encodings against the issue's budget (from
    ``benchmarks/arxiv_encodings.py``)."""
    lines = [
        f"`{data['command']}` (each encoding in a fresh process, one thread; the call timed "
        "alone; peak memory of the process, the graph and the encodings included; the second "
        "run through precompute's disk cache):",
        "",
        f"| encoding | seconds | peak memory (GB) | cache hit: seconds | within "
        f"{data['target_seconds']:.0f} s and {data['target_peak_gb']:.0f} GB |",
        "| --- | ---: | ---: | ---: | --- |",
    ]
    notes = []
    for r in data["rows"]:
        hit = r.get("cache_hit_seconds")
        lines.append(f"| {r['encoding']} | {r['seconds']:.1f} | {r['peak_rss_gb']:.2f} | "
                     f"{'' if hit is None else f'{hit:.2f}'} | "
                     f"{'yes' if r['met'] else 'no: ' + r['why']} |")
        d = r["direct"]
        if d.get("estimated"):
            notes.append(f"{r['encoding']} is estimated by random walks (exact is past the "
                         f"budget): mean standard error {d['mean_stderr']:.1e}; against exact "
                         f"values on {d['checked_nodes']} sampled nodes "
                         f"{d['within_4se']:.1%} of the entries within 4 standard errors "
                         f"({d['within_3se']:.1%} within 3), RMSE {d['rmse']:.1e}.")
    return "\n".join(lines + ([""] + notes if notes else []))


def _distributed_rows(data: dict) -> tuple[dict, list[dict]]:
    """``({encoding: the one process's measurement}, [the ranks' rows])`` of
    ``distributed_encode.json``."""
    single = {r["encoding"]: r["processes"][0] for r in data["rows"]
              if r["ranks"] == 0 and r["processes"]}
    return single, [r for r in data["rows"] if r["ranks"] > 0]


def distributed_encode_table(data: dict) -> str:
    """ogbn-arxiv's encodings by 1, 2 and 4 gloo ranks against one process (from
    ``benchmarks/distributed_encode.py``)."""
    single, ranked = _distributed_rows(data)
    if data.get("reordering") == "rcm":
        order = ("contiguous blocks of the rows in reverse Cuthill-McKee order, computed by "
                 "rank 0 from the whole file and broadcast (in the rank's seconds and rank 0's "
                 "peak); RWSE against the one process's estimate on the graph relabeled by the "
                 "same order, whose walks the ranks take")
    else:
        order = "contiguous row blocks, no reordering"
    if data.get("lift"):
        stats = data["graph_stats"]
        order += (f"; the graph: a random cyclic {data['lift']}-lift of ogbn-arxiv "
                  f"({stats['num_nodes']:,} nodes, {stats['csr_entries']:,} stored entries, "
                  "arxiv's degrees, its spectrum within the lift's)")
    lines = [
        f"`{data['command']}` (one thread per process, gloo on one machine of "
        f"{data['cpu_count']} cores, shared with other work; {order}; RWSE's estimate from "
        f"{data['walks']} walks a node; LCP of the `orc_bounds` curvature, each rank fetching "
        "its halo's rows (exact ORC on arxiv is past the transport budget); peaks per "
        "rank, the graph and the encodings included; *above baseline*: less the process's "
        "resident size after imports and a warm-up call):",
        "",
        "| encoding | ranks | equality with one process | peak GB (x one process) | "
        "above baseline GB (x) | halo rows (all ranks) | values sent per product | "
        "seconds |",
        "| --- | ---: | --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    if data.get("merged"):
        earlier = data.get("merged_commands")
        lines[0] += (f" the rows of {', '.join(data['merged'])} are kept from an earlier run "
                     "of the same script with the same settings (`--merge`"
                     + (f"; earlier: {', '.join(f'`{c}`' for c in earlier)}" if earlier
                        else "") + ");")
    for e, one in single.items():
        lines.append(f"| {e} | 1 process | reference | {one['peak_rss_gb']:.3f} | "
                     f"{one['peak_above_baseline_gb']:.3f} | | | {one['seconds']:.1f} |")
        for r in (r for r in ranked if r["encoding"] == e):
            if r["failed"]:
                lines.append(f"| {e} | {r['ranks']} | failed: {r['failed'][:80]} | | | | | |")
                continue
            peak = max(p["peak_rss_gb"] for p in r["processes"])
            above = max(p["peak_above_baseline_gb"] for p in r["processes"])
            c = r["communication"]
            if e == "lap":
                equal = (f"eigenvalues {r['eigval_max_error']:.1e}, projectors "
                         f"{r['projector_distance']:.1e}, vectors {r['vector_max_error']:.1e}")
                if "projector_distance_tight" in r:
                    equal += (f"; against the same solver at "
                              f"{r.get('converged_tol', 1e-10):.0e}: eigenvalues "
                              f"{r['eigval_max_error_tight']:.1e}, projectors "
                              f"{r['projector_distance_tight']:.1e}, vectors "
                              f"{r['vector_max_error_tight']:.1e}")
                equal += f" ({r['products']} products)"
                sent = c["values_sent_total"] / c["exchanges"]
            elif e == "rfp":
                equal = f"max error {r['rfp_max_error']:.1e}"
                sent = c["values_sent_total"] / c["exchanges"]
            elif e == "lcp":
                equal = f"max error {r['lcp_max_error']:.1e}"
                sent = None
            else:
                equal = (f"estimate {r['rwse_max_error']:.1e}, standard error "
                         f"{r['stderr_max_error']:.1e}")
                sent = None
            if sent is not None:
                sent_cell = f"{sent:,.0f}"
            elif e == "lcp":
                rounds = r.get("lcp_fetch_rounds")
                sent_cell = (f"rows fetched: {r['lcp_rows_fetched']:,}"
                             + (" once" if rounds is None else f" in {max(rounds)} rounds")
                             + f" ({r['lcp_values_sent']:,} int64 in all)")
            else:
                sent_cell = f"walks: {r['walk_values_sent']:,} int64 in all"
            lines.append(f"| {e} | {r['ranks']} | {equal} | {peak:.3f} ({r['peak_ratio']:.2f}x) "
                         f"| {above:.3f} ({r['peak_above_baseline_ratio']:.2f}x) | "
                         f"{c['halo_rows_total']:,} | {sent_cell} | {r['seconds']:.1f} |")
    return "\n".join(lines)


# ogbn-papers100M (OGB): nodes and directed citation edges; the undirected CSR holds each edge
# in both directions (at most twice the edges)
PAPERS_NODES = 111_059_956
PAPERS_EDGES = 1_615_685_872
# the cost model's bytes: the Lanczos basis (ncv + 1 = 65 float64 vectors for k = 16), per stored
# entry the rank's CSR rows (int64 column, float64 weight) and the operator (int64 column,
# float64 value), per halo row 3 float64 buffers, and the adjacency file's read (_read_model)
BASIS_VECTORS = 65
BYTES_PER_ENTRY = 32
BYTES_PER_HALO_ROW = 24
NETWORK_BYTES_PER_S = 10e9  # 100 Gb/s between machines
MACHINE_BYTES = 64e9  # the memory a rank may use
# a rank streams a canonical CSR file: its row pointers whole (int64), and a chunk of column
# indices, values and their positions at a time (encode_distributed.READ_CHUNK entries)
READ_CHUNK_BYTES = (1 << 20) * (8 + 8 + 8)


def _read_model(n: int) -> float:
    """Bytes a rank holds to read its rows of an ``n``-node adjacency file."""
    return 8.0 * (n + 1) + READ_CHUNK_BYTES


def _halo_model(n: int, entries: float, world: int) -> float:
    """Halo rows of one rank if its entries' columns fell uniformly over the graph: the other
    ranks' nodes it touches at least once."""
    rows = n / world
    return (n - rows) * (1.0 - float(np.exp(-entries / world / n)))


def _memory_model(n: int, entries: float, world: int, halo: float) -> tuple[float, float]:
    rows = n / world
    return (8 * BASIS_VECTORS * rows + BYTES_PER_ENTRY * entries / world
            + BYTES_PER_HALO_ROW * halo), _read_model(n)


def papers_distributed_cost_table(data: dict) -> str:
    """A cost model of LapPE (k = 16) on ogbn-papers100M by distributed Lanczos, its rates
    measured on ogbn-arxiv (``distributed_encode.json``)."""
    g = data.get("graph_stats")
    lap = {r["ranks"]: r for r in data["rows"] if r["encoding"] == "lap" and r["ranks"] > 0
           and not r["failed"]}
    if g is None or 1 not in lap:
        return "(the cost model needs distributed_encode.json's graph_stats and a 1-rank row)"
    n, entries = g["num_nodes"], g["csr_entries"]
    one = lap[1]
    per_entry = one["seconds"] / one["products"] / entries  # seconds per stored entry
    lines = ["Model, checked on arxiv (per rank: memory above baseline, the halo, seconds per "
             "Lanczos product):", "",
             "| ranks | halo model / measured | memory model (GB) | measured (GB) | "
             "measured / model | s per product | of which halo exchange |",
             "| ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    factors, per_halo = [], []
    for world, r in sorted(lap.items()):
        halo = max(r["communication"]["halo_rows"])
        model_halo = _halo_model(n, entries, world)
        mem, read = _memory_model(n, entries, world, halo)
        measured = max(p["peak_above_baseline_gb"] for p in r["processes"]) * 1e9
        factors.append(measured / (mem + read))
        step = r["seconds"] / r["products"]
        exchange = step - per_entry * entries / world
        if world > 1:
            per_halo.append(max(exchange, 0.0) / halo)
        lines.append(f"| {world} | {model_halo / max(halo, 1):.2f} | {(mem + read) / 1e9:.3f} "
                     f"| {measured / 1e9:.3f} | {factors[-1]:.2f} | {step * 1e3:.1f} ms | "
                     f"{max(exchange, 0.0) * 1e3:.1f} ms |")
    factor = max(factors)
    halo_rate = max(per_halo) if per_halo else 0.0
    products = one["products"]
    p_entries = 2.0 * PAPERS_EDGES
    lines += ["", f"ogbn-papers100M ({PAPERS_NODES:,} nodes, {PAPERS_EDGES:,} edges, at most "
              f"{p_entries:,.0f} stored entries): memory = {factor:.2f} (the largest measured / "
              "model above) x the model; seconds per product = arxiv's per stored entry "
              f"({per_entry * 1e9:.2f} ns, 1 rank) x the rank's entries + its halo's values "
              f"at {NETWORK_BYTES_PER_S / 1e9:.0f} GB/s (on this machine's loopback: "
              f"{halo_rate * 1e9:.1f} ns a halo row); {products:,} products as on arxiv, and "
              "5x that for a more clustered spectrum:", "",
              "| ranks | rows a rank | halo rows a rank (model) | memory a rank (GB) | "
              "of which the file's row pointers | sent per product, all ranks (GB) | hours "
              f"({products:,} products) | hours (5x) |",
              "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    fits = None
    for world in (8, 16, 32, 64, 128):
        halo = _halo_model(PAPERS_NODES, p_entries, world)
        mem, read = _memory_model(PAPERS_NODES, p_entries, world, halo)
        step = per_entry * p_entries / world + 8.0 * halo / NETWORK_BYTES_PER_S
        if fits is None and factor * (mem + read) <= MACHINE_BYTES:
            fits = (world, factor * (mem + read), step * products)
        lines.append(f"| {world} | {PAPERS_NODES / world:,.0f} | {halo:,.0f} | "
                     f"{factor * (mem + read) / 1e9:.1f} | {read / 1e9:.1f} | "
                     f"{8.0 * halo * world / 1e9:.1f} | {step * products / 3600:.2f} | "
                     f"{5 * step * products / 3600:.2f} |")
    if fits is not None:
        world, need, seconds = fits
        lines += ["", f"The fewest ranks whose LapPE fits {MACHINE_BYTES / 1e9:.0f} GB a rank: "
                  f"**{world}** ({need / 1e9:.1f} GB a rank), about **{seconds / 3600:.1f} h** "
                  f"at arxiv's product count, {5 * seconds / 3600:.1f} h at 5x."]
        lines += _papers_other_rows(data, n)
    return "\n".join(lines)


def _papers_other_rows(data: dict, n: int) -> list[str]:
    """RFP and RWSE on ogbn-papers100M, scaled from arxiv's 4-rank rows: memory above
    baseline by the rows a rank holds (their outputs and halo buffers dominate), plus the
    file's row pointers; seconds by the entries a rank multiplies (RFP) or the nodes it starts walks
    from (RWSE), plus what it sends at the network's rate; at the fewest ranks that fit."""
    out = ["", "RFP and RWSE, scaled from arxiv's 4-rank rows (memory above baseline by a "
           "rank's rows, plus the file's row pointers; seconds by a rank's entries (RFP) or nodes "
           f"(RWSE), plus what it sends at {NETWORK_BYTES_PER_S / 1e9:.0f} GB/s; arxiv's 4 ranks "
           f"shared {data['cpu_count']} cores, so its seconds are upper bounds), at the fewest "
           f"ranks that fit {MACHINE_BYTES / 1e9:.0f} GB a rank:", "",
           "| encoding | arxiv, 4 ranks: GB above baseline, s | ranks | papers100M: GB a rank | "
           "hours |", "| --- | ---: | ---: | ---: | ---: |"]
    p_entries = 2.0 * PAPERS_EDGES
    read = _read_model(PAPERS_NODES)
    for r in data["rows"]:
        if r["ranks"] != 4 or r["encoding"] not in ("rfp", "rwse") or r["failed"]:
            continue
        above = max(p["peak_above_baseline_gb"] for p in r["processes"]) * 1e9
        for world in (8, 16, 32, 64, 128, 256):
            grow = (PAPERS_NODES / world) / (n / 4)
            need = above * grow + read
            if need <= MACHINE_BYTES or world == 256:
                break
        halo = _halo_model(PAPERS_NODES, p_entries, world)
        if r["encoding"] == "rfp":  # 8 products of 4 draws x 16 float32 columns
            seconds = (r["seconds"] * grow * p_entries / PAPERS_NODES
                       / (data["graph_stats"]["csr_entries"] / n)
                       + 8 * 64 * 4.0 * halo / NETWORK_BYTES_PER_S)
        else:
            sent = 8.0 * r["walk_values_sent"] / 4 * grow
            seconds = r["seconds"] * grow + sent / NETWORK_BYTES_PER_S
        out.append(f"| {r['encoding']} | {above / 1e9:.3f}, {r['seconds']:.1f} | {world} | "
                   f"{need / 1e9:.1f} | {seconds / 3600:.2f} |")
    return out


def arxiv_nodes_table(data: dict) -> str:
    """Structure-only node classification on ogbn-arxiv per model and encoding, over seeds
    (from ``benchmarks/arxiv_nodes.py --accuracy``)."""
    import statistics

    rows = data["rows"]
    budgets = dict.fromkeys((r["model"], r["epochs"]) for r in rows)
    commands = "; ".join(f"`python benchmarks/arxiv_nodes.py --accuracy --models {model} "
                         f"--epochs {epochs}`" for model, epochs in budgets)
    lines = [
        f"{commands} (one thread per run; {data['channels']} channels, {data['layers']} layers, "
        "full batch, every node's input the same constant: what a model learns beyond the "
        "degree comes from the encoding; test accuracy at the best validation epoch, mean and "
        "standard deviation over seeds; the epochs' times are in the timing table below):",
        "",
        "| model | epochs | encoding | seeds | test accuracy | validation accuracy | "
        "test vs no encoding |",
        "| --- | ---: | --- | ---: | ---: | ---: | ---: |",
    ]

    def spread(values: list[float]) -> str:
        sd = statistics.stdev(values) if len(values) > 1 else 0.0
        return f"{statistics.mean(values):.4f} ± {sd:.4f}"

    for model, epochs in budgets:
        mine = [r for r in rows if r["model"] == model and r["epochs"] == epochs]
        base = [r["test"] for r in mine if r["encoding"] == "none"]
        for encoding in dict.fromkeys(r["encoding"] for r in mine):
            runs = [r for r in mine if r["encoding"] == encoding]
            test = [r["test"] for r in runs]
            gain = (f"{statistics.mean(test) - statistics.mean(base):+.4f}"
                    if base and encoding != "none" else "")
            lines.append(f"| {model} | {epochs} | {encoding} | {len(runs)} | {spread(test)} | "
                         f"{spread([r['val'] for r in runs])} | {gain} |")
    local = data.get("lap_localization")
    if local:
        sizes = local["effective_nodes"]
        lines += ["", f"LapPE's {len(sizes)} eigenvectors (`--localization`) each live on "
                      f"{min(sizes):.0f} to {max(sizes):.0f} of the {local['num_nodes']:,} nodes "
                      "(inverse participation ratio), eigenvalues "
                      f"{min(local['eigenvalues']):.1e} to {max(local['eigenvalues']):.1e}: they "
                      "describe a few hundred nodes and tell the model nothing about the rest."]
    if data.get("note"):
        lines += ["", f"Run: {data['note']}."]
    return "\n".join(lines)


def arxiv_nodes_timing_table(data: dict) -> str:
    """An ogbn-arxiv training epoch of graphpe's models with LapPE and RWSE as inputs beside
    PyG's without (from ``benchmarks/arxiv_nodes.py --timing``)."""
    lines = [
        "`python benchmarks/arxiv_nodes.py --timing` (each model in its own process, one "
        f"thread, {data['channels']} channels, {data['layers']} layers, full batch; peak "
        "memory of the process, the graph and the encodings included):",
        "",
        "| model | library | encodings | s / epoch | PyG / graphpe | peak memory (GB) |",
        "| --- | --- | --- | ---: | ---: | ---: |",
    ]
    rows = data["rows"]
    for model in dict.fromkeys(r["model"] for r in rows):
        pyg = next((r for r in rows if r["model"] == model and r["library"] == "pyg"), None)
        for r in (r for r in rows if r["model"] == model):
            ratio = (f"{pyg['epoch_seconds'] / r['epoch_seconds']:.2f}x"
                     if pyg and r["library"] == "graphpe" else "")
            lines.append(f"| {model} | {r['library']} | {', '.join(r['encodings']) or 'none'} "
                         f"| {r['epoch_seconds']:.2f} | {ratio} | {r['peak_rss_gb']:.2f} |")
    return "\n".join(lines)


def sampled_batches_table(data: dict) -> str:
    """NeighborLoader batches with and without the encodings' rows (from
    ``benchmarks/sampled_batches.py``)."""
    first = data["rows"][0]
    fanouts = ", ".join(str(k) for k in data["fanouts"])
    lines = [
        f"`python benchmarks/sampled_batches.py` ({first['nodes']:,} nodes, "
        f"{first['edges']:,} directed edges, 100 features per node; {data['batch_size']:,} seed "
        f"nodes per batch, fan-outs {fanouts}; median of {first['batches']} batches, one "
        "thread, each case in its own process):",
        "",
        "| node attributes | loader s / batch (the same batches, in turn) | GraphSAGE step s / "
        "batch (loader included) | peak memory (GB) |",
        "| --- | ---: | ---: | ---: |",
    ]
    without, with_ = data["rows"]
    lines += [f"| features | {with_['load_seconds_without_encodings']:.3f} | "
              f"{without['step_seconds']:.3f} | {without['peak_rss_gb']:.2f} |",
              f"| features + LapPE + RWSE rows | {with_['load_seconds']:.3f} | "
              f"{with_['step_seconds']:.3f} | {with_['peak_rss_gb']:.2f} |"]
    summary = data["summary"]
    lines += ["", f"Carrying the encodings: {summary['load_overhead']:+.1%} loader time per "
                  f"batch, {summary['step_overhead']:+.1%} per training step (the encoders' "
                  "work)." + (f" Run: {data['note']}." if data.get("note") else "")]
    return "\n".join(lines)


def subgraph_pe_table(data: dict) -> str:
    """Sampled batches of ogbn-arxiv carrying the whole graph's encodings or computing each
    subgraph's own (from ``benchmarks/subgraph_pe.py``)."""
    import statistics

    fanouts = ", ".join(str(k) for k in data["fanouts"])
    lines = [f"`python benchmarks/subgraph_pe.py --timing` ({data['batch_size']:,} training "
             f"nodes per batch, fan-outs {fanouts}, `--pe {data['pe']}`, one thread):", ""]
    t = data.get("timing")
    if t:
        per = t["batch_seconds"]
        batches = t["train_batches_per_epoch"]
        lines += [
            "| mode | encoded once (s) | loader s / batch (the same batches, in turn) | "
            "encodings' seconds per training epoch |",
            "| --- | ---: | ---: | ---: |",
            f"| no encodings | | {per['none']:.3f} | |",
            f"| whole graph, rows cut to the batch (default) | "
            f"{t['whole_graph_encoding_seconds']:.1f} | {per['whole graph']:.3f} | "
            f"{batches * (per['whole graph'] - per['none']):.1f} |",
            f"| each subgraph (`--subgraph-pe`) | | {per['each subgraph']:.3f} | "
            f"{batches * (per['each subgraph'] - per['none']):.1f} |",
            "",
            f"A subgraph has {t['subgraph_nodes_median']:,.0f} nodes (median of "
            f"{t['batches']} batches; arxiv {t['num_nodes']:,}); an epoch is {batches} "
            "training batches, and validation and test batches are encoded again every epoch "
            "in the subgraph mode."]
    if data.get("note"):
        lines += ["", f"Run: {data['note']}."]
    rows = data.get("rows", [])
    if rows:
        seeds = ",".join(str(x) for x in sorted({r["seed"] for r in rows}))
        lines += ["", f"`python benchmarks/subgraph_pe.py --accuracy --epochs "
                      f"{rows[0]['epochs']} --seeds {seeds}` (GraphSAGE 2 x 64, structure "
                      "only, test accuracy "
                      "at the best validation epoch, mean and standard deviation over seeds):",
                  "", "| mode | seeds | test accuracy | validation accuracy | s / epoch |",
                  "| --- | ---: | ---: | ---: | ---: |"]
        for mode in dict.fromkeys(r["mode"] for r in rows):
            runs = [r for r in rows if r["mode"] == mode]

            def spread(values: list[float]) -> str:
                sd = statistics.stdev(values) if len(values) > 1 else 0.0
                return f"{statistics.mean(values):.4f} ± {sd:.4f}"

            lines.append(f"| {mode} | {len(runs)} | {spread([r['test'] for r in runs])} | "
                         f"{spread([r['val'] for r in runs])} | "
                         f"{statistics.mean(r['seconds_per_epoch'] for r in runs):.1f} |")
    return "\n".join(lines)


def peptides_func_table(data: dict) -> str:
    """Peptides-func AP at the budget run beside the paper's (from
    ``benchmarks/peptides_func.py``)."""
    import statistics

    paper, rows = data["paper"], data["rows"]
    lines = ["| run | epochs | seeds | test AP | validation AP | s / epoch (one thread) |",
             "| --- | ---: | ---: | ---: | ---: | ---: |"]
    for epochs in sorted({r["epochs"] for r in rows}):
        runs = [r for r in rows if r["epochs"] == epochs]
        test, val = [r["test"] for r in runs], [r["val"] for r in runs]

        def spread(values: list[float]) -> str:
            """Mean ± std over the seeds; one seed's value alone (no spread to show)."""
            if len(values) == 1:
                return f"{values[0]:.4f}"
            return f"{statistics.mean(values):.4f} ± {statistics.stdev(values):.4f}"

        seeds = ",".join(str(r["seed"]) for r in runs)
        lines.append(f"| graphpe, `python benchmarks/peptides_func.py --epochs {epochs} "
                     f"--seeds {seeds}` | "
                     f"{epochs} | {len(runs)} | {spread(test)} | {spread(val)} | "
                     f"{statistics.mean(r['seconds_per_epoch'] for r in runs):.0f} |")
    lines.append(f"| {paper['source']} | {paper['epochs']} | {paper['seeds']} | "
                 f"{paper['test_ap']:.4f} ± {paper['std']:.4f} | | |")
    if data.get("note"):
        lines += ["", f"Run: {data['note']}."]
    return "\n".join(lines)


def zinc_parity_table(data: dict) -> str:
    """PyG's examples/graph_gps.py against graphpe train at equal settings on ZINC (from
    ``benchmarks/zinc_parity.py --table``)."""
    sides = data["sides"]
    lines = ["| side | seeds finished | epochs | test MAE (mean ± std) | training s / epoch "
             "(median) | unfinished (seed: epochs run) |",
             "| --- | --- | ---: | ---: | ---: | --- |"]
    names = {"pyg": "PyG `examples/graph_gps.py`",
             "graphpe": "graphpe train, `configs/zinc_gps_pyg_example.toml`"}
    for side in ("pyg", "graphpe"):
        row = sides[side]
        mae = "-" if row["mean"] is None else (
            f"{row['mean']:.4f} ± {row['std']:.4f}" if row["std"] is not None
            else f"{row['mean']:.4f}")
        sec = row["train_seconds_per_epoch"]
        unfinished = ", ".join(f"{k}: {v}" for k, v in row["unfinished"].items()) or "-"
        lines.append(f"| {names[side]} | {','.join(map(str, row['seeds'])) or '-'} | "
                     f"{','.join(map(str, row['epochs'])) or '-'} | {mae} | "
                     f"{'-' if sec is None else f'{sec:.1f}'} | {unfinished} |")
    if "difference" in data:
        verdict = "within" if data["within_two_se"] else "not within"
        lines += ["", f"graphpe − PyG: {data['difference']:+.4f} MAE, {verdict} two standard "
                      f"errors of the difference ({data['two_standard_errors']:.4f}); graphpe "
                      f"{data['speedup']:.2f}x PyG's speed per training epoch (target "
                      f"{data['target_speedup']}x)."]
    if "speed" in data:
        speed = data["speed"]
        lines += ["", f"Speed alone (`{speed['command']}`: {speed['rounds']} rounds of one "
                      "training epoch of each side in turn, in one process, "
                      f"{speed['threads']} thread): PyG "
                      f"{speed['median_seconds']['pyg']:.1f} s, graphpe "
                      f"{speed['median_seconds']['graphpe']:.1f} s per epoch (medians): "
                      f"graphpe {speed['speedup']:.2f}x (target {data['target_speedup']}x)."]
    return "\n".join(lines)


def sparse_eigen_table(data: dict) -> str:
    """graphpe's Chebyshev subspace iteration against ARPACK on generated graphs (from
    ``benchmarks/sparse_eigen.py``): one row per graph, one column group per graphpe mode."""
    modes = [("float64", "float64"), ("float32", "float32"),
             ("float32 products, float64", "f32 products, f64")]
    graphs: dict[tuple, dict] = {}
    for r in data["rows"]:
        g = graphs.setdefault((r["graph"], r["nodes"]), {"nnz": r["nnz"]})
        if r["method"].startswith("ARPACK"):
            g["arpack"] = r
        for key, _ in modes:
            if r["method"].startswith(f"graphpe ChFSI {key} tol"):
                g[key] = r
    used = [(key, label) for key, label in modes if any(key in g for g in graphs.values())]

    def solve(r: dict | None) -> str:
        if r is None:
            return "-"
        note = "" if r["converged"] else ", not converged"
        return f"{r['seconds']:.2f} ({r['iterations']}{note})"

    def errors(g: dict, field: str) -> str:
        return " / ".join(f"{g[key][field]:.0e}" if key in g and field in g[key] else "-"
                          for key, _ in used)

    names = " / ".join(label for _, label in used)
    lines = [f"`python benchmarks/sparse_eigen.py` ({data['threads']} torch thread(s); ARPACK "
             "`eigsh(which='SA', tol=1e-8)` in a subprocess), k = "
             f"{data['k']}; errors against ARPACK where it finished, in the order {names}:", "",
             "| graph | nodes | nonzeros | ARPACK s | "
             + " | ".join(f"{label} s (iterations)" for _, label in used)
             + " | max dlambda | sin angle | max residual |",
             "| --- | ---: | ---: | ---: | " + " | ".join("---:" for _ in used)
             + " | ---: | ---: | ---: |"]
    for (graph, nodes), g in graphs.items():
        ref = g.get("arpack")
        arpack = ("-" if ref is None else f"{ref['seconds']:.2f}" if "seconds" in ref
                  else ref["method"].removeprefix("ARPACK eigsh ").strip("()"))
        lines.append(f"| {graph} | {nodes:,} | {g['nnz']:,} | {arpack} | "
                     + " | ".join(solve(g.get(key)) for key, _ in used)
                     + f" | {errors(g, 'eig_err')} | {errors(g, 'subspace_sin')} | "
                     f"{errors(g, 'residual')} |")
    return "\n".join(lines)


def directed_pairs_table(data: dict) -> str:
    """Direction-only pairs separated per encoding (from ``benchmarks/directed_pairs.py``)."""
    labels = data["labels"]
    lines = ["`python benchmarks/directed_pairs.py` (pairs of directed graphs with one "
             "underlying undirected graph, not isomorphic as directed graphs; an encoding "
             "separates a pair when colour refinement seeded by it tells the two apart, "
             "refined over the undirected edges or over in- and out-neighbours; eigen "
             "encodings through their eigenspace projectors over all pairs, k = n):", "",
             "| family | refinement | pairs | " + " | ".join(labels) + " |",
             "| --- | --- | ---: |" + " ---: |" * len(labels)]
    for r in data["rows"]:
        lines.append(f"| {r['family']} | {r['refinement']} | {r['pairs']} | " +
                     " | ".join(str(r[lab]) for lab in labels) + " |")
    for mode in data["modes"]:
        lines.append(f"| **total** | {mode} | {data['pairs']} | " +
                     " | ".join(f"**{data['total'][mode][lab]}**" for lab in labels) + " |")
    false = sum(data["control_false_separations"].values())
    lines += ["", f"Control: a graph against a relabelled copy of itself "
                  f"({data['control_pairs']} graphs) is separated {false} times over all "
                  "encodings and both refinements."]
    return "\n".join(lines)


def expressivity_table(runs: list[list[dict]]) -> str:
    """CSL/EXP test accuracy per PE (from ``benchmarks/expressivity.py``, one JSON per
    dataset)."""
    rows = [r for run in runs if isinstance(run, list) for r in run]  # not expressivity_pairs
    pes = list(dict.fromkeys(r["pe_label"] for r in rows))
    lines = ["`python benchmarks/expressivity.py --datasets NAME --folds ...` (GINE 4 x 32, "
             "100 epochs, test accuracy at the best validation epoch, mean over folds):", "",
             "| dataset | folds | " + " | ".join(pes) + " |",
             "| --- | ---: |" + " ---: |" * len(pes)]
    for dataset in dict.fromkeys(r["dataset"] for r in rows):
        cells = {r["pe_label"]: r for r in rows if r["dataset"] == dataset}
        folds = sorted({r["folds"] for r in cells.values()})
        lines.append(f"| {dataset} | {'/'.join(map(str, folds))} | " + " | ".join(
            f"{cells[pe]['test_accuracy']:.3f}" if pe in cells else "" for pe in pes) + " |")
    return "\n".join(lines)


def _zinc_seeds_table(runs: list[list[dict]], label, baseline: str | dict[str, str], command,
                      shape: str, header: str) -> str:
    """Models trained with the same seeds in each run: per ``label(row)``, mean and spread of
    the test and validation MAE over all seeds and each seed's test MAE, then every label's
    seed-by-seed difference to ``baseline`` (the fair comparison: each seed's models share a
    run); a dict maps labels to their own baselines (labels it leaves out get none)."""
    rows = [r for run in runs for r in run]
    lines = [f"{' and '.join(command(run) for run in runs)} ({shape}; mean +- standard "
             "deviation over the seeds):", "",
             f"| {header} | test MAE | val MAE | test MAE per seed | parameters | s/epoch |",
             "| --- | ---: | ---: | --- | ---: | ---: |"]
    labels = list(dict.fromkeys(label(r) for r in rows))
    for name in labels:
        cell = sorted((r for r in rows if label(r) == name), key=lambda r: r.get("seed", 0))
        test = np.array([r["test_mae"] for r in cell])
        val = np.array([r["val_mae"] for r in cell])
        per_seed = ", ".join(f"{r['test_mae']:.4f}" for r in cell)
        lines.append(f"| {name} | {test.mean():.4f} +- {test.std():.4f} | "
                     f"{val.mean():.4f} +- {val.std():.4f} | {per_seed} | "
                     f"{cell[0]['params']:,} | "
                     f"{np.mean([r['seconds_per_epoch'] for r in cell]):.1f} |")
    by_seed = {(label(r), r.get("seed", 0)): r["test_mae"] for r in rows}
    notes = []
    controls = baseline if isinstance(baseline, dict) else {n: baseline for n in labels}
    for name in labels:
        base = controls.get(name)
        seeds = sorted(s for n, s in by_seed if n == name and (base, s) in by_seed)
        if base is None or name == base or len(seeds) < 2:
            continue
        diff = np.array([by_seed[(name, s)] - by_seed[(base, s)] for s in seeds])
        sd = diff.std(ddof=1)
        # the paired t statistic: how many standard errors the mean difference is from 0
        t = diff.mean() / (sd / np.sqrt(len(diff))) if sd > 0 else float("nan")
        notes.append(f"{name} minus {base}, seed by seed ({len(seeds)} seeds): mean "
                     f"{diff.mean():+.4f}, standard deviation {sd:.4f}, paired t {t:+.2f}, "
                     f"lower in {(diff < 0).sum()}")
    if notes:
        lines += ["", "Test MAE " + "; ".join(notes) + "."]
    return "\n".join(lines)


def _seeds_and_epochs(run: list[dict]) -> str:
    seeds = ",".join(str(s) for s in sorted({r.get("seed", 0) for r in run}))
    epochs = "/".join(str(e) for e in sorted({r["epochs"] for r in run}))
    return f"--seeds {seeds} --epochs {epochs} --threads 1"


def zinc_pairwise_table(runs: list[list[dict]]) -> str:
    """GPS on ZINC with node encodings and pairwise attention biases, every PE of a run
    trained with the same seeds (``benchmarks/zinc.py --models gps --pes rwse,rwse+rrwp
    --seeds 0,1,2``; several runs add seeds)."""
    def command(run):
        pes = ",".join(dict.fromkeys(r["pe_label"] for r in run))
        return f"`python benchmarks/zinc.py --models gps --pes {pes} {_seeds_and_epochs(run)}`"

    return _zinc_seeds_table(runs, lambda r: r["pe_label"], "rwse", command, "GPS 4 x 64",
                             "PE")


def zinc_graphormer_table(runs: list[list[dict]]) -> str:
    """GPS on ZINC with Graphormer's spatial bias (SPD) alone and with its edge encoding
    (``spd:path_hops=5``), RWSE on the nodes in both, the same seeds in one run
    (``benchmarks/zinc.py --models gps --pes rwse+spd,rwse+spd:path_hops=5 --seeds 0,1``)."""
    def command(run):
        pes = ",".join(dict.fromkeys(r["pe_label"] for r in run))
        return f"`python benchmarks/zinc.py --models gps --pes {pes} {_seeds_and_epochs(run)}`"

    return _zinc_seeds_table(runs, lambda r: r["pe_label"], "rwse+spd", command, "GPS 4 x 64",
                             "PE")


def zinc_grit_table(runs: list[list[dict]]) -> str:
    """ZINC with GRIT's attention over RRWP pair features against GPS with RWSE, the same
    seeds in one run (``benchmarks/zinc.py --runs gps:rwse,gps-grit:rrwp --seeds 0,1,2``)."""
    def command(run):
        pairs = ",".join(dict.fromkeys(f"{r['model']}:{r['pe_label']}" for r in run))
        return f"`python benchmarks/zinc.py --runs {pairs} {_seeds_and_epochs(run)}`"

    return _zinc_seeds_table(runs, lambda r: f"{r['model']}:{r['pe_label']}", "gps:rwse",
                             command,
                             "4 layers, 64 channels (gps-72: 72), batch 128", "model:PE")


def zinc_gatedgcn_table(runs: list[list[dict]]) -> str:
    """ZINC with GatedGCN, alone and as GPS's local MPNN, against GINE and GPS with GINE, RWSE
    everywhere, the same seeds in one run (``benchmarks/zinc.py --runs gine:rwse,gatedgcn:rwse,
    gps:rwse,gps-gatedgcn:rwse --seeds 0,1``)."""
    def command(run):
        pairs = ",".join(dict.fromkeys(f"{r['model']}:{r['pe_label']}" for r in run))
        return f"`python benchmarks/zinc.py --runs {pairs} {_seeds_and_epochs(run)}`"

    return _zinc_seeds_table(runs, lambda r: f"{r['model']}:{r['pe_label']}", "gine:rwse",
                             command, "4 layers, 64 channels, batch 128", "model:PE")


def zinc_graph_token_table(runs: list[list[dict]]) -> str:
    """ZINC with Graphormer's graph token read out (``pool='token'``) against the same model
    pooling its nodes, on GPS without message passing (Graphormer's encodings: degree, SPD with
    the path edges) and on GPS with GINE, the same seeds in one run (``benchmarks/zinc.py
    --runs gps-attn:...,gps-attn-token:...,gps:rwse,gps-token:rwse``)."""
    def command(run):
        pairs = ",".join(dict.fromkeys(f"{r['model']}:{r['pe_label']}" for r in run))
        return f"`python benchmarks/zinc.py --runs {pairs} {_seeds_and_epochs(run)}`"

    labels = {f"{r['model']}:{r['pe_label']}" for run in runs for r in run}
    controls = {}
    for name in labels:
        model, pe = name.split(":", 1)
        if model.endswith("-token"):
            controls[name] = f"{model.removesuffix('-token')}:{pe}"
    return _zinc_seeds_table(runs, lambda r: f"{r['model']}:{r['pe_label']}", controls,
                             command, "4 layers, 64 channels, batch 128", "model:PE")


def zinc_pe_table(runs: list[list[dict]]) -> str:
    """Test MAE of each model with each PE after a short run (``benchmarks/zinc.py --models
    gine --json benchmarks/results/zinc_pe_gine.json``, one file per model), one seed."""
    rows = [r for run in runs for r in run]
    pes = list(dict.fromkeys(r["pe_label"] for r in rows))
    epochs = sorted({r["epochs"] for r in rows})
    lines = [f"`python benchmarks/zinc.py --models MODEL --threads 1 --json "
             f"benchmarks/results/zinc_pe_MODEL.json` (4 layers x 64 channels, batch 128, "
             f"{'/'.join(map(str, epochs))} epochs, seed 0; test MAE at the best validation "
             "epoch):", "", "| model | " + " | ".join(pes) + " |",
             "| --- |" + " ---: |" * len(pes)]
    for model in dict.fromkeys(r["model"] for r in rows):
        mine = {r["pe_label"]: r for r in rows if r["model"] == model}
        params = [r["params"] for r in mine.values()]
        secs = [r["seconds_per_epoch"] for r in mine.values()]
        label = (f"{model.upper()} ({min(params) / 1e3:.0f}k-{max(params) / 1e3:.0f}k params, "
                 f"{min(secs):.0f}-{max(secs):.0f} s/epoch)")
        cells = [f"{mine[pe]['test_mae']:.3f}" if pe in mine else "-" for pe in pes]
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def ogbg_mol_table(rows: list[dict]) -> str:
    """OGB molecule sets with the official splits and Evaluator (``benchmarks/ogbg_mol.py``):
    one row per dataset and model, one column per PE."""
    pes = list(dict.fromkeys(r["pe_label"] for r in rows))
    epochs = sorted({r["epochs"] for r in rows})
    lines = ["`python benchmarks/ogbg_mol.py --epochs "
             f"{'/'.join(map(str, epochs))} --threads 1 --json benchmarks/results/ogbg_mol.json` "
             "(4 layers x 64 channels, dropout 0.2, batch 64, one thread; test metric of the "
             "official Evaluator at the best validation epoch):", "",
             "| dataset | model | metric | " + " | ".join(pes) + " |",
             "| --- | --- | --- |" + " ---: |" * len(pes)]
    for dataset, model in dict.fromkeys((r["dataset"], r["model"]) for r in rows):
        mine = {r["pe_label"]: r for r in rows if (r["dataset"], r["model"]) == (dataset, model)}
        metric = next(iter(mine.values()))["metric"]
        cells = [f"{mine[pe]['test']:.3f}" if pe in mine else "-" for pe in pes]
        lines.append(f"| {dataset} | {model.upper()} | {metric} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def grit_step_table(data: dict) -> str:
    """GRIT's training step with graphpe's compiled pair kernels against the torch
    formulation (``benchmarks/grit_step.py``)."""
    lines = [f"`{data['command']}` (GRIT 4 x 64, 4 heads, RRWP K=21 over all pairs, ZINC "
             f"batches of {data['batch_size']} graphs, {data['pairs_per_batch']:,.0f} pairs; "
             f"{data['threads']} thread; median of {data['rounds']} rounds, the paths taking "
             "turns):", "",
             "| path | forward ms | backward ms | optimizer ms | step ms | speedup |",
             "| --- | ---: | ---: | ---: | ---: | ---: |"]
    for r in data["rows"]:
        lines.append(f"| {r['path']} | {r['forward_ms']:.1f} | {r['backward_ms']:.1f} | "
                     f"{r['optimizer_ms']:.1f} | {r['step_ms']:.1f} | {r['speedup']:.2f}x |")
    return "\n".join(lines)


def cold_start_table(data: dict) -> str:
    """First use: a fresh environment, fresh processes with caches filled, against PyG (from
    ``benchmarks/cold_start.py``)."""
    header = ["| encoding | run | import (s) | first call (ms) | all graphs (s) | vs PyG |",
              "| --- | --- | ---: | ---: | ---: | ---: |"]

    def rows(items: list[dict]) -> list[str]:
        out = []
        for r in items:
            ratio = "" if r["speedup_vs_pyg"] is None else f"{r['speedup_vs_pyg']:.2f}x"
            out.append(f"| {r['encoding']} | {r['run']} | {r['import_s']:.2f} | "
                       f"{r['first_call_s'] * 1e3:.1f} | {r['total_s']:.2f} | {ratio} |")
        return out

    lines = []
    fresh = data.get("fresh_env")
    if fresh:
        lines += [f"`python benchmarks/cold_start.py --fresh-env`: a new virtual environment, "
                  f"`pip install .` of this checkout ({fresh['install_s']:.0f} s, the kernels "
                  "compiled ahead of time included), then one process per row on an empty "
                  "numba cache, one pass over TU MUTAG (188 graphs) one graph at a time, 1 "
                  "thread; seconds from the data being loaded:", "", *header,
                  *rows(fresh["rows"]), ""]
    lines += [f"`python benchmarks/cold_start.py` (fresh process per row, 1 thread, first "
              f"{data['limit']:,} graphs of ZINC-12k train one at a time, torch {data['torch']}, "
              f"PyG {data['pyg']}; seconds from the data being loaded; first call: the first "
              "graph, after the import; *numba only*: the extension switched off, "
              "`GRAPHPE_AOT=0`):", "", *header, *rows(data["rows"])]
    warm = data["warmup_s"]
    lines += ["", f"`graphpe warmup` (the kernels the extension lacks) on an empty numba cache "
                  f"({data['cpu_count']} CPUs): "
                  f"{warm['1']:.1f} s in one process, {warm['2']:.1f} s in two."]
    if data.get("views"):
        lines += ["", "`precompute` on 1,000 graphs of ZINC-12k train held as views, warm, best "
                      "of 5, each against an `InMemoryDataset` of the same graphs (target: a "
                      "view within 1.2x):", "",
                  "| encoding | graphs | held as | us per graph | vs whole dataset |",
                  "| --- | --- | --- | ---: | ---: |"]
        lines += [f"| {r['encoding']} | {r.get('graphs', '')} | {r['held_as']} | "
                  f"{r['us_per_graph']:.1f} | {r['vs_whole']:.2f}x |" for r in data["views"]]
    return "\n".join(lines)


def _short_paper(paper: str) -> str:
    """``"Ying et al., Do Transformers ..., NeurIPS 2021"`` -> ``"Ying et al., NeurIPS 2021"``;
    several papers (separated by ``;``) each so."""
    def short(one: str) -> str:
        parts = [p.strip() for p in one.split(",")]
        return parts[0] if len(parts) < 3 else f"{parts[0]}, {parts[-1]}"
    return "; ".join(short(one) for one in paper.split(";"))


def encodings_table() -> str:
    """Every encoding of graphpe's registry: name, what it is, paper, transform, encoder (the
    README's overview; ``docs/encodings.md`` carries the registry's own table with settings)."""
    from graphpe.encodings import encodings
    from graphpe.encodings.registry import GATE, PAIR

    lines = ["| name | what it is | paper | transform | encoder |",
             "| --- | --- | --- | --- | --- |"]
    for name, cls in encodings().items():
        spec = cls()
        transform = spec.transform()
        if cls.kind == PAIR:
            encoder = (f"`{type(spec.pair_encoder(8, 2, False)).__name__}` (bias), "
                       f"`{type(spec.pair_encoder(8, 2, True)).__name__}` (GRIT)")
        elif cls.kind == GATE:
            encoder = "`PEGGate` in every layer"
        else:
            encoder = f"`{type(spec.encoder(8)).__name__}`"
        made = "learned in the model" if transform is None else f"`{type(transform).__name__}`"
        lines.append(f"| `{name}` | {cls.summary} | {_short_paper(cls.paper)} | {made} | "
                     f"{encoder} |")
    return "\n".join(lines)


def headline_table(precompute: dict, train_step: dict) -> str:
    """The README's speed table: whole-dataset encoding and the GPS training step against PyG
    (from ``benchmarks/precompute.py`` and ``benchmarks/train_step.py``)."""
    lines = [f"One CPU thread; `python benchmarks/precompute.py --threads "
             f"{precompute['threads']}` and `{train_step['command']}`, PyG {precompute['pyg']}, "
             f"torch {precompute['torch']}:", "",
             "| task | graphpe | PyG | speed-up |", "| --- | ---: | ---: | ---: |"]
    for r in precompute["rows"]:
        if r["path"] == "dataset" and r["ratio"] is not None:
            lines.append(f"| {r['encoding']}, {r['dataset']}, whole dataset | "
                         f"{_rate(r['graphpe_graphs_per_s'])} graphs/s | "
                         f"{_rate(r['pyg_graphs_per_s'])} graphs/s | {r['ratio']:.1f}x |")
    rows = {r["model"]: r for r in train_step["rows"]}
    pyg, ours = rows["pyg GPSConv"], rows["graphpe"]
    lines.append(f"| GPS training step, ZINC batch of {train_step['batch_size']} | "
                 f"{ours['ms_per_step']:.1f} ms | {pyg['ms_per_step']:.1f} ms | "
                 f"{ours['speedup_vs_pyg']:.2f}x |")
    return "\n".join(lines)


def _percent(mean: float | None, std: float | None) -> str:
    return "" if mean is None else f"{100 * mean:.2f} ± {100 * (std or 0.0):.2f}"


def heterophilous_verdict(rows: list[dict]) -> str:
    """Which encodings of a grid helped, which hurt (each beyond two standard errors of the
    same model without encodings, with the difference in points) and which did neither."""
    full = max((r.get("runs", 0) for r in rows), default=0)

    def cells(which):
        return ", ".join(f"{r['model']} + {r['pe']} ({100 * r['diff']:+.2f}"
                         + (f", {r['runs']} of {full} splits so far" if r.get("runs", full)
                            < full else "") + ")" for r in which)

    compared = [r for r in rows if r.get("diff") is not None]
    if not compared:
        return "no encoding measured against the model without one yet"
    helped = [r for r in compared if r["significant"] and r["diff"] > 0]
    hurt = [r for r in compared if r["significant"] and r["diff"] < 0]
    neither = [r for r in compared if not r["significant"]]
    parts = [f"helped: {cells(helped)}" if helped else "none helped",
             *([f"hurt: {cells(hurt)}"] if hurt else []),
             *([f"no difference beyond two standard errors: {cells(neither)}"] if neither
               else [])]
    return "; ".join(parts) + " (test ROC-AUC points against the same model without encodings)"


def heterophilous_table(data: dict) -> str:
    """The heterophilous grids (``benchmarks/heterophilous.py``): test ROC-AUC (%) over the
    splits per model and encodings, the paired difference to no encoding (``*``: beyond two
    standard errors), the encodings' seconds and the training seconds per step; then, per
    grid, which encodings moved the metric beyond two standard errors."""
    lines = ["| dataset | setting | model | encodings | splits | test ROC-AUC (%) | vs none "
             "| precompute s | s / step | min / split |",
             "| --- | --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |"]
    verdicts = []
    for grid in data["grids"]:
        budget = (f"{grid['setting']}: {grid['channels']} ch, {grid['layers']} layers, "
                  f"lr {grid['lr']:g}, {grid['epochs']} steps")
        for row in grid["rows"]:
            if row.get("refused"):  # the encoding cannot take the graph: the first sentence
                lines.append(f"| {grid['dataset']} | {budget} | {row['model']} | {row['pe']} "
                             f"| 0 | refused: {row['refused'].split('. ')[0]} | | | | |")
                continue
            minutes = (row["pe_seconds"] + row["seconds_per_epoch"] * grid["epochs"]) / 60
            vs = "" if row.get("diff") is None else (
                f"{100 * row['diff']:+.2f} ± {100 * row['diff_se']:.2f}"
                + (" *" if row["significant"] else ""))
            lines.append(f"| {grid['dataset']} | {budget} | {row['model']} | {row['pe']} | "
                         f"{row['runs']} | {_percent(row['test_mean'], row['test_std'])} | "
                         f"{vs} | {row['pe_seconds']:.2f} | {row['seconds_per_epoch']:.3f} | "
                         f"{minutes:.1f} |")
        verdict = heterophilous_verdict(grid["rows"])
        verdicts.append(f"- {grid['dataset']}, {grid['setting']}: {verdict}")
    return "\n".join(lines) + "\n\n" + "\n".join(verdicts) + "\n"


def heterophilous_published_table(data: dict) -> str:
    """The published ROC-AUC (%) on Minesweeper and Tolokers beside graphpe's best cell of
    each grid (``heterophilous.json``'s ``published``, each number with its source; each
    paper's protocol is in that file), with how far each graphpe cell is from the best
    published mean on its dataset (points)."""
    lines = ["| model | paper, or graphpe's budget | Minesweeper | Tolokers | source |",
             "| --- | --- | ---: | ---: | --- |"]
    entries = data["published"]["entries"]
    for key in dict.fromkeys((e["model"], e["paper"]) for e in entries):
        mine = {e["dataset"]: e for e in entries if (e["model"], e["paper"]) == key}
        cells = [f"{mine[d]['mean']:.2f} ± {mine[d]['std']:.2f}"
                 + ("" if mine[d].get("verified", True) else " (unverified)")
                 if d in mine and mine[d].get("std") is not None else
                 (f"{mine[d]['mean']:.2f} (one split)" if d in mine else "")
                 for d in ("Minesweeper", "Tolokers")]
        first = next(iter(mine.values()))
        lines.append(f"| {key[0]} | {key[1]} | {cells[0]} | {cells[1]} | "
                     f"{first.get('source', '')} |")
    top = {}  # the best published mean per dataset, and whose
    for e in entries:
        if e.get("std") is not None and e["mean"] > top.get(e["dataset"], (-1.0, ""))[0]:
            top[e["dataset"]] = (e["mean"], e["model"])
    for grid in data["grids"]:
        best = max((r for r in grid["rows"] if r["runs"]), key=lambda r: r["val_mean"],
                   default=None)
        if best is None:
            continue
        short = ""
        if grid["dataset"] in top:
            mean, model = top[grid["dataset"]]
            short = f" ({100 * best['test_mean'] - mean:+.2f} against {model})"
        cells = [_percent(best["test_mean"], best["test_std"]) + short if grid["dataset"] == d
                 else "" for d in ("Minesweeper", "Tolokers")]
        lines.append(f"| graphpe {best['model']} + {best['pe']} (the grid's best validation) "
                     f"| {grid['setting']}: {grid['channels']} ch, {grid['layers']} layers, "
                     f"lr {grid['lr']:g}, {grid['epochs']} steps, {best['runs']} splits | "
                     f"{cells[0]} | {cells[1]} | "
                     f"`python benchmarks/heterophilous.py --dataset {grid['dataset']} "
                     f"--setting {grid['setting']}` |")
    return "\n".join(lines) + "\n"


def heterophilous_train_splits_table(data: dict) -> str:
    """``graphpe train --splits all`` as a user runs it (its ``--results`` JSON): the command,
    the mean ± std over the splits at its budget, the published number of the same
    architecture with the paper's budget, and the minutes the run took on this machine."""
    budget = f"{data['channels']} channels, {data['layers']} layers, {data['epochs']} steps"
    command = (f"`graphpe train --dataset {data['dataset']} --root R --config "
               f"{data['config_file']} --splits {data['splits']}`")
    seconds = data["run_seconds"]
    lines = ["| command | splits | test ROC-AUC (%) | its budget | minutes, all splits "
             "(median a split) |", "| --- | ---: | ---: | --- | ---: |",
             f"| {command} | {data['runs']} | "
             f"{_percent(data['test_mean'], data['test_std'])} | {budget} | "
             f"{sum(seconds) / 60:.0f} ({float(np.median(seconds)) / 60:.1f}) |"]
    for entry in data["published"]:
        spread = "" if entry["std"] is None else f" ± {entry['std']:.2f}"
        lines.append(f"| {entry['paper']}'s {entry['model']} | | {entry['mean']:.2f}{spread} "
                     f"| {entry['protocol']} | |")
    return "\n".join(lines) + "\n"


def config_epochs_table(data: dict) -> str:
    """Each shipped config's epoch on this machine (``benchmarks/config_epochs.py``): its
    encodings' seconds, its first epoch's training, a later epoch (training and evaluation),
    and the budget the config asks for at that rate (a lower bound for a staged config, whose
    measured epochs are its first stage's); the configs whose data is not here are not
    rows."""
    lines = ["| config | dataset | threads | parameters | encodings s | first epoch s (training) "
             "| epoch s | epochs in config | whole budget |",
             "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    from graphpe.cli.options import load_config

    for r in sorted(data["rows"], key=lambda r: (r["dataset"], r["config"])):
        if "error" in r:
            continue
        hours = r["budget_hours"]
        budget = "" if hours is None else (f"{hours:.1f} h" if hours >= 1 else
                                           f"{60 * hours:.0f} min")
        config = ROOT / "configs" / f"{r['config']}.toml"
        if budget and config.exists() and "local_epochs" in load_config(str(config)):
            budget = f"at least {budget}"  # its later stage's epochs cost more than the first's
        lines.append(f"| `{r['config']}` | {r['dataset']} | {r['threads']} | "
                     f"{r['params']:,} | {r['pe_seconds']:.1f} | "
                     f"{r['first_epoch_train_seconds']:.2f} | {r['epoch_seconds']:.2f} | "
                     f"{r['config_epochs']:,} | {budget} |")
    return "\n".join(lines) + "\n"


def heterophilous_pyg_table(data: dict) -> str:
    """graphpe's Polynormer / SGFormer against PyG's on a heterophilous set
    (``benchmarks/heterophilous_pyg.py``): test ROC-AUC (%) over the splits on each side, the
    paired difference with its standard error, and the training step's median seconds (min -
    max over the rounds) measured in turn in one process: PyG as its examples call it
    (``edge_index``), PyG's cached CSR path, graphpe, and PyG's faster path over graphpe's."""
    lines = ["| dataset, model | budget | PyG | graphpe | graphpe - PyG | within 2 SE "
             "| s / step PyG edge_index | s / step PyG cached CSR | s / step graphpe "
             "| PyG's faster / graphpe |",
             "| --- | --- | ---: | ---: | ---: | --- | ---: | ---: | ---: | ---: |"]
    for key, entry in data.items():
        st, summ = entry["settings"], entry.get("summary", {})
        budget = (f"{st['channels']} ch, {st['layers']} layers, lr {st['lr']:g}, "
                  f"{st['epochs']} epochs" if summ else
                  f"{st['channels']} ch, {st['layers']} layers (step timing only)")
        sides = [_percent(summ[lib]["test_mean"], summ[lib]["test_std"])
                 + f" ({summ[lib]['runs']})" if lib in summ else "" for lib in ("pyg", "graphpe")]
        diff = summ.get("difference")
        diff_cell = "" if diff is None else f"{100 * diff['mean']:+.2f} ± {100 * diff['se']:.2f}"
        within = "" if diff is None else ("yes" if diff["within_two_se"] else "no")
        timing = entry.get("timing")
        times = ["", "", "", ""] if timing is None else [
            *(f"{timing['median'][k]:.3f} ({timing['spread'][k][0]:.3f} - "
              f"{timing['spread'][k][1]:.3f})" for k in ("pyg", "pyg_cached_csr", "graphpe")),
            f"{timing['pyg_over_graphpe']:.2f}x"]
        lines.append(f"| {key} | {budget} | {sides[0]} | {sides[1]} | {diff_cell} | {within} | "
                     + " | ".join(times) + " |")
    return "\n".join(lines) + "\n"


def link_pairs_large_table(data: dict) -> str:
    """Pair encodings of a million query pairs on ogbn-arxiv's graph, one thread (from
    ``benchmarks/link_pairs_large.py``): each encoding's median and spread over the rounds,
    CPU seconds, peak memory, and the ratio to the scipy reference at its pair count."""
    setup = data["setup"]
    if not data["rows"]:
        return f"`{setup['command']}`: skipped ({setup['skipped']}).\n"
    check = setup["ppr_check"]
    load = ", ".join(f"{x:.1f}" for x in setup["load_average_start"])
    lines = [f"`{setup['command']}` (ogbn-arxiv's graph: {setup['nodes']:,} nodes, "
             f"{setup['undirected_edges']:,} edges; {setup['pairs']:,} pairs, half edges and "
             f"half non-edges; one thread; median (min - max) of {data['rows'][0]['rounds']} "
             f"rounds on a {setup['cpu_count']}-core machine shared with other benchmark jobs, "
             f"load average {load} at the start; each call includes reading the graph into a "
             f"CSR, {setup['graph_to_csr_s']:.2f} s):", "",
             "| encoding | s (min - max) | CPU s | peak memory (MB) | scipy reference s | "
             "compiled s | scipy / compiled |", "| --- | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for r in data["rows"]:
        if "speedup" in r:
            at = f" at {r['reference_pairs']:,} pairs"
            ref = (f"{r['reference_s']:.2f}{at} | {r['compiled_s']:.2f}{at} | "
                   f"{r['speedup']:.0f}x")
        else:
            ref = "- | - | -"
        lines.append(f"| {r['label']} | {r['wall_s']:.2f} ({r['wall_min_s']:.2f} - "
                     f"{r['wall_max_s']:.2f}) | {r['cpu_s']:.2f} | {r['peak_rss_rise_mb']:.0f} "
                     f"| {ref} |")
    lines += ["", f"Distances and scores equal the scipy reference's; the PageRank of "
              f"{check['pairs_checked']} pairs is within the push's bound of power iteration's "
              f"({'yes' if check['within_bound'] else 'no'}: at most "
              f"{check['max_error_over_bound']:.2f} of the bound)."]
    return "\n".join(lines) + "\n"


def seal_labeling_table(data: dict) -> str:
    """SEAL's enclosing subgraphs with DRNL labels, graphpe against PyG's SEAL example's
    Python path (from ``benchmarks/seal_labeling.py``): medians and spreads, the ratio."""
    setup = data["setup"]
    lines = [f"`python benchmarks/seal_labeling.py --sizes 2000,all --rounds 5` ({setup['graph']}, "
             f"{setup['split']}, one thread; both sides' labels checked equal pair by pair "
             "before timing):", "",
             "| pairs | hops | labels equal | graphpe s (min - max) | PyG's SEAL example s "
             "(min - max) | PyG / graphpe |", "| ---: | ---: | --- | ---: | ---: | ---: |"]
    for r in data["rows"]:
        lines.append(f"| {r['pairs']:,} | {r['hops']} | {'yes' if r['labels_equal'] else 'no'} "
                     f"| {r['graphpe_s']:.4f} ({r['graphpe_min_s']:.4f} - "
                     f"{r['graphpe_max_s']:.4f}) | {r['pyg_s']:.2f} ({r['pyg_min_s']:.2f} - "
                     f"{r['pyg_max_s']:.2f}) | {r['speedup']:.0f}x |")
    return "\n".join(lines) + "\n"


def link_planetoid_table(data: dict) -> str:
    """Link prediction on Cora / CiteSeer (from ``benchmarks/link_planetoid.py``): test
    ROC-AUC, AP and Hits@100 (%) over the split seeds per model, node encoding and pair
    features, the paired ROC-AUC difference to the plain model, and the graph
    autoencoders' published numbers."""
    st = data["settings"]
    lines = [f"`{data['command']}` ({st['layers']} layers, {st['channels']} channels, dropout "
             f"{st['dropout']:g}, {st['decoder']} decoder, Adam at lr {st['lr']:g}, at most "
             f"{st['epochs']} epochs with patience {st['patience']}; pair features `yes`: "
             f"spd (distance capped at {st['max_dist']} with the pair's own edge set aside) "
             "and cn (common neighbours, Adamic-Adar, resource allocation), else the ones "
             "named (`graphpe.ops.link_features`); mean ± std over the split seeds, `*`: "
             "beyond two standard errors of the plain model on the same splits; the "
             "encodings' and held-out pairs' features in seconds before training, and a "
             "training epoch's seconds with its fresh non-edges' features, medians over the "
             "seeds, one thread beside other work):", "",
             "| dataset | model | node encoding (SEAL: labels) | pair features | seeds "
             "| test ROC-AUC (%) | test AP (%) | Hits@100 (%) | ROC-AUC vs plain | features s "
             "| s / epoch |",
             "| --- | --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]

    def pair_cell(pairs: bool | str) -> str:  # True / False: the first grid's on / off
        return pairs.replace("+", ", ") if isinstance(pairs, str) else ("yes" if pairs else "no")

    for c in sorted(data["summary"], key=lambda c: (c["dataset"], c["model"],
                                                    str(c["pairs"]) != "False",
                                                    isinstance(c["pairs"], str),
                                                    str(c["pairs"]), c["pe"] != "none", c["pe"])):
        vs = c.get("rocauc_vs_plain")
        vs_cell = "" if vs is None else (f"{100 * vs[0]:+.2f} ± {100 * vs[1]:.2f}"
                                         + (" *" if vs[2] else ""))
        lines.append(f"| {c['dataset']} | {c['model']} | {c['pe']} | "
                     f"{pair_cell(c['pairs'])} | {c['seeds']} | "
                     f"{_percent(*c['rocauc'])} | {_percent(*c['ap'])} | "
                     f"{_percent(*c['hits@100'])} | {vs_cell} | {c['pe_seconds']:.2f} | "
                     f"{c['seconds_per_epoch']:.2f} |")
    pub = data["published"]
    lines += ["", "Published, same split protocol (" + pub["source"] + "):", "",
              "| model | dataset | test ROC-AUC (%) | test AP (%) |", "| --- | --- | ---: | ---: |"]
    for r in pub["rows"]:
        lines.append(f"| {r['model']} | {r['dataset']} | {r['rocauc'][0]:.1f} ± "
                     f"{r['rocauc'][1]:.2f} | {r['ap'][0]:.1f} ± {r['ap'][1]:.2f} |")
    return "\n".join(lines) + "\n"


def link_heart_table(data: dict) -> str:
    """Link prediction on Cora under HeaRT's hard negatives (``benchmarks/link_planetoid.py
    --negatives heart``): each held-out edge's rank among its own 500 negatives, as test MRR,
    Hits@10 and Hits@100 (%) over the split seeds, the paired MRR difference to the plain
    model, and the heuristics' own scores beside the trained models."""
    st = data["settings"]
    lines = [f"`{data['command']}` ({st['layers']} layer(s), {st['channels']} channels, "
             f"dropout {st['dropout']:g}, {st['decoder']} decoder, Adam at lr {st['lr']:g}, "
             f"at most {st['epochs']} epochs with patience {st['patience']}, the epoch of the "
             "best validation MRR; `heuristic` rows score the pairs by resource allocation "
             "(ra), personalized PageRank (ppr) or feature cosine (cos) without training; "
             "mean ± std over the split seeds, `*`: beyond two standard errors of the plain "
             "model on the same splits; seconds as in the table above):", "",
             "| dataset | model | node encoding (heuristic) | pair features | seeds "
             "| test MRR (%) | Hits@10 (%) | Hits@100 (%) | MRR vs plain | features s "
             "| s / epoch |",
             "| --- | --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for c in sorted(data["summary"], key=lambda c: (c["dataset"], c["model"] != "heuristic",
                                                    c["model"], str(c["pairs"]), c["pe"])):
        vs = c.get("mrr_vs_plain")
        vs_cell = "" if vs is None else (f"{100 * vs[0]:+.2f} ± {100 * vs[1]:.2f}"
                                         + (" *" if vs[2] else ""))
        pairs = c["pairs"]
        pair_cell = pairs.replace("+", ", ") if isinstance(pairs, str) else "no"
        lines.append(f"| {c['dataset']} | {c['model']} | {c['pe']} | {pair_cell} | "
                     f"{c['seeds']} | {_percent(*c['mrr'])} | {_percent(*c['hits@10'])} | "
                     f"{_percent(*c['hits@100'])} | {vs_cell} | {c['pe_seconds']:.2f} | "
                     f"{c['seconds_per_epoch']:.2f} |")
    lines += ["", "Published: " + data["published"]["source"] + "."]
    return "\n".join(lines) + "\n"


TABLES = {
    "encodings": (None, encodings_table),
    "headline": (("benchmarks/results/precompute.json", "benchmarks/results/train_step.json"),
                 headline_table),
    "precompute": ("benchmarks/results/precompute.json", precompute_table),
    "cold_start": ("benchmarks/results/cold_start.json", cold_start_table),
    "rfp_large": ("benchmarks/results/rfp_large.json", rfp_large_table),
    "train_step": ("benchmarks/results/train_step.json", train_step_table),
    "train_step_breakdown": ("benchmarks/results/train_step_breakdown.json",
                             train_step_breakdown_table),
    "train_step_gpu": ("benchmarks/results/train_step_gpu.json", train_step_gpu_table),
    "inference": ("benchmarks/results/inference.json", inference_table),
    "gine_step": ("benchmarks/results/gine_step.json", gine_step_table),
    "pair_bias_step": ("benchmarks/results/pair_bias_step.json", pair_bias_step_table),
    "spe_step": ("benchmarks/results/spe_step.json", spe_step_table),
    "spe_step_gpu": ("benchmarks/results/spe_step_gpu.json", spe_step_table),
    "train_step_precision": ("benchmarks/results/train_step_precision.json",
                             train_step_table),
    "gpu": ("benchmarks/results/gpu.json", gpu_table),
    "gps_curve": ("benchmarks/results/gps_curve_*.json", gps_curve_table),
    "ddp": ("benchmarks/results/ddp.json", ddp_table),
    "precompute_workers": ("benchmarks/results/precompute_workers.json",
                           precompute_workers_table),
    "pairwise": ("benchmarks/results/pairwise.json", pairwise_table),
    "pairwise_large": ("benchmarks/results/pairwise_large.json", pairwise_large_table),
    "seal_labeling": ("benchmarks/results/seal_labeling.json", seal_labeling_table),
    "link_pairs_large": ("benchmarks/results/link_pairs_large.json", link_pairs_large_table),
    "link_pairs_rrwp": ("benchmarks/results/link_pairs_rrwp.json", link_pairs_large_table),
    "link_planetoid": ("benchmarks/results/link_planetoid.json", link_planetoid_table),
    "link_heart": ("benchmarks/results/link_heart.json", link_heart_table),
    "sparse_eigen": ("benchmarks/results/sparse_eigen.json", sparse_eigen_table),
    "papers_lcp": ("benchmarks/results/papers_lcp.json", papers_lcp_table),
    "expressivity": ("benchmarks/results/expressivity_*.json", expressivity_table),
    "zinc_pairwise": ("benchmarks/results/zinc_pairwise*.json", zinc_pairwise_table),
    "zinc_graphormer": ("benchmarks/results/zinc_graphormer*.json", zinc_graphormer_table),
    "zinc_grit": ("benchmarks/results/zinc_grit*.json", zinc_grit_table),
    "zinc_gatedgcn": ("benchmarks/results/zinc_gatedgcn*.json", zinc_gatedgcn_table),
    "zinc_graph_token": ("benchmarks/results/zinc_graph_token*.json", zinc_graph_token_table),
    "zinc_pe": ("benchmarks/results/zinc_pe_*.json", zinc_pe_table),
    "ogbg_mol": ("benchmarks/results/ogbg_mol.json", ogbg_mol_table),
    "grit_step": ("benchmarks/results/grit_step.json", grit_step_table),
    "papers_rfp": ("benchmarks/results/papers_rfp.json", papers_rfp_table),
    "papers_spe": ("benchmarks/results/papers_spe.json", papers_spe_table),
    "expressivity_pairs": ("benchmarks/results/expressivity_pairs.json",
                           expressivity_pairs_table),
    "directed": ("benchmarks/results/directed.json", directed_table),
    "directed_pairs": ("benchmarks/results/directed_pairs.json", directed_pairs_table),
    "large_graphs": ("benchmarks/results/large_graphs.json", large_graphs_table),
    "lappe_vs_pyg": ("benchmarks/results/lappe_vs_pyg.json", lappe_vs_pyg_table),
    "rwse_estimator": ("benchmarks/results/rwse_estimator.json", rwse_estimator_table),
    "arxiv_encodings": ("benchmarks/results/arxiv_encodings.json", arxiv_encodings_table),
    "arxiv_nodes": ("benchmarks/results/arxiv_nodes.json", arxiv_nodes_table),
    "arxiv_nodes_timing": ("benchmarks/results/arxiv_nodes_timing.json",
                           arxiv_nodes_timing_table),
    "sampled_batches": ("benchmarks/results/sampled_batches.json", sampled_batches_table),
    "subgraph_pe": ("benchmarks/results/subgraph_pe.json", subgraph_pe_table),
    "peptides_func": ("benchmarks/results/peptides_func.json", peptides_func_table),
    "heterophilous": ("benchmarks/results/heterophilous.json", heterophilous_table),
    "heterophilous_published": ("benchmarks/results/heterophilous.json",
                                heterophilous_published_table),
    "heterophilous_pyg": ("benchmarks/results/heterophilous_pyg.json", heterophilous_pyg_table),
    "config_epochs": ("benchmarks/results/config_epochs.json", config_epochs_table),
    "heterophilous_train_splits": (
        "benchmarks/results/heterophilous/train-splits-minesweeper-res-gcn.json",
        heterophilous_train_splits_table),
    "zinc_parity": ("benchmarks/results/zinc_parity/summary.json", zinc_parity_table),
    "distributed_encode": ("benchmarks/results/distributed_encode.json",
                           distributed_encode_table),
    "distributed_encode_rcm": ("benchmarks/results/distributed_encode_rcm.json",
                               distributed_encode_table),
    "distributed_encode_lift8": ("benchmarks/results/distributed_encode_lift8.json",
                                 distributed_encode_table),
    "papers_distributed_cost": ("benchmarks/results/distributed_encode.json",
                                papers_distributed_cost_table),
}


def build(name: str, root: Path = ROOT) -> str | None:
    path, make = TABLES[name]
    if path is None:  # built from graphpe itself
        return make()
    if isinstance(path, tuple):  # several JSON files, all needed
        sources = [root / p for p in path]
        if not all(p.exists() for p in sources):
            return None
        return make(*(json.loads(p.read_text()) for p in sources))
    if "*" in path:  # one JSON per run
        runs = [json.loads(p.read_text()) for p in sorted(root.glob(path))]
        return make(runs) if runs else None
    source = root / path
    if not source.exists():
        return None
    return make(json.loads(source.read_text()))


def write(readme: Path, root: Path = ROOT) -> list[str]:
    """Replace every marked block of ``readme`` whose JSON exists; the names replaced."""
    text = readme.read_text()
    done = []
    for name in TABLES:
        table = build(name, root)
        pattern = re.compile(rf"(<!-- table:{name} -->\n).*?(<!-- /table:{name} -->)", re.S)
        if table is None or not pattern.search(text):
            continue
        text = pattern.sub(lambda m, t=table: m.group(1) + t + "\n" + m.group(2), text)
        done.append(name)
    readme.write_text(text)
    return done


def documents(root: Path = ROOT) -> list[Path]:
    """The README and every Markdown page of ``docs/``: where marked blocks may sit."""
    return [root / "README.md", *sorted((root / "docs").rglob("*.md"))]


MARK = re.compile(r"<!-- table:(\w+) -->\n(.*?)<!-- /table:\1 -->", re.S)


def marked_blocks(path: Path) -> dict[str, str]:
    """``{name: current content}`` of every marked block of the file at ``path``."""
    return {m.group(1): m.group(2) for m in MARK.finditer(path.read_text())}


def plots(outdir: Path, root: Path = ROOT) -> list[Path]:
    """The docs' plots, drawn from the benchmark JSON into ``outdir`` (matplotlib, Agg):
    ``speed_vs_pyg.png`` (graphs/s against PyG per dataset, encoding and path) and
    ``steps_vs_pyg.png`` (training and evaluation steps against PyG's models),
    ``heterophilous_<dataset>_<setting>.png`` (each heterophilous grid's test ROC-AUC against
    its encodings' cost, :func:`graphpe.compare.plot_cost`). The papers'
    plots are drawn by their scripts' own ``plot`` functions (``benchmarks/papers``)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    outdir.mkdir(parents=True, exist_ok=True)
    written = []
    pre = root / "benchmarks/results/precompute.json"
    if pre.exists():
        rows = [r for r in json.loads(pre.read_text())["rows"] if r["ratio"] is not None]
        groups = list(dict.fromkeys((r["dataset"], r["encoding"]) for r in rows))
        paths = list(dict.fromkeys(r["path"] for r in rows))
        fig, ax = plt.subplots(figsize=(8, 3.6))
        width = 0.8 / len(paths)
        for k, path in enumerate(paths):
            values = [next((r["ratio"] for r in rows if (r["dataset"], r["encoding"]) == g
                            and r["path"] == path), 0.0) for g in groups]
            bars = ax.bar([i + (k - (len(paths) - 1) / 2) * width for i in range(len(groups))],
                          values, width, label=path)
            ax.bar_label(bars, fmt="%.1fx", fontsize=7)
        ax.axhline(1.0, color="gray", lw=0.8, ls="--")
        import textwrap

        ax.set_xticks(range(len(groups)),
                      [f"{e}\n" + "\n".join(textwrap.wrap(d, 18)) for d, e in groups],
                      fontsize=7)
        ax.set_ylabel("speed-up over PyG's transform")
        ax.set_title("Encoding throughput against PyG, one CPU thread (precompute.json)",
                     fontsize=9)
        ax.legend(title="graphpe path", fontsize=7, title_fontsize=7)
        fig.tight_layout()
        written.append(outdir / "speed_vs_pyg.png")
        fig.savefig(written[-1], dpi=110)
        plt.close(fig)
    steps = []
    for name, label in (("train_step", "GPS training step"), ("inference", "GPS/GINE eval"),
                        ("gine_step", "GINE/GIN/GatedGCN training step")):
        source = root / f"benchmarks/results/{name}.json"
        if not source.exists():
            continue
        data = json.loads(source.read_text())
        for r in data["rows"]:
            ratio = r.get("speedup_vs_pyg", r.get("speedup_vs_reference"))
            if ratio is None or r["model"].startswith(("pyg", "GraphGPS")):
                continue
            extra = f" (batch {r['batch_size']})" if "batch_size" in r else ""
            steps.append((f"{r['model']}{extra}", ratio, label))
    if steps:
        fig, ax = plt.subplots(figsize=(8, 0.28 * len(steps) + 1.2))
        kinds = list(dict.fromkeys(s[2] for s in steps))
        colours = dict(zip(kinds, plt.cm.tab10.colors[:len(kinds)], strict=True))
        ys = range(len(steps))
        bars = ax.barh(list(ys), [s[1] for s in steps],
                       color=[colours[s[2]] for s in steps])
        ax.bar_label(bars, fmt="%.2fx", fontsize=7)
        ax.set_yticks(list(ys), [s[0] for s in steps], fontsize=7)
        ax.invert_yaxis()
        ax.axvline(1.0, color="gray", lw=0.8, ls="--")
        ax.set_xlabel("speed-up over the same network in PyG / GraphGPS (CPU, one thread)")
        from matplotlib.patches import Patch

        ax.set_xlim(0, max(s[1] for s in steps) * 1.12)
        ax.legend(handles=[Patch(color=c, label=label) for label, c in colours.items()],
                  fontsize=7, loc="lower right")
        fig.tight_layout()
        written.append(outdir / "steps_vs_pyg.png")
        fig.savefig(written[-1], dpi=110)
        plt.close(fig)
    hetero = root / "benchmarks/results/heterophilous.json"
    if hetero.exists():
        from graphpe.compare import plot_cost

        for grid in json.loads(hetero.read_text())["grids"]:
            path = outdir / f"heterophilous_{grid['dataset'].lower()}_{grid['setting']}.png"
            if plot_cost([dict(r, metric="ROC-AUC") for r in grid["rows"]], path,
                         f"{grid['dataset']}, {grid['setting']}: test ROC-AUC against the "
                         "encodings' cost"):
                written.append(path)
    return written


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--write", type=Path, nargs="+", help="files to update in place")
    parser.add_argument("--write-all", action="store_true",
                        help="update the README and every page of docs/")
    parser.add_argument("--plots", type=Path, metavar="DIR", help="draw the docs' plots")
    parser.add_argument("--root", type=Path, default=ROOT, help="where results/ lives")
    args = parser.parse_args(argv)
    if args.plots:
        for path in plots(args.plots, args.root):
            print("wrote", path)
        return
    if args.write or args.write_all:
        for path in args.write or documents(args.root):
            done = write(path, args.root)
            if done:
                print(f"{path}: updated", ", ".join(done))
        return
    for name in TABLES:
        table = build(name, args.root)
        print(f"## {name}\n\n{table or '(no results yet)'}\n")


if __name__ == "__main__":
    main()
