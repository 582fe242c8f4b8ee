"""Runs over a dataset's splits or seeds, and grids of models x encodings: ``graphpe train
--splits`` and ``graphpe compare``.

A *run* is one :func:`graphpe.train.run` on one split of a dataset with fixed splits (the
heterophilous sets' ten, ``fold``) or with one seed. Split ``s`` trains from seed
``config.seed + s``, so each split's model starts from its own draw; seed runs are
``config.seed + 0, 1, ...`` on the dataset's one split. Each run writes its record (the train
record without its per-epoch curve) to ``<dir>/<run>.json``; a run whose record is there is
read back, not trained again, and a run stopped midway resumes from its training state
(``<dir>/state/<run>.pt.state``), so a grid stopped anywhere continues where it stopped.

A *cell* is one model with one set of encodings (``"none"``, ``"lap"``, ``"lap+rwse"``:
``+`` joins the encodings of one cell, as ``,`` joins them in ``--pe``). :func:`compare` runs
every cell on the same runs and :func:`compare_table` summarizes them: the mean and standard
deviation of the test metric over the runs, the difference to the same model without
encodings with its standard error (paired over the runs both cells share: the splits are the
same), a marker where that difference exceeds two standard errors, and the encodings' cost
(precompute seconds per run, the bytes they add per node, training seconds per epoch: the
medians over the runs). A cell whose encoding refuses the dataset's graphs
(:class:`~graphpe.ops.checks.GraphRefusedError`: a size or cost limit it meets only on the
graph) is kept in the table as refused, with the reason, and the grid goes on; it stores no
run, so a grid run again asks it again (a refusal costs seconds).
"""

from __future__ import annotations

import dataclasses
import json
import math
import re
import statistics
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from graphpe.datasets import DatasetBundle, load_dataset
from graphpe.ops.checks import GraphRefusedError

#: what the table's marker means: |difference to none| over its standard error exceeds this
SIGNIFICANT_SE = 2.0
#: the record keys a run keeps (its curve, "history", stays in the train record only)
RUN_KEYS = ("dataset", "metric", "model", "pe", "split", "seed", "val", "test", "best_epoch",
            "epochs_run", "train_seconds", "seconds_per_epoch", "pe_seconds",
            "pe_bytes_per_node", "params",
            "config", "model_config", "versions", "run", "settings",
            "test_predicted_classes", "graph")
#: the TrainConfig fields that do not change what a run computes (where it writes, what it
#: shows, where it resumes from; the seed is checked on its own)
RUN_LOCAL = ("seed", "device", "progress", "checkpoint", "results", "resume", "cache_dir",
             "num_workers")


def parse_splits(text: str | None, splits: int, name: str) -> list[int]:
    """``--splits``: ``"all"`` (every split of the dataset) or comma-separated indices
    (``"0,3,7"``), checked against the dataset's ``splits``; None: split 0 only."""
    if text is None:
        return [0]
    if text == "all":
        if splits < 2:
            raise ValueError(f"{name} has one split: --splits all runs the fixed splits of a "
                             "dataset that has several (Minesweeper, Tolokers, WikiCS, ...); "
                             "use --seeds for repeated runs")
        return list(range(splits))
    try:
        chosen = [int(part) for part in text.split(",")]
    except ValueError:
        raise ValueError(f"--splits takes 'all' or split indices like 0,3,7, got {text!r}") \
            from None
    bad = [s for s in chosen if not 0 <= s < splits]
    if bad:
        raise ValueError(f"{name}: split {bad[0]} is out of range; it has {splits} split"
                         f"{'s' if splits > 1 else ''} (0-{splits - 1})")
    if len(set(chosen)) != len(chosen):
        raise ValueError(f"--splits names a split twice: {text!r}")
    return chosen


@dataclasses.dataclass(frozen=True)
class RunSet:
    """Which runs a cell trains: ``dataset`` read from ``root`` (``download``: fetch it where
    absent) on its fixed ``splits`` (``"all"``, ``"0,3,7"``) or from ``seeds`` seeds on its one
    split (at most one of the two; neither: one run on split 0)."""

    dataset: str
    root: str | Path
    splits: str | None = None
    seeds: int | None = None
    download: bool = False


@dataclasses.dataclass(frozen=True)
class ModelShape:
    """The size and options every model of a grid is built with: ``channels`` wide,
    ``layers`` deep, ``options`` the model flags (:func:`graphpe.train.run`'s keywords)."""

    channels: int = 64
    layers: int = 4
    options: dict[str, Any] = dataclasses.field(default_factory=dict)


