"""What a training run says while it runs: a bar of the batches inside each epoch (rate and
time left) under the bar of the epochs, a log line per epoch where no terminal shows bars, and
what an interrupted run kept and how to resume it."""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Iterable
from typing import Any

from tqdm.auto import tqdm

LOG = logging.getLogger("graphpe.train")
# Without a terminal (no bars): an epoch line at most this often, the first epoch's always.
LINE_SECONDS = 30.0


def batch_bar(loader: Iterable[Any], desc: str, enabled: bool) -> Iterable[Any]:
    """``loader`` shown as a bar of its batches (``desc``: ``"epoch 3"``, ``"val"``) below
    the epochs' bar, cleared when done; ``loader`` itself where bars are off or it is one
    batch (a whole graph)."""
    try:
        total = len(loader)  # type: ignore[arg-type]
    except TypeError:
        total = None
    if not enabled or total == 1:
        return loader
    return tqdm(loader, desc=desc, total=total, leave=False, position=1, unit="batch")


class EpochLines:
    """Where bars are off (stderr is not a terminal, or ``progress=False``): an INFO line on
    the ``graphpe.train`` logger after the first epoch and then at most every
    :data:`LINE_SECONDS` (``graphpe train`` shows them on stderr)."""

    def __init__(self, name: str, epochs: int, enabled: bool) -> None:
        self.name, self.epochs, self.enabled = name, epochs, enabled
        self.last = -math.inf

    def __call__(self, epoch: int, train_loss: float, val: float, best: float,
                 seconds: float) -> None:
        now = time.monotonic()
        if not self.enabled or now - self.last < LINE_SECONDS:
            return
        self.last = now
        LOG.info("%s: epoch %d/%d, loss %.4f, val %.4f (best %.4f), %.3g s per epoch",
                 self.name, epoch + 1, self.epochs, train_loss, val, best, seconds)


def interrupted_message(epoch: int, epochs: int, best_epoch: int, state: str | None,
                        results: str | None) -> str:
    """What an interrupted run says: the epochs it finished, what it writes, how to resume."""
    kept = f"; its record goes to {results}" if results else ""
    resume = (f"; continue with --resume {state}" if state else
              "; a run with --checkpoint PATH keeps a state to resume from")
    return (f"interrupted after epoch {epoch + 1} of {epochs}: the test metric is of the best "
            f"epoch so far ({best_epoch + 1}){kept}{resume}")
