import copy
import itertools

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torch import nn
from torch_geometric.nn import GINEConv, GPSConv
from torch_geometric.utils import to_dense_batch

from graphpe.layers.attention import (
    _choose_buckets,
    _GraphAttentionCore,
    attention_dropout,
    dropout_scale_mask,
    weight_dropout,
)
from graphpe.nn import GINLayer, GPSLayer, MultiheadGraphAttention, graph_layout
from graphpe.ops.dropout import dropout_host, dropout_keys


def ptr_of(sizes):
    return torch.tensor([0, *np.cumsum(sizes)])


def reference_attention(qkv, batch, heads, masks=None, dense_bias=None):
    """Padded multi-head attention written with plain autograd ops (the maths of
    ``nn.MultiheadAttention`` with a key-padding mask, without its projections)."""
    channels = qkv.size(1) // 3
    dense, valid = to_dense_batch(qkv, batch)
    g, n, _ = dense.shape
    q, k, v = dense.view(g, n, 3, heads, channels // heads).permute(2, 0, 3, 1, 4)
    scores = q @ k.transpose(-1, -2) / (channels // heads) ** 0.5
    if dense_bias is not None:
        scores = scores + dense_bias
    scores = scores.masked_fill(~valid[:, None, None, :], float("-inf")).softmax(-1)
    if masks is not None:
        scores = scores * masks
    out = (scores @ v).transpose(1, 2).reshape(g, n, channels)
    return out[valid]


@pytest.mark.parametrize("max_buckets", [1, 2, 4])
def test_core_matches_padded_attention_values_and_gradients(max_buckets):
    torch.manual_seed(0)
    sizes = [7, 3, 1, 5, 7, 2, 6]
    batch = torch.repeat_interleave(torch.arange(len(sizes)), torch.tensor(sizes))
    layout = graph_layout(ptr_of(sizes), max_buckets=max_buckets, bucket_overhead=0,
                          dtype=torch.float64)
    assert len(layout.buckets) == min(max_buckets, len(set(sizes)))
    qkv = torch.randn(sum(sizes), 3 * 8, dtype=torch.float64, requires_grad=True)
    got = _GraphAttentionCore.apply(qkv, None, layout, 2, 0.0, None)
    want = reference_attention(qkv, batch, 2)
    assert torch.allclose(got, want, atol=1e-12)
    grad = torch.randn_like(got)
    g1, = torch.autograd.grad(got, qkv, grad)
    g2, = torch.autograd.grad(want, qkv, grad)
    assert torch.allclose(g1, g2, atol=1e-12)
    assert torch.autograd.gradcheck(
        lambda t: _GraphAttentionCore.apply(t, None, layout, 2, 0.0, None), (qkv,))


def test_core_dropout_gradient_matches_autograd_with_the_same_masks():
    sizes = [5, 4, 4]
    batch = torch.repeat_interleave(torch.arange(3), torch.tensor(sizes))
    layout = graph_layout(ptr_of(sizes), max_buckets=1, dtype=torch.float64)
    qkv = torch.randn(13, 12, dtype=torch.float64, requires_grad=True)
    torch.manual_seed(3)
    got = _GraphAttentionCore.apply(qkv, None, layout, 2, 0.5, None)
    torch.manual_seed(3)  # the core draws one mask of shape [heads * graphs, n, n]
    masks = attention_dropout(torch.ones(2 * 3, 5, 5, dtype=torch.float64), 0.5)
    want = reference_attention(qkv, batch, 2, masks.view(2, 3, 5, 5).transpose(0, 1))
    assert torch.allclose(got, want, atol=1e-12)
    grad = torch.randn_like(got)
    assert torch.allclose(torch.autograd.grad(got, qkv, grad)[0],
                          torch.autograd.grad(want, qkv, grad)[0], atol=1e-12)


@pytest.mark.parametrize(("max_buckets", "dropout"), [(1, 0.0), (3, 0.0), (1, 0.5)])
def test_cpu_float32_core_keys_first_matches_the_float64_reference(max_buckets, dropout):
    """The CPU's float32 core (scores keys first, compiled softmax and dropout): values and
    gradients against the padded float64 reference with the same dropout masks, to float32
    rounding."""
    sizes = [7, 3, 1, 5, 7, 2, 6]
    batch = torch.repeat_interleave(torch.arange(len(sizes)), torch.tensor(sizes))
    layout = graph_layout(ptr_of(sizes), max_buckets=max_buckets, bucket_overhead=0)
    assert len(layout.buckets) == max_buckets
    torch.manual_seed(0)
    qkv64 = torch.randn(sum(sizes), 3 * 8, dtype=torch.float64) * 2
    qkv = qkv64.float().requires_grad_()
    torch.manual_seed(3)
    got = _GraphAttentionCore.apply(qkv, None, layout, 2, dropout, None)
    masks = None
    if dropout:  # one bucket: one pair of keys, over the keys-first [heads * graphs, n, n]
        torch.manual_seed(3)
        keys_first = dropout_host(torch.ones(2 * len(sizes), 7, 7), dropout, dropout_keys())
        masks = keys_first.transpose(1, 2).reshape(2, len(sizes), 7, 7).transpose(0, 1)
        # the mask's layout follows the bucket's graph order (sorted by size)
        order = torch.from_numpy(np.argsort(-np.array(sizes), kind="stable"))
        masks = torch.empty_like(masks).index_copy_(0, order, masks).double()
    want = reference_attention(qkv64.requires_grad_(), batch, 2, masks)
    assert got.dtype == torch.float32
    torch.testing.assert_close(got.double(), want, atol=2e-6, rtol=1e-5)
    grad = torch.randn_like(want)
    torch.testing.assert_close(torch.autograd.grad(got, qkv, grad.float())[0].double(),
                               torch.autograd.grad(want, qkv64, grad)[0], atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize(("max_buckets", "dropout"), [(1, 0.0), (3, 0.0), (1, 0.5)])
def test_cpu_float32_core_keys_first_takes_pair_biases(max_buckets, dropout, monkeypatch):
    """Pair biases on the CPU's float32 keys-first core (added to the raw scores over the
    scale, their gradient read back the same way): without dropout, values and gradients of
    qkv and the biases against the float64 core, which adds them to the logits; with dropout
    (whose masks float64 does not draw alike), the bias gradient against a finite
    difference under the same masks."""
    import graphpe.layers.attention as attention_module

    calls = []
    compiled = attention_module.softmax_keys_first
    monkeypatch.setattr(attention_module, "softmax_keys_first",
                        lambda *a: calls.append(1) or compiled(*a))
    sizes = [7, 3, 1, 5, 7, 2, 6]
    ptr = ptr_of(sizes)
    layout = graph_layout(ptr, max_buckets=max_buckets, bucket_overhead=0)
    layout64 = graph_layout(ptr, max_buckets=max_buckets, bucket_overhead=0,
                            dtype=torch.float64)
    pairs = [(int(ptr[g]) + i, int(ptr[g]) + j) for g, n in enumerate(sizes)
             for i in range(n) for j in range(n) if (i * 3 + j) % 4]
    pair_index = torch.tensor(pairs).t()
    torch.manual_seed(0)
    qkv64 = torch.randn(sum(sizes), 3 * 8, dtype=torch.float64) * 2
    bias64 = torch.randn(len(pairs), 2, dtype=torch.float64)
    qkv, bias = qkv64.float().requires_grad_(), bias64.float().requires_grad_()
    qkv64.requires_grad_(), bias64.requires_grad_()
    torch.manual_seed(3)
    got = _GraphAttentionCore.apply(qkv, bias, layout, 2, dropout,
                                    layout.pair_slots(pair_index, 2))
    assert len(calls) == max_buckets  # the keys-first path, bias and all
    grad = torch.randn(got.shape, dtype=torch.float64)
    got_grads = torch.autograd.grad(got, [qkv, bias], grad.float())
    if dropout:  # the same float32 core with its masks: the bias gradient by differences
        torch.manual_seed(3)
        again = _GraphAttentionCore.apply(qkv, bias, layout, 2, dropout,
                                          layout.pair_slots(pair_index, 2))
        assert torch.equal(again, got)  # the masks follow the seed
        step = torch.zeros_like(bias)
        step[5, 1] = 1e-2
        torch.manual_seed(3)
        moved = _GraphAttentionCore.apply(qkv, bias + step, layout, 2, dropout,
                                          layout.pair_slots(pair_index, 2))
        slope = ((moved - got).double() * grad).sum() / 1e-2
        torch.testing.assert_close(slope, got_grads[1][5, 1].double(), atol=2e-2, rtol=2e-2)
        return
    want = _GraphAttentionCore.apply(qkv64, bias64, layout64, 2, 0.0,
                                     layout64.pair_slots(pair_index, 2))
    torch.testing.assert_close(got.double(), want, atol=2e-6, rtol=1e-5)
    want_grads = torch.autograd.grad(want, [qkv64, bias64], grad)
    for a, b in zip(got_grads, want_grads, strict=True):
        torch.testing.assert_close(a.double(), b, atol=1e-5, rtol=1e-5)


def test_dropout_scale_mask_keeps_the_expectation():
    torch.manual_seed(0)
    mask = dropout_scale_mask(torch.empty(200_000), 0.3)
    assert mask.unique().tolist() == pytest.approx([0.0, 1 / 0.7])
    assert abs((mask > 0).float().mean().item() - 0.7) < 0.01


@settings(max_examples=60, deadline=None)
@given(sizes=st.lists(st.integers(0, 12), min_size=1, max_size=9),
       max_buckets=st.integers(1, 4), overhead=st.sampled_from([0, 20, 1e9]))
def test_layout_places_every_node_once_inside_its_graphs_block(sizes, max_buckets, overhead):
    layout = graph_layout(ptr_of(sizes), max_buckets=max_buckets, bucket_overhead=overhead)
    slot = layout.slot.numpy()
    assert len(slot) == sum(sizes) and len(set(slot.tolist())) == len(slot)
    assert len(layout.buckets) <= max_buckets
    assert sum(b.num_graphs for b in layout.buckets) == sum(s > 0 for s in sizes)
    start = 0
    for b in layout.buckets:  # buckets tile the padded rows in order
        assert b.start == start
        start += b.num_graphs * b.size
        assert ((b.key_bias == 0).sum(-1).flatten() > 0).all()  # every graph has a real key
    assert start == layout.num_slots
    offsets = np.cumsum([0, *sizes])
    for g, size in enumerate(sizes):  # a graph's nodes are consecutive rows of one block
        rows = slot[offsets[g]:offsets[g + 1]]
        if size:
            assert (np.diff(rows) == 1).all()
            b = next(b for b in layout.buckets
                     if b.start <= rows[0] < b.start + b.num_graphs * b.size)
            assert (rows[0] - b.start) % b.size == 0 and size <= b.size


@settings(max_examples=40, deadline=None)
@given(sizes=st.lists(st.integers(0, 9), min_size=1, max_size=7), max_buckets=st.integers(1, 4),
       width=st.integers(1, 6))
def test_head_rows_put_each_head_vector_in_its_buckets_head_major_block(sizes, max_buckets,
                                                                         width):
    layout = graph_layout(ptr_of(sizes), max_buckets=max_buckets, bucket_overhead=10)
    rows = layout.head_rows(width).view(-1, width).numpy()
    assert len(set(rows.flatten().tolist())) == rows.size  # no two vectors share a row
    for node, slot in enumerate(layout.slot.tolist()):
        b = next(b for b in layout.buckets if b.start <= slot < b.start + b.num_graphs * b.size)
        local, span = slot - b.start, b.num_graphs * b.size
        # block [width, graphs * size] from row width * start: head h of the node at h*span
        assert rows[node].tolist() == [width * b.start + h * span + local for h in range(width)]
    assert layout.head_rows(width) is layout.head_rows(width)  # cached for every layer


@settings(max_examples=40, deadline=None)
@given(sizes=st.lists(st.integers(0, 9), min_size=1, max_size=7), max_buckets=st.integers(1, 4),
       width=st.integers(1, 6), dtype=st.sampled_from([torch.float32, torch.float64]))
def test_padded_heads_gather_equals_the_zero_filled_scatter(sizes, max_buckets, width, dtype):
    """The CPU's padded buffer, filled as a gather (``rows_or_zero`` over ``head_sources``), is
    the scatter into zeros that other devices run: every head vector in its row, zeros on
    padding."""
    layout = graph_layout(ptr_of(sizes), max_buckets=max_buckets, bucket_overhead=10)
    x = torch.randn(sum(sizes), width * 3, dtype=dtype)
    want = x.new_zeros(width * layout.num_slots, 3).index_copy_(
        0, layout.head_rows(width), x.reshape(-1, 3))
    got = layout.padded_heads(x, width)
    assert got.dtype == dtype and torch.equal(got, want)
    assert layout.head_sources(width) is layout.head_sources(width)  # cached for every layer
    # with a bias on every row (the in-projection's, added as the rows are laid out)
    bias = torch.randn(width * 3, dtype=dtype)
    want = x.new_zeros(width * layout.num_slots, 3).index_copy_(
        0, layout.head_rows(width), (x + bias).reshape(-1, 3))
    assert torch.equal(layout.padded_heads(x, width, bias), want)


@settings(max_examples=60, deadline=None)
@given(sizes=st.lists(st.integers(1, 40), min_size=1, max_size=7), max_buckets=st.integers(1, 4),
       overhead=st.integers(0, 3000))
def test_bucket_choice_is_optimal(sizes, max_buckets, overhead):
    desc = np.sort(np.array(sizes))[::-1]

    def cost(starts):
        ends = [*starts[1:], len(desc)]
        return sum(overhead + (e - s) * desc[s] ** 2 for s, e in zip(starts, ends, strict=True))

    got = _choose_buckets(desc, overhead, max_buckets)
    assert got[0] == 0 and got == sorted(set(got))
    best = min(cost([0, *cut]) for r in range(max_buckets)
               for cut in itertools.combinations(range(1, len(desc)), r))
    assert cost(got) == pytest.approx(best)


def test_one_bucket_is_to_dense_batch_padding():
    sizes = [4, 9, 2]
    layout = graph_layout(ptr_of(sizes), max_buckets=1)
    (bucket,) = layout.buckets
    assert (bucket.num_graphs, bucket.size) == (3, 9)


def test_layout_of_empty_batch_and_bad_arguments():
    layout = graph_layout(torch.tensor([0, 0, 0]))
    assert layout.buckets == () and layout.num_slots == 0
    attn = MultiheadGraphAttention(8, 2)
    assert attn(torch.zeros(0, 8), layout).shape == (0, 8)
    with pytest.raises(ValueError, match="max_buckets must be a positive int, got 0"):
        graph_layout(torch.tensor([0, 3]), max_buckets=0)
    with pytest.raises(ValueError, match=r"dropout must be in \[0, 1\), got 1.0"):
        MultiheadGraphAttention(8, 2, dropout=1.0)
    with pytest.raises(ValueError, match="channels=9 must be divisible by heads=2"):
        MultiheadGraphAttention(9, 2)


@pytest.mark.parametrize(("max_buckets", "norm"), [(1, "batch_norm"), (3, "batch_norm"),
                                                   (3, "layer_norm"), (2, "graph_norm")])
def test_gps_layer_matches_gpsconv_with_several_buckets(max_buckets, norm):
    torch.manual_seed(0)
    channels, heads, sizes = 16, 4, [9, 2, 14, 5, 5, 11, 1]
    batch = torch.repeat_interleave(torch.arange(len(sizes)), torch.tensor(sizes))
    ptr = ptr_of(sizes)
    src = torch.cat([torch.randint(int(a), int(b), (3 * (int(b) - int(a)),))
                     for a, b in zip(ptr[:-1], ptr[1:], strict=True)])
    dst = torch.cat([torch.randint(int(a), int(b), (3 * (int(b) - int(a)),))
                     for a, b in zip(ptr[:-1], ptr[1:], strict=True)])
    edge_index = torch.stack([src, dst])
    x = torch.randn(sum(sizes), channels, requires_grad=True)
    edge_attr = torch.randn(edge_index.size(1), channels)
    inner = nn.Sequential(nn.Linear(channels, channels), nn.ReLU(), nn.Linear(channels, channels))
    ref = GPSConv(channels, GINEConv(inner), heads=heads, norm=norm)
    ours = GPSLayer(channels, GINLayer(nn.Sequential(nn.Linear(channels, channels), nn.ReLU(),
                                                     nn.Linear(channels, channels))),
                    MultiheadGraphAttention(channels, heads), norm=norm)
    ours.load_state_dict(ref.state_dict())
    layout = graph_layout(ptr, max_buckets=max_buckets, bucket_overhead=0)
    assert len(layout.buckets) == max_buckets
    expected = ref(x, edge_index, batch, edge_attr=edge_attr)
    got = ours(x, edge_index, batch, edge_attr, layout).x
    assert torch.allclose(got, expected, atol=1e-5)
    grad = torch.randn_like(got)
    ref_grads = torch.autograd.grad(expected, [x, *ref.parameters()], grad)
    our_grads = torch.autograd.grad(got, [x, *ours.parameters()], grad)
    # the exact gradients: GPSConv in float64. Per-graph norms over graphs of 1 and 2 nodes
    # amplify float32 rounding (GraphNorm's mean_scale gradient is a sum that cancels, off by
    # ~1e-4 in GPSConv's own float32 run), so each of our float32 gradients is held to
    # GPSConv's float32 error, not to GPSConv's float32 values
    ref64 = copy.deepcopy(ref).double()
    x64 = x.detach().double().requires_grad_()
    exact = torch.autograd.grad(ref64(x64, edge_index, batch, edge_attr=edge_attr.double()),
                                [x64, *ref64.parameters()], grad.double())
    for a, b, e in zip(ref_grads, our_grads, exact, strict=True):
        theirs = (a.double() - e).abs().max().item()
        assert (b.double() - e).abs().max().item() <= 2 * theirs + 1e-5
        assert torch.allclose(a, b, atol=5e-4)


def test_attention_is_equivariant_to_the_order_of_graphs_and_nodes():
    torch.manual_seed(0)
    sizes = [6, 3, 8, 3]
    attn = MultiheadGraphAttention(8, 2).eval()
    x = torch.randn(sum(sizes), 8)
    out = attn(x, graph_layout(ptr_of(sizes), bucket_overhead=0))
    offsets = np.cumsum([0, *sizes])
    order = [3, 0, 2, 1]  # graphs reordered, and nodes permuted inside each graph
    perm = torch.cat([offsets[g] + torch.randperm(sizes[g]) for g in order])
    out2 = attn(x[perm], graph_layout(ptr_of([sizes[g] for g in order]), bucket_overhead=0))
    assert torch.allclose(out2, out[perm], atol=1e-6)


@pytest.mark.parametrize("max_buckets", [1, 3])
def test_pair_bias_enters_the_logits_with_its_gradient(max_buckets):
    """A bias per (pair, head) added to the attention logits: values and gradients (for qkv
    and for the bias) against the padded reference with a dense bias; pairs not listed (or
    listed twice: summed) behave as a dense bias says."""
    torch.manual_seed(1)
    sizes, heads = [4, 2, 5], 2
    batch = torch.repeat_interleave(torch.arange(3), torch.tensor(sizes))
    ptr = ptr_of(sizes)
    layout = graph_layout(ptr, max_buckets=max_buckets, bucket_overhead=0,
                          dtype=torch.float64)
    pairs = []
    for g, n in enumerate(sizes):
        o = int(ptr[g])
        pairs += [(o + i, o + j) for i in range(n) for j in range(n) if (i + j) % 3]
    pairs.append(pairs[0])  # a duplicate: its two biases add up
    pair_index = torch.tensor(pairs).t()
    qkv = torch.randn(sum(sizes), 3 * 6, dtype=torch.float64, requires_grad=True)
    bias = torch.randn(len(pairs), heads, dtype=torch.float64, requires_grad=True)
    slots = layout.pair_slots(pair_index, heads)
    got = _GraphAttentionCore.apply(qkv, bias, layout, heads, 0.0, slots)
    dense = torch.zeros(3, heads, 5, 5, dtype=torch.float64)
    local = torch.arange(sum(sizes)) - ptr[batch]
    g_of = batch[pair_index[0]]
    for p, (i, j) in enumerate(pairs):  # plain loop: the reference must be obvious
        dense = dense.clone()
        dense[g_of[p], :, local[i], local[j]] += bias[p]
    want = reference_attention(qkv, batch, heads, dense_bias=dense)
    assert torch.allclose(got, want, atol=1e-12)
    grad = torch.randn_like(got)
    g1 = torch.autograd.grad(got, [qkv, bias], grad)
    g2 = torch.autograd.grad(want, [qkv, bias], grad)
    for a, b in zip(g1, g2, strict=True):
        assert torch.allclose(a, b, atol=1e-12)
    assert torch.autograd.gradcheck(
        lambda t, w: _GraphAttentionCore.apply(t, w, layout, heads, 0.0, slots), (qkv, bias))
    with pytest.raises(ValueError, match="a pair of nodes from different graphs"):
        graph_layout(ptr).pair_slots(torch.tensor([[0], [5]]), heads)


def test_weight_dropout_backward_applies_the_forward_mask():
    torch.manual_seed(4)
    x = torch.randn(500, 4, dtype=torch.float64).abs_().add_(0.1).requires_grad_()
    y = weight_dropout(x, 0.3)
    mask = torch.where(y == 0, torch.zeros_like(x), torch.full_like(x, 1 / 0.7)).detach()
    assert torch.allclose(y, x * mask, rtol=1e-15, atol=0)  # kept weights are scaled exactly
    assert 0.2 < (mask == 0).double().mean().item() < 0.4
    grad = torch.randn_like(y)
    assert torch.equal(torch.autograd.grad(y, x, grad)[0], grad * mask)
    # reseeded at every evaluation, the mask is fixed and the Jacobian is diag(mask)
    assert torch.autograd.gradcheck(
        lambda t: (torch.manual_seed(0), weight_dropout(t, 0.3))[1], (x[:20].detach()
                                                                     .requires_grad_(),))
    assert weight_dropout(x, 0.3, training=False) is x
    assert weight_dropout(x, 0.0) is x


def _performer_reference(attn, x, ptr):
    """PerformerAttention's formula graph by graph and head by head in float64 numpy, with
    the module's own maps and feature directions: phi(x) = m^-1/2 (exp(W x' - |x'|^2 / 2 - s)
    + 1e-4), x' = d^-1/4 x, s a query's own largest W q' and, for keys, the largest over the
    graph's keys of that head; o = phi(q)^T sum phi(k) v^T / phi(q)^T sum phi(k)."""
    d, heads = attn.head_dim, attn.heads
    w = attn.projection_matrix.double().numpy()
    m = w.shape[0]

    def maps(layer):
        return (x.double() @ layer.weight.double().t() + layer.bias.double()).detach().numpy()

    q, k, v = maps(attn.to_q), maps(attn.to_k), maps(attn.to_v)
    out = np.zeros_like(q)
    for g in range(len(ptr) - 1):
        a, b = ptr[g], ptr[g + 1]
        for h in range(heads):
            cols = slice(h * d, (h + 1) * d)
            qs, ks, vs = q[a:b, cols] * d ** -0.25, k[a:b, cols] * d ** -0.25, v[a:b, cols]
            pq, pk = qs @ w.T, ks @ w.T
            fq = (np.exp(pq - (qs ** 2).sum(1, keepdims=True) / 2
                         - pq.max(1, keepdims=True)) + 1e-4) / np.sqrt(m)
            fk = (np.exp(pk - (ks ** 2).sum(1, keepdims=True) / 2 - pk.max()) + 1e-4) / np.sqrt(m)
            out[a:b, cols] = (fq @ (fk.T @ vs)) / (fq @ fk.sum(0))[:, None]
    return out @ attn.to_out.weight.double().detach().numpy().T + \
        attn.to_out.bias.double().detach().numpy()


def test_performer_attention_equals_its_formula_graph_by_graph():
    from graphpe.nn import PerformerAttention

    torch.manual_seed(0)
    attn = PerformerAttention(16, heads=2, num_features=12).double().eval()
    ptr = np.array([0, 5, 6, 14, 23])
    batch = torch.repeat_interleave(torch.arange(4), torch.from_numpy(np.diff(ptr)))
    x = torch.randn(23, 16, dtype=torch.float64) * 2
    out = attn(x, batch, 4)
    np.testing.assert_allclose(out.detach().numpy(), _performer_reference(attn, x, ptr),
                               rtol=1e-10, atol=1e-10)
    # a single graph takes the path without per-node copies of the sums: the same formula
    one = attn(x[6:14], torch.zeros(8, dtype=torch.long), 1)
    np.testing.assert_allclose(one.detach().numpy(),
                               _performer_reference(attn, x[6:14], np.array([0, 8])),
                               rtol=1e-10, atol=1e-10)
    # graphs do not see each other
    x2 = x.clone()
    x2[6:14] = torch.randn(8, 16, dtype=torch.float64)
    changed = attn(x2, batch, 4)
    torch.testing.assert_close(changed[:6], out[:6])
    torch.testing.assert_close(changed[14:], out[14:])


def test_performer_attention_estimates_softmax_attention():
    """With many random features the estimate approaches exact softmax attention, and it is
    closer than with few (the FAVOR+ estimator is unbiased for exp(q . k / sqrt d))."""
    from graphpe.nn import PerformerAttention

    torch.manual_seed(0)
    x = torch.randn(30, 8, dtype=torch.float64) * 0.5
    batch = torch.zeros(30, dtype=torch.long)
    errors = {}
    for m in (4, 4096):
        attn = PerformerAttention(8, heads=1, num_features=m).double().eval()
        q, k, v = attn.to_q(x), attn.to_k(x), attn.to_v(x)
        exact = attn.to_out(torch.softmax(q @ k.t() / np.sqrt(8), -1) @ v)
        approx = attn(x, batch, 1)
        errors[m] = ((approx - exact).norm() / exact.norm()).item()
    assert errors[4096] < 0.03 and errors[4096] < errors[4] / 3, errors


def test_performer_attention_redraws_its_features_in_training_only():
    from graphpe.nn import PerformerAttention

    torch.manual_seed(0)
    attn = PerformerAttention(8, heads=2, redraw_interval=3)
    x, batch = torch.randn(5, 8), torch.zeros(5, dtype=torch.long)
    first = attn.projection_matrix.clone()
    assert attn.num_features == int(4 * np.log(4))  # performer-pytorch's d ln d
    attn.eval()
    for _ in range(5):
        attn(x, batch, 1)
    assert torch.equal(attn.projection_matrix, first)
    attn.train()
    attn(x, batch, 1)
    attn(x, batch, 1)
    assert torch.equal(attn.projection_matrix, first)
    attn(x, batch, 1)  # the third training call draws again
    assert not torch.equal(attn.projection_matrix, first)
    # the directions: orthogonal within a block, Gaussian-sized rows
    from graphpe.layers.linear_attention import orthogonal_gaussian_features

    w = orthogonal_gaussian_features(8, 8, torch.Generator().manual_seed(0)).double()
    gram = w @ w.t()
    torch.testing.assert_close(gram - torch.diag(torch.diagonal(gram)),
                               torch.zeros(8, 8, dtype=torch.float64), atol=1e-5, rtol=0)
    with pytest.raises(ValueError, match="num_features must be a positive int, got 0"):
        PerformerAttention(8, num_features=0)
    with pytest.raises(ValueError, match="redraw_interval must be a non-negative int, got -1"):
        PerformerAttention(8, redraw_interval=-1)
    with pytest.raises(ValueError, match="channels=8 must be divisible by heads=3"):
        PerformerAttention(8, heads=3)