def run_ids(bundle: DatasetBundle, splits: str | None, seeds: int | None) -> list[tuple[int, int]]:
    """The runs ``(split, seed offset)`` of ``--splits`` or ``--seeds`` on ``bundle`` (at most
    one of the two; neither: one run)."""
    if splits is not None and seeds is not None:
        raise ValueError("give --splits (a dataset's fixed splits) or --seeds (repeated runs "
                         "on one split), not both")
    if seeds is not None:
        if isinstance(seeds, bool) or not isinstance(seeds, int) or seeds < 1:
            raise ValueError(f"--seeds must be an int >= 1, got {seeds!r}")
        return [(0, s) for s in range(seeds)]
    return [(s, s) for s in parse_splits(splits, bundle.extra.get("splits", 1), bundle.name)]


def run_name(split: int, seed: int, by_seed: bool) -> str:
    return f"seed{seed}" if by_seed else f"split{split}"


def train_runs(runs: RunSet, model: str, pe: Any, shape: ModelShape, config: Any,
               runs_dir: str | Path,
               report: Callable[[str], None] | None = None) -> list[dict[str, Any]]:
    """Trains ``model`` of ``shape`` with ``pe`` on every run of ``runs`` (see the module
    docstring), each record in ``runs_dir``; returns the records in run order. Runs whose
    record exists are read back (their settings must equal these: else a ``ValueError``)."""
    from graphpe.train import run

    runs_dir = Path(runs_dir)
    settings = run_settings(shape, config)
    defaults = _config_defaults(config)
    first = load_dataset(runs.dataset, runs.root, seed=config.seed, download=runs.download)
    ids = run_ids(first, runs.splits, runs.seeds)
    by_seed = runs.seeds is not None
    records = []
    for split, offset in ids:
        name = run_name(split, offset, by_seed)
        path = runs_dir / f"{name}.json"
        seed = config.seed + offset
        if path.exists():
            record = _with_defaults(json.loads(path.read_text()), defaults)
            _check_same(record, path, model=model, pe=_pe_label(pe), seed=seed,
                        settings=settings)
            records.append(record)
            if report:
                report(f"{name}: done before ({record['metric']} {record['test']:.4f})")
            continue
        bundle = first if (split, seed) == (0, config.seed) else load_dataset(
            runs.dataset, runs.root, seed=seed, fold=split, download=runs.download)
        state = runs_dir / "state" / f"{name}.pt"
        resume = Path(f"{state}.state")
        run_config = dataclasses.replace(
            config, seed=seed, results=None, checkpoint=str(state),
            resume=str(resume) if resume.exists() else None)
        record = run(bundle, pe, model=model, channels=shape.channels, layers=shape.layers,
                     config=run_config, **shape.options)
        if record.get("interrupted_after_epoch") is not None:  # not done: its state resumes
            raise KeyboardInterrupt
        record.update(model=model, pe=_pe_label(pe), split=split, seed=seed, run=name,
                      settings=settings)
        kept = {key: record.get(key) for key in RUN_KEYS}
        runs_dir.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(kept, indent=1, default=str))
        for leftover in (state, resume):  # the run is done: its weights are not kept
            leftover.unlink(missing_ok=True)
        records.append(kept)
        if report:
            report(f"{name}: {record['metric']} {record['test']:.4f} (val {record['val']:.4f}, "
                   f"best epoch {record['best_epoch']})")
    return records


def run_settings(shape: ModelShape, config: Any) -> dict[str, Any]:
    """What a run's record keeps of its settings (as JSON values), to check a record read
    back against: the model's sizes and options, the training settings that change what it
    computes."""
    return json.loads(json.dumps(
        {"channels": shape.channels, "layers": shape.layers, "options": dict(shape.options),
         "config": _computing(config)}, default=str))


def _config_defaults(config: Any) -> dict[str, Any]:
    return json.loads(json.dumps(_computing(type(config)()), default=str))


def _with_defaults(record: dict, defaults: dict[str, Any]) -> dict:
    """``record`` whose settings name every training setting: one added after the record was
    written is read back at its default."""
    held = record.get("settings")
    if isinstance(held, dict) and isinstance(held.get("config"), dict):
        held["config"] = {**defaults, **held["config"]}
    return record


