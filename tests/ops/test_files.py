import pickle
import re

import pytest
import torch

from graphpe.ops.files import load_torch_file

WHAT = "a graphpe checkpoint (train --checkpoint)"


def test_a_good_file_loads(tmp_path):
    path = tmp_path / "good.pt"
    torch.save({"w": torch.arange(3)}, path)
    assert torch.equal(load_torch_file(path, WHAT)["w"], torch.arange(3))


def test_a_missing_file_names_what_was_expected(tmp_path):
    path = tmp_path / "missing.pt"
    with pytest.raises(FileNotFoundError, match=f"^{re.escape(str(path))}: no such file "
                                                r"\(expected a graphpe checkpoint \(train "
                                                r"--checkpoint\)\)$"):
        load_torch_file(path, WHAT)


def _truncated(path):
    torch.save({"w": torch.randn(1000)}, path)
    path.write_bytes(path.read_bytes()[:2000])


def _garbage(path):
    path.write_bytes(b"not a checkpoint" * 10)


def _pickled_object(path):
    path.write_bytes(pickle.dumps(object()))


@pytest.mark.parametrize("damage", [_truncated, _garbage, _pickled_object])
def test_a_damaged_or_foreign_file_is_one_line(tmp_path, damage):
    path = tmp_path / "bad.pt"
    damage(path)
    with pytest.raises(ValueError) as info:
        load_torch_file(path, WHAT)
    message = str(info.value)
    assert message.startswith(f"{path}: not readable as a graphpe checkpoint (train "
                              "--checkpoint) (")
    assert "\n" not in message and len(message) < 300
