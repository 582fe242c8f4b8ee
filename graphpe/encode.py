"""A training run's encodings: the transforms of its PE specs, its dataset's splits encoded
through :func:`~graphpe.transforms.precompute` (and its cache), and the random PEs of the
training graphs drawn anew every epoch."""

from __future__ import annotations

import copy
import time
from collections.abc import Callable
from typing import Any

from torch_geometric.transforms import Compose

from graphpe.datasets import DatasetBundle
from graphpe.encodings import pe_model_config, resolve_pe, transforms_of
from graphpe.transforms import PETransform, precompute


def pe_transforms(pe: Any) -> tuple[list[PETransform], dict[str, dict[str, Any]]]:
    """The transforms and the ``pe`` config of :func:`graphpe.nn.build.build_model` for PEs given in
    any form :func:`graphpe.encodings.resolve_pe` takes (names, or names with settings)."""
    specs = resolve_pe(pe)
    return transforms_of(specs), pe_model_config(specs)


def encode_bundle(bundle: DatasetBundle, transforms: list[PETransform],
                  progress: bool = False,
                  cache_dir: str | None = None) -> tuple[DatasetBundle, float]:
    """Precompute PEs on every split (batched, through ``precompute``'s cache when
    ``cache_dir`` is given); returns the new bundle and the seconds spent. Splits that are
    one object (a node set's one graph) are encoded once and stay one object."""
    if not transforms:
        return bundle, 0.0
    start = time.perf_counter()
    pipeline = Compose(transforms)
    encoded: dict[int, Any] = {}
    for split in (bundle.train, bundle.val, bundle.test):
        if id(split) not in encoded:
            encoded[id(split)] = precompute(split, pipeline, progress=progress,
                                            cache_dir=cache_dir)
    splits = [encoded[id(split)] for split in (bundle.train, bundle.val, bundle.test)]
    seconds = time.perf_counter() - start
    out = copy.copy(bundle)
    out.train, out.val, out.test = splits
    return out, seconds


def redraw_random_pes(train: Any, transforms: list[PETransform],
                      seed: int) -> Callable[[int], Any] | None:
    """``train_split`` of :func:`~graphpe.train.fit`: the encoded training graphs ``train``
    with the random PEs among ``transforms`` (random features, random signs) drawn anew every epoch,
    seeded by ``seed`` and the epoch; None where none of ``transforms`` is random."""
    random_pe = [t for t in transforms if t.draws_random]
    if not random_pe:
        return None

    def train_split(epoch: int):
        # the random PEs of the training graphs drawn anew (seeded by epoch); the others
        # (and val/test) keep their precomputed values
        fresh = [copy.copy(t) for t in random_pe]
        for t in fresh:
            t.seed = seed * 100_003 + epoch
        return precompute(train, fresh, progress=False)

    return train_split