def earlier_cells(out: Path, dataset: str, settings: dict[str, Any],
                  defaults: dict[str, Any]) -> dict[tuple[str, str], dict[str, Any]]:
    """The cells of earlier grids under ``out`` (``out/runs/<model>/<encodings>/``) whose
    finished runs were trained on ``dataset`` with these ``settings``: a grid run again with
    other models or encodings keeps them in its table."""
    cells = {}
    for folder in sorted((out / "runs").glob("*/*/")):
        records = [_with_defaults(json.loads(p.read_text()), defaults)
                   for p in sorted(folder.glob("*.json"))]
        records = [r for r in records
                   if r.get("dataset") == dataset and r.get("settings") == settings]
        if records:
            cells[(records[0]["model"], records[0]["pe"])] = summarize(records)
    return cells


def _computing(config: Any) -> dict[str, Any]:
    """The fields of a ``TrainConfig`` that change what a run computes (not ``RUN_LOCAL``)."""
    return {k: v for k, v in dataclasses.asdict(config).items() if k not in RUN_LOCAL}


def _pe_label(pe: Any) -> str:
    """The encodings of a run as one label (``"none"``, ``"lap+rwse:walk_length=20"``)."""
    if pe is None or pe == () or pe == [] or pe == "none" or pe == "":
        return "none"
    if isinstance(pe, str):
        return "+".join(p.strip() for p in pe.split(",") if p.strip() not in ("", "none")) \
            or "none"
    return "+".join(str(p) for p in pe)


def _check_same(record: dict, path: Path, **expected: Any) -> None:
    """A finished run's record read back must be of the same run: else a ``ValueError``
    naming the first setting that differs."""
    for key, value in expected.items():
        held = record.get(key)
        if held == value:
            continue
        if isinstance(value, dict) and isinstance(held, dict):
            for name, (a, b) in _differences(held, value).items():
                raise ValueError(f"{path} holds a run with {name}={a!r}, not {b!r}: give "
                                 "another output folder or remove the file")
        raise ValueError(f"{path} holds a run with {key}={held!r}, not {value!r}: give "
                         "another output folder or remove the file")


def _differences(held: dict, wanted: dict, prefix: str = "") -> dict[str, tuple]:
    """The entries that differ between two nested dicts, by dotted name."""
    out = {}
    for key in sorted(set(held) | set(wanted), key=str):
        a, b = held.get(key), wanted.get(key)
        if isinstance(a, dict) and isinstance(b, dict):
            out.update(_differences(a, b, f"{prefix}{key}."))
        elif a != b:
            out[f"{prefix}{key}"] = (a, b)
    return out


