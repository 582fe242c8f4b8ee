import pytest
import torch
from torch_geometric.data import Batch

from graphpe.nn import LearnedRFP, RFPEncoder
from graphpe.transforms import RFP


def test_encoder_invariant_to_draw_order_and_sign(families):
    batch = RFP(dim=4, steps=2, num_draws=5, seed=0)(Batch.from_data_list(list(families.values())))
    enc = RFPEncoder(8, dim=4, steps=2, readout="trajectory", sign_invariant=True)
    out = enc(batch)
    assert out.shape == (batch.num_nodes, 8)
    perm = torch.randperm(5)
    assert torch.allclose(enc(batch.rfp[:, perm]), out, atol=1e-5)
    flipped = batch.rfp.clone()
    flipped[:, 2] *= -1
    assert torch.allclose(enc(flipped), out, atol=1e-5)
    plain = RFPEncoder(8, dim=4, steps=2, readout="trajectory", pooling="mean")
    assert torch.allclose(plain(batch.rfp[:, perm]), plain(batch.rfp), atol=1e-5)
    with pytest.raises(ValueError, match="expected RFP features"):
        enc(torch.randn(3, 2, 7))
    with pytest.raises(ValueError, match="pooling must be one of"):
        RFPEncoder(8, dim=4, steps=2, pooling="max")


def test_learned_rfp_gradients_and_policies(families):
    batch = Batch.from_data_list(list(families.values()))
    h = torch.randn(batch.num_nodes, 6)
    model = LearnedRFP(6, dim=4, steps=3, num_draws=2, resample="fixed")
    enc = RFPEncoder(5, dim=4, steps=3, readout="trajectory")
    assert enc.in_dim == model.out_dim
    out = enc(model(h, batch.edge_index, batch.ptr))
    assert out.shape == (batch.num_nodes, 5)
    out.pow(2).sum().backward()
    for name, p in list(model.named_parameters()) + list(enc.named_parameters()):
        assert p.grad is not None and p.grad.abs().sum() > 0, name
    with torch.no_grad():
        a = model(h, batch.edge_index, batch.ptr)
        b = model(h, batch.edge_index, batch.ptr)
    assert torch.equal(a, b)  # fixed draws
    epoch = LearnedRFP(6, dim=4, steps=2, resample="epoch")
    with torch.no_grad():
        e0 = epoch(h, batch.edge_index, batch.ptr)
        assert torch.equal(e0, epoch(h, batch.edge_index, batch.ptr))
        epoch.next_epoch()
        assert not torch.equal(e0, epoch(h, batch.edge_index, batch.ptr))
    fresh = LearnedRFP(6, dim=4, steps=2)
    with torch.no_grad():
        assert not torch.equal(fresh(h, batch.edge_index), fresh(h, batch.edge_index))
    with pytest.raises(ValueError, match="resample must be one of"):
        LearnedRFP(6, resample="batch")


def test_gram_readout_is_rotation_and_draw_invariant(families):
    """Rotating a draw's features (X -> X Q, Q orthogonal) leaves the gram readout unchanged;
    the readout scales by graph size, so a Batch equals each graph alone."""
    graphs = list(families.values())
    batch = RFP(dim=4, steps=2, num_draws=3, normalization="l2", seed=0)(
        Batch.from_data_list(graphs))
    enc = RFPEncoder(8, dim=4, steps=2)  # the gram readout: the default
    out = enc(batch)
    assert out.shape == (batch.num_nodes, 8)
    q, _ = torch.linalg.qr(torch.randn(4, 4, dtype=torch.float64))
    rotated = batch.clone()
    rotated.rfp = (batch.rfp.double().view(batch.num_nodes, 3, 3, 4) @ q).view(
        batch.num_nodes, 3, 12).float()
    assert torch.allclose(enc(rotated), out, atol=1e-4)
    for lo, hi in zip(batch.ptr[:-1].tolist(), batch.ptr[1:].tolist(), strict=True):
        assert torch.allclose(enc(batch.rfp[lo:hi]), out[lo:hi], atol=1e-5)
    x = batch.rfp[: batch.ptr[1]].view(-1, 3, 3, 4)
    n = int(batch.ptr[1])
    g00 = (x[:, :, 0] * x[:, :, 0]).sum(-1) * n / 4
    assert torch.allclose(enc.gram(batch.rfp[:n])[..., 0], g00, atol=1e-5)
    with pytest.raises(ValueError, match="readout must be one of"):
        RFPEncoder(8, readout="dot")
    with pytest.raises(ValueError, match="^steps must be a non-negative int, got -1$"):
        RFPEncoder(8, steps=-1)


def test_encoder_defaults_are_the_transforms_and_the_registrys():
    from graphpe.encodings import pe_spec

    transform, encoder = RFP(), RFPEncoder(8)
    assert encoder.in_dim == transform.dim * (transform.steps + 1)
    assert (encoder.dim, encoder.steps, encoder.readout) == (transform.dim, transform.steps,
                                                             "gram")
    spec = pe_spec("rfp")
    assert spec.transform().settings() == transform.settings()
    assert repr(spec.encoder(8)) == repr(encoder)
    with pytest.raises(TypeError):  # the old (in_dim, channels) form: refused, not misread
        RFPEncoder(144, 8)
