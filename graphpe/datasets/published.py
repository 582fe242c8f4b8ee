"""The published results a run on a benchmark is read beside: each number with its paper, its
source and the budget it was measured at.

``graphpe train --splits all`` prints the entries whose architecture graphpe's model
implements (:attr:`PublishedResult.graphpe_model`) under its mean ± std, and the benchmarks'
tables read the same entries, so a number is written once. Values are percent, as the papers
print them (ROC-AUC on the binary heterophilous sets).
"""

from __future__ import annotations

from dataclasses import dataclass

PLATONOV = "Platonov et al., ICLR 2023"
PLATONOV_SOURCE = "yandex-research/heterophilous-graphs:notebooks/results.ipynb"
PLATONOV_PROTOCOL = ("512 channels, 1-5 layers (5 typical), dropout 0.2, AdamW lr 3e-5, "
                     "1,000 full-batch steps, test at the best validation step, 10 splits")
POLYNORMER = "Deng, Yue, Zhang, ICLR 2024"
POLYNORMER_SOURCE = "Polynormer paper Table 2 (arXiv 2403.01232)"
POLYNORMER_REPO = ("cornell-zhang/Polynormer@fc8c276c9c5dfbd616d83f65338a3392188a5e08:"
                   "README.md ('Expected results')")
POLYNORMER_PROTOCOL = ("run.sh: 512 wide (64 x 8 heads), 10 local + 3 global layers, 100 "
                       "local + 2,000 global epochs, Adam lr 0.001, 10 splits")
LUO = "Luo, Shi, Wu, NeurIPS 2024 (Classic GNNs are Strong Baselines)"
LUO_SOURCE = ("LUOyk1999/tunedGNN@23f9604e8b13a9a6d3faa2f691cd844006979153:"
              "medium_graph/README.md")
LUO_PROTOCOL = "tuned per dataset (run_gnn.sh), Adam, 2,000 full-batch epochs, 10 splits"


@dataclass(frozen=True)
class PublishedResult:
    """One published number.

    Args:
        dataset: the dataset's name as ``graphpe train --dataset`` takes it.
        model: the paper's name for the model (``*``: Luo et al.'s tuned variant).
        paper: authors and venue.
        mean: the mean over the paper's runs, in percent.
        std: their standard deviation (``None`` for a single run).
        source: where the number was read (repository, commit and file, or the table).
        protocol: the budget it was measured at, in short.
        graphpe_model: the ``--model`` of graphpe that implements the same architecture
            (``None`` where graphpe has none).
        verified: whether the number was read from the paper's own table or repository
            (``False``: from secondary text that cites it).
    """

    dataset: str
    model: str
    paper: str
    mean: float
    std: float | None
    source: str
    protocol: str
    graphpe_model: str | None = None
    verified: bool = True

    def value_text(self) -> str:
        """``mean ± std`` as the paper prints it (``mean (one run)`` without a spread), marked
        ``(unverified)`` where it was not read from the paper's own table."""
        text = f"{self.mean:.2f} ± {self.std:.2f}" if self.std is not None else \
            f"{self.mean:.2f} (one run)"
        return text if self.verified else f"{text} (unverified)"


def _platonov(model: str, graphpe_model: str | None, minesweeper: tuple[float, float],
              tolokers: tuple[float, float]) -> tuple[PublishedResult, ...]:
    return tuple(PublishedResult(dataset, model, PLATONOV, mean, std, PLATONOV_SOURCE,
                                 PLATONOV_PROTOCOL, graphpe_model)
                 for dataset, (mean, std) in (("Minesweeper", minesweeper),
                                              ("Tolokers", tolokers)))


#: Platonov et al.'s table (their results notebook), Polynormer's and Luo et al.'s tuned
#: classic GNNs on the heterophilous sets.
PUBLISHED: tuple[PublishedResult, ...] = (
    *_platonov("GCN", "res-gcn", (89.75, 0.52), (83.64, 0.67)),
    *_platonov("SAGE", "res-sage", (93.51, 0.57), (82.43, 0.44)),
    *_platonov("GAT", "res-gat", (92.01, 0.68), (83.70, 0.47)),
    *_platonov("GAT-sep", "res-gat-sep", (93.91, 0.35), (83.78, 0.43)),
    *_platonov("GT", "res-gt", (91.85, 0.76), (83.23, 0.64)),
    *_platonov("GT-sep", "res-gt-sep", (92.29, 0.47), (82.52, 0.92)),
    *_platonov("ResNet", "res-mlp", (50.89, 1.39), (72.95, 1.06)),
    PublishedResult("Minesweeper", "Polynormer-r", POLYNORMER, 97.46, 0.36, POLYNORMER_SOURCE,
                    POLYNORMER_PROTOCOL, "polynormer", verified=False),
    PublishedResult("Tolokers", "Polynormer-r", POLYNORMER, 85.91, 0.74, POLYNORMER_SOURCE,
                    POLYNORMER_PROTOCOL, "polynormer", verified=False),
    PublishedResult("Minesweeper", "Polynormer", POLYNORMER, 96.96, 0.52, POLYNORMER_SOURCE,
                    POLYNORMER_PROTOCOL, verified=False),
    PublishedResult("Tolokers", "Polynormer", POLYNORMER, 84.83, 0.72, POLYNORMER_SOURCE,
                    POLYNORMER_PROTOCOL, verified=False),
    PublishedResult("Minesweeper", "Polynormer-r (first run)", f"{POLYNORMER} (repo README)",
                    97.19, None, POLYNORMER_REPO, "run.sh --runs 1: split 0, seed 42"),
    PublishedResult("Tolokers", "Polynormer-r (first run)", f"{POLYNORMER} (repo README)",
                    85.15, None, POLYNORMER_REPO, "run.sh --runs 1: split 0, seed 42"),
    PublishedResult("Minesweeper", "GCN*", LUO, 97.86, 0.24, LUO_SOURCE, LUO_PROTOCOL, "gcn"),
    PublishedResult("Minesweeper", "SAGE*", LUO, 97.77, 0.62, LUO_SOURCE, LUO_PROTOCOL, "sage"),
    PublishedResult("Minesweeper", "GAT*", LUO, 97.73, 0.73, LUO_SOURCE, LUO_PROTOCOL),
)


def published_results(dataset: str, graphpe_model: str | None = None
                      ) -> list[PublishedResult]:
    """The entries of :data:`PUBLISHED` on ``dataset`` (case-insensitive), those of
    ``graphpe_model``'s architecture only when it is given."""
    return [entry for entry in PUBLISHED if entry.dataset.lower() == dataset.lower()
            and (graphpe_model is None or entry.graphpe_model == graphpe_model)]
