import pytest
import torch

from graphpe.datasets import EXP, read_exp
from tests.conftest import copy_shared


def test_read_exp_format(tmp_path):
    path = tmp_path / "GRAPHSAT.txt"
    path.write_text("2\n3 1\n0 1 1\n1 2 0 2\n0 1 1\n2 0\n1 1 1\n1 1 0\n")
    graphs = read_exp(path)
    assert [g.num_nodes for g in graphs] == [3, 2]
    assert graphs[0].y.tolist() == [1] and graphs[1].y.tolist() == [0]
    assert graphs[0].edge_index.tolist() == [[0, 1, 1, 2], [1, 0, 2, 1]]
    assert torch.equal(graphs[0].x, torch.tensor([[1.0, 0.0], [0.0, 1.0], [1.0, 0.0]]))


def test_missing_file_names_location(tmp_path):
    with pytest.raises(FileNotFoundError, match="GRAPHSAT.txt"):
        read_exp(tmp_path / "GRAPHSAT.txt")
    with pytest.raises(FileNotFoundError, match="GRAPHSAT.txt"):
        EXP(tmp_path / "nothing")


def test_offline_exp(tmp_path):
    root = copy_shared("exp/EXP", tmp_path / "EXP")
    ds = EXP(root)
    assert len(ds) == 1200
    assert set(ds._data.y.tolist()) == {0, 1}


def test_split_fractions_are_checked(tmp_path):
    from graphpe.datasets import check_split, load_dataset

    assert check_split([0.5, 0.25, 0.25]) == (0.5, 0.25, 0.25)
    with pytest.raises(ValueError, match=r"split fractions must sum to 1, got \(0\.5, 0\.3, "
                                         r"0\.3\) \(sum 1\.1\)"):
        load_dataset("MUTAG", tmp_path, split=(0.5, 0.3, 0.3))
    with pytest.raises(ValueError, match=r"split fractions must each be in \(0, 1\), got "
                                         r"\(1\.0, 0\.0, 0\.0\)"):
        load_dataset("MUTAG", tmp_path, split=(1.0, 0.0, 0.0))
    with pytest.raises(ValueError, match=r"split must be three fractions \(train, val, test\), "
                                         r"got \(0\.5, 0\.5\)"):
        load_dataset("MUTAG", tmp_path, split=(0.5, 0.5))
    with pytest.raises(ValueError, match="split must be three fractions"):
        load_dataset("MUTAG", tmp_path, split="0.5,0.25,0.25")
    with pytest.raises(ValueError, match="ZINC: split applies to TU datasets and the node sets "
                                         "outside OGB"):
        load_dataset("ZINC", tmp_path, split=(0.5, 0.25, 0.25))


def test_node_split_masks_are_stratified_and_seeded():
    from graphpe.datasets import node_split_masks

    y = torch.arange(400) % 4
    train, val, test = node_split_masks(y, (0.5, 0.25, 0.25), seed=3)
    assert (train.int() + val.int() + test.int()).eq(1).all()  # a partition
    for c in range(4):
        assert [int(m[y == c].sum()) for m in (train, val, test)] == [50, 25, 25]
    again = node_split_masks(y, (0.5, 0.25, 0.25), seed=3)
    assert all(torch.equal(a, b) for a, b in zip((train, val, test), again, strict=True))
    other = node_split_masks(y, (0.5, 0.25, 0.25), seed=4)
    assert not torch.equal(train, other[0])


def test_tu_split_argument(tmp_path):
    from graphpe.datasets import load_dataset

    copy_shared("tu/MUTAG", tmp_path / "MUTAG")
    bundle = load_dataset("MUTAG", tmp_path, split=(0.5, 0.25, 0.25), seed=1)
    sizes = [len(bundle.train), len(bundle.val), len(bundle.test)]
    assert sum(sizes) == 188 and abs(sizes[0] - 94) <= 2 and abs(sizes[2] - 47) <= 2
    assert len(bundle.extra["dataset"]) == 188
    default = load_dataset("MUTAG", tmp_path)
    assert len(default.test) in (18, 19, 20)  # 80/10/10 unchanged
    other = load_dataset("MUTAG", tmp_path, split=(0.5, 0.25, 0.25), seed=2)
    assert bundle.test.indices() != other.test.indices()


def test_planetoid_random_split(tmp_path):
    from graphpe.datasets import load_dataset

    copy_shared("planetoid/Cora", tmp_path / "Cora")
    public = load_dataset("Cora", tmp_path)
    assert int(public.train[0].train_mask.sum()) == 140
    bundle = load_dataset("Cora", tmp_path, split=(0.5, 0.25, 0.25), seed=0)
    data = bundle.train[0]
    counts = [int(data[f"{s}_mask"].sum()) for s in ("train", "val", "test")]
    assert sum(counts) == data.num_nodes == 2708
    assert abs(counts[0] - 1354) <= 7 and abs(counts[2] - 677) <= 7
    assert not (data.train_mask & data.test_mask).any()
    # the loaded dataset keeps its public masks (the random ones live in a copy)
    assert int(public.train[0].train_mask.sum()) == 140
    assert int(load_dataset("Cora", tmp_path).train[0].train_mask.sum()) == 140


def test_csl_needs_no_files(tmp_path):
    from graphpe.datasets import load_dataset

    bundle = load_dataset("CSL", tmp_path)
    assert bundle.name == "CSL (generated in code)"
    assert (len(bundle.train), len(bundle.val), len(bundle.test)) == (90, 30, 30)
    graph = bundle.train[0]
    assert graph.num_nodes == 41 and graph.x.dtype == torch.long
    assert sorted(torch.cat([g.y for g in bundle.test]).tolist()) == sorted(list(range(10)) * 3)
    assert not any(tmp_path.iterdir())  # nothing written
    again, other = load_dataset("CSL", tmp_path), load_dataset("CSL", tmp_path, fold=1)
    edges = lambda graphs: [g.edge_index.tolist() for g in graphs]  # noqa: E731
    assert edges(again.test) == edges(bundle.test) != edges(other.test)


def test_exp_says_it_has_no_download(tmp_path):
    from graphpe.datasets import load_dataset

    with pytest.raises(FileNotFoundError) as error:
        load_dataset("EXP", tmp_path, download=True)
    message = str(error.value)
    assert message.startswith("EXP has no download: place GRAPHSAT.txt under ")
    assert "github.com/ralphabb/GNN-RNI" in message and "\n" not in message
    with pytest.raises(FileNotFoundError, match="^EXP: .* not found. EXP has no download"):
        load_dataset("EXP", tmp_path)


def test_an_offline_download_fails_in_one_line(tmp_path, monkeypatch):
    from urllib.error import URLError

    import graphpe.datasets as datasets

    def offline(*args, **kwargs):
        raise URLError(OSError("[Errno -2] Name or service not known"))

    monkeypatch.setitem(datasets.LOADERS, "ZINC", offline)
    with pytest.raises(ConnectionError) as error:
        datasets.load_dataset("ZINC", tmp_path, download=True)
    assert str(error.value) == (
        f"ZINC: the download failed ([Errno -2] Name or service not known); on a machine "
        f"without network place the dataset's files under {tmp_path} instead")
