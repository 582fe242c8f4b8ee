import math

import pytest
import torch

from graphpe.ops.dropout import dropout_host


@pytest.mark.parametrize("p", [0.1, 0.5, 0.9])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_keeps_a_fraction_one_minus_p_scaled_to_keep_the_expectation(p, dtype):
    torch.manual_seed(0)
    n = 400_000
    out = dropout_host(torch.ones(n, dtype=dtype), p)
    assert out.dtype == dtype and out.shape == (n,)
    kept = out != 0
    # the kept fraction within 5 binomial standard deviations of 1 - p
    assert abs(kept.double().mean().item() - (1 - p)) < 5 * math.sqrt(p * (1 - p) / n)
    assert torch.all(out[kept] == torch.tensor(1.0 / (1.0 - p), dtype=dtype))


def test_values_are_scaled_in_place_of_a_mask_and_the_input_is_untouched():
    torch.manual_seed(1)
    x = torch.randn(7, 11, 13)
    before = x.clone()
    torch.manual_seed(2)
    out = dropout_host(x, 0.3)
    torch.manual_seed(2)
    mask = dropout_host(torch.ones_like(x), 0.3)
    assert torch.equal(x, before)
    assert torch.allclose(out, x * mask)


def test_torch_seed_fixes_the_mask_and_successive_calls_differ():
    x = torch.ones(10_000)
    torch.manual_seed(5)
    a, b = dropout_host(x, 0.5), dropout_host(x, 0.5)
    torch.manual_seed(5)
    assert torch.equal(dropout_host(x, 0.5), a)
    # two draws agree on about half their entries, as independent masks do
    agree = (a == b).double().mean().item()
    assert abs(agree - 0.5) < 0.05


def test_neighbouring_elements_are_not_correlated():
    torch.manual_seed(3)
    keep = (dropout_host(torch.ones(200_001), 0.5) != 0).double()
    centred = keep - keep.mean()
    for lag in (1, 2, 16, 1024):
        corr = (centred[:-lag] * centred[lag:]).mean() / centred.var()
        assert abs(corr.item()) < 0.02


def test_non_contiguous_input_keeps_its_shape():
    x = torch.ones(6, 8).t()
    out = dropout_host(x, 0.25)
    assert out.shape == (8, 6)
    assert set(out.unique().tolist()) <= {0.0, torch.tensor(1.0 / 0.75).item()}


def test_p_zero_returns_the_values():
    x = torch.randn(100)
    assert torch.equal(dropout_host(x, 0.0), x)


def test_bad_inputs():
    with pytest.raises(ValueError, match=r"dropout probability must be in \[0, 1\), got 1.0"):
        dropout_host(torch.ones(3), 1.0)
    with pytest.raises(ValueError, match="dropout_host takes a CPU float32 or float64 tensor, "
                                         "got torch.int64 on cpu"):
        dropout_host(torch.ones(3, dtype=torch.long), 0.5)


def test_the_same_keys_give_the_same_mask():
    from graphpe.ops.dropout import dropout_keys

    torch.manual_seed(6)
    keys = dropout_keys()
    a = dropout_host(torch.ones(5000), 0.4, keys)
    b = dropout_host(torch.full((5000,), 2.0), 0.4, keys)
    assert torch.equal(b, 2 * a)
    assert not torch.equal(dropout_host(torch.ones(5000), 0.4), a)


def _lowbias32(x: int) -> int:
    """Reference: Wellons' lowbias32 in Python integers."""
    x ^= x >> 16
    x = (x * 0x7FEB352D) & 0xFFFFFFFF
    x ^= x >> 15
    x = (x * 0x846CA68B) & 0xFFFFFFFF
    return x ^ (x >> 16)


@pytest.mark.parametrize("keys", [(0, 0), (12345, 2**32 - 1), (2**31, 7)])
def test_mask_is_the_keyed_lowbias32_hash(keys):
    """Element i is kept where the top 24 bits of ``lowbias32(lowbias32(i ^ k0) ^ k1)`` reach
    ``p * 2^24``: the compiled hash (32-bit LLVM IR) against the hash in Python integers."""
    p, n = 0.5, 3000
    out = dropout_host(torch.ones(n), p, keys)
    want = [(_lowbias32(_lowbias32(i ^ keys[0]) ^ keys[1]) >> 8) >= round(p * 2**24)
            for i in range(n)]
    assert (out != 0).tolist() == want
