"""graphpe.datasets.published: the published numbers, each with its source and budget."""

from __future__ import annotations

import dataclasses

import pytest

from graphpe.datasets.published import PUBLISHED, PublishedResult, published_results
from graphpe.nn.build import MODELS


def test_every_entry_is_a_percent_with_a_source_and_a_graphpe_model_that_exists():
    for entry in PUBLISHED:
        assert 0 < entry.mean <= 100 and (entry.std is None or 0 <= entry.std < 10), entry
        assert entry.source and entry.protocol and entry.paper
        assert entry.graphpe_model is None or entry.graphpe_model in MODELS, entry
    keys = [(e.dataset, e.model) for e in PUBLISHED]
    assert len(keys) == len(set(keys))  # one number per dataset and model


def test_lookup_by_dataset_and_graphpe_model():
    gcn, = published_results("minesweeper", "res-gcn")
    assert (gcn.model, gcn.mean, gcn.std) == ("GCN", 89.75, 0.52)
    assert [e.model for e in published_results("Tolokers", "polynormer")] == ["Polynormer-r"]
    assert published_results("Cora", "gcn") == []
    assert {e.dataset for e in published_results("Tolokers")} == {"Tolokers"}


@pytest.mark.parametrize("changes, text", [
    ({}, "89.75 ± 0.52"),
    ({"std": None}, "89.75 (one run)"),
    ({"verified": False}, "89.75 ± 0.52 (unverified)"),
])
def test_value_text(changes, text):
    entry: PublishedResult = published_results("Minesweeper", "res-gcn")[0]
    assert dataclasses.replace(entry, **changes).value_text() == text