def summarize(records: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Mean and sample standard deviation of the runs' test and validation metrics, with the
    per-run values (and seconds of training and encoding) and the median costs (the median:
    one run slowed by other work on the machine, or paused, does not move it)."""
    tests = [float(r["test"]) for r in records]
    vals = [float(r["val"]) for r in records]
    return {"runs": len(records), "test_mean": _mean(tests), "test_std": _std(tests),
            "val_mean": _mean(vals), "val_std": _std(vals), "test": tests,
            "run_names": [r["run"] for r in records],
            "pe_seconds": _median([float(r.get("pe_seconds") or 0.0) for r in records]),
            "pe_bytes_per_node": _mean([float(r.get("pe_bytes_per_node") or 0.0)
                                        for r in records]),
            "seconds_per_epoch": _median([float(r["seconds_per_epoch"]) for r in records]),
            "run_seconds": [float(r.get("train_seconds") or 0.0)
                            + float(r.get("pe_seconds") or 0.0) for r in records],
            "metric": records[0]["metric"] if records else None}


def refused_cell(reason: str) -> dict[str, Any]:
    """The summary of a cell whose encoding refused the dataset's graphs
    (:class:`~graphpe.ops.checks.GraphRefusedError`): no runs, and why."""
    return {**summarize([]), "refused": reason}


def _mean(values: Sequence[float]) -> float:
    return sum(values) / len(values) if values else math.nan


def _median(values: Sequence[float]) -> float:
    return statistics.median(values) if values else math.nan


def _std(values: Sequence[float]) -> float:
    if len(values) < 2:
        return 0.0
    mean = _mean(values)
    return math.sqrt(sum((v - mean) ** 2 for v in values) / (len(values) - 1))


def difference(cell: dict[str, Any], base: dict[str, Any]) -> tuple[float, float]:
    """``(mean difference, its standard error)`` of ``cell`` against ``base``: paired over
    the runs both hold (the same splits or seeds), unpaired (``sqrt(s1^2/n1 + s2^2/n2)``)
    where they share fewer than two."""
    shared = [name for name in cell["run_names"] if name in base["run_names"]]
    if len(shared) >= 2:
        a = dict(zip(cell["run_names"], cell["test"], strict=True))
        b = dict(zip(base["run_names"], base["test"], strict=True))
        diffs = [a[name] - b[name] for name in shared]
        return _mean(diffs), _std(diffs) / math.sqrt(len(diffs))
    se = math.sqrt(cell["test_std"] ** 2 / max(cell["runs"], 1)
                   + base["test_std"] ** 2 / max(base["runs"], 1))
    return cell["test_mean"] - base["test_mean"], se


def compare_table(cells: dict[tuple[str, str], dict[str, Any]]) -> list[dict[str, Any]]:
    """One row per cell ``(model, pe)`` of :func:`summarize`'s summaries, with the difference
    to the same model's ``"none"`` cell, its standard error and whether it exceeds
    :data:`SIGNIFICANT_SE` of them."""
    rows = []
    for (model, pe), summary in cells.items():
        row = {"model": model, "pe": pe, **summary}
        base = cells.get((model, "none"))
        if base is not None and pe != "none" and summary["runs"] and base["runs"]:
            diff, se = difference(summary, base)
            row.update(diff=diff, diff_se=se,
                       significant=bool(se > 0 and abs(diff) > SIGNIFICANT_SE * se))
        rows.append(row)
    return rows


def markdown_table(rows: Sequence[dict[str, Any]], scale: float = 100.0) -> str:
    """The rows as a Markdown table: the test metric (times ``scale``) as mean ± std over the
    runs, the difference to ``none`` (``*``: beyond two standard errors), the encodings'
    precompute seconds and memory (bytes per node) and the seconds per training epoch."""
    lines = ["| model | encodings | runs | test | vs none | precompute s | bytes / node | "
             "s / epoch |",
             "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |"]
    refusals = []
    for row in rows:
        if row.get("refused"):
            refusals.append(f"{row['model']} with {row['pe']}: {row['refused']}")
            lines.append(f"| {row['model']} | {row['pe']} | 0 | refused ({len(refusals)}) "
                         "| | | | |")
            continue
        vs = "" if "diff" not in row else (
            f"{row['diff'] * scale:+.2f} ± {row['diff_se'] * scale:.2f}"
            + (" *" if row["significant"] else ""))
        test = (f"{row['test_mean'] * scale:.2f} ± {row['test_std'] * scale:.2f}"
                if row["runs"] else "")
        lines.append(f"| {row['model']} | {row['pe']} | {row['runs']} | {test} | {vs} | "
                     f"{row['pe_seconds']:.2f} | {row.get('pe_bytes_per_node') or 0:.0f} | "
                     f"{row['seconds_per_epoch']:.3f} |")
    if refusals:
        lines += ["", "Refused (the encoding cannot take the dataset's graphs):",
                  *(f"{i}. {text}" for i, text in enumerate(refusals, 1))]
    return "\n".join(lines) + "\n"


def plot_cost(rows: Sequence[dict[str, Any]], path: Path, title: str) -> bool:
    """The test metric against the encodings' precompute seconds, one point per cell with
    its standard deviation, one colour per model, at ``path`` (PNG); False where matplotlib
    is not installed."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    fig, ax = plt.subplots(figsize=(7, 4.5))
    models = list(dict.fromkeys(row["model"] for row in rows))
    for model in models:
        mine = [r for r in rows if r["model"] == model and r["runs"]]
        xs = [max(r["pe_seconds"], 1e-3) for r in mine]
        ax.errorbar(xs, [r["test_mean"] for r in mine], yerr=[r["test_std"] for r in mine],
                    fmt="o", capsize=3, label=model)
        for x, r in zip(xs, mine, strict=True):
            ax.annotate(r["pe"], (x, r["test_mean"]), fontsize=7, xytext=(4, 2),
                        textcoords="offset points")
    ax.set_xscale("log")
    ax.set_xlabel("precompute seconds per run (log; 'none' at 1e-3)")
    ax.set_ylabel(f"test {next((r['metric'] for r in rows if r['runs']), '')}")
    ax.set_title(title)
    ax.legend(fontsize=8)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return True


def largest_graph(bundle: DatasetBundle) -> int:
    """The node count of the largest graph in any of ``bundle``'s splits."""
    return max(int(graph.num_nodes) for split in (bundle.train, bundle.val, bundle.test)
               for graph in split)


def check_encodings_fit(runs: RunSet, pes: Sequence[str], config: Any) -> None:
    """Before any cell trains: a ``ValueError`` naming every encoding of ``pes`` whose
    transform refuses graphs the size of the dataset's largest (its ``max_nodes``: the
    dense and all-pairs encodings), so a grid does not stop on it hours in."""
    from graphpe.encodings.registry import resolve_pe

    limits = {}
    for pe in pes:
        if pe != "none":
            for spec in resolve_pe(pe.replace("+", ",")):
                limit = getattr(spec.transform(), "max_nodes", None)
                if isinstance(limit, int):
                    limits[spec.name] = limit
    if not limits:
        return
    largest = largest_graph(load_dataset(runs.dataset, runs.root, seed=config.seed,
                                         download=runs.download))
    refused = [f"{name} (max_nodes={limit:,})" for name, limit in limits.items()
               if largest > limit]
    if refused:
        raise ValueError(f"{runs.dataset}'s largest graph has {largest:,} nodes, more than "
                         f"{', '.join(refused)} take: each computes densely per graph "
                         f"(n x n values); drop {'them' if len(refused) > 1 else 'it'} "
                         "from --pe")


def cell_dir(out: Path, model: str, pe: str) -> Path:
    """A cell's folder of run records under ``out``."""
    return out / "runs" / model / re.sub(r"[^A-Za-z0-9_.=+-]+", "_", pe)


def compare(runs: RunSet, models: Sequence[str], pes: Sequence[str], shape: ModelShape,
            config: Any, out: str | Path,
            report: Callable[[str], None] | None = None) -> dict[str, Any]:
    """Runs every cell (each of ``models`` with each of ``pes``, see the module docstring)
    on ``runs``, resumably under ``out``; writes ``out/compare.json`` (the summaries and the
    table's rows), ``out/compare.md`` and ``out/compare.png`` (where matplotlib is installed)
    and returns the JSON's content. The cells of earlier grids under ``out`` trained with the
    same settings stay in the table (:func:`earlier_cells`), so a grid grows by running it
    again with more models or encodings."""
    out = Path(out)
    if not models or not pes:
        raise ValueError("compare needs at least one model and one encoding set ('none' "
                         "for none)")
    check_encodings_fit(runs, pes, config)
    # every earlier cell stays until its runs are read again: a grid stopped by an error in
    # one cell (or Ctrl-C) leaves the table with every cell it had
    cells = earlier_cells(out, runs.dataset, run_settings(shape, config),
                          _config_defaults(config))
    for model in models:
        for pe in pes:
            label = _pe_label(pe.replace("+", ","))
            if report:
                report(f"{model} with {label}")
            try:
                records = train_runs(
                    runs, model, label.replace("+", ",") if label != "none" else "none",
                    shape, config, cell_dir(out, model, label),
                    report=(lambda line: report(f"  {line}")) if report else None)
            except GraphRefusedError as refusal:  # the encoding cannot take this graph
                if report:
                    report(f"  refused: {refusal}")
                cells[(model, label)] = refused_cell(str(refusal))
            else:
                cells[(model, label)] = summarize(records)
            write_compare(out, runs, cells, config, shape)
    return write_compare(out, runs, cells, config, shape, plot=True)


def _row_order(out: Path, cells: dict[tuple[str, str], Any]) -> Callable[[Any], tuple]:
    """The sort key of :func:`write_compare`'s rows: the rows of ``out/compare.json`` keep
    their order, the others follow in ``cells``' order; a model's rows stay together."""
    earlier = out / "compare.json"
    keys = [(r["model"], r["pe"]) for r in json.loads(earlier.read_text())["rows"]] \
        if earlier.exists() else []
    keys += [key for key in cells if key not in keys]
    rank = {key: i for i, key in enumerate(keys)}
    model_rank = {}
    for model, _ in keys:
        model_rank.setdefault(model, len(model_rank))
    return lambda item: (model_rank[item[0][0]], item[0][1] != "none", rank[item[0]])


def write_compare(out: Path, runs: RunSet, cells: dict[tuple[str, str], dict[str, Any]],
                  config: Any, shape: ModelShape, plot: bool = False) -> dict[str, Any]:
    """The grid so far as ``compare.json`` and ``compare.md`` (and with ``plot`` the figure):
    one row per cell, in the order of the table already there, new cells after it, each
    model's cells together, ``none`` first."""
    rows = compare_table(dict(sorted(cells.items(), key=_row_order(out, cells))))
    result = {"dataset": runs.dataset, "splits": runs.splits, "seeds": runs.seeds,
              "channels": shape.channels, "layers": shape.layers,
              "config": dataclasses.asdict(config),
              "significant_se": SIGNIFICANT_SE, "rows": rows}
    out.mkdir(parents=True, exist_ok=True)
    (out / "compare.json").write_text(json.dumps(result, indent=1, default=str))
    (out / "compare.md").write_text(markdown_table(rows))
    if plot and rows:
        result["plot"] = plot_cost(rows, out / "compare.png", runs.dataset)
    return result
