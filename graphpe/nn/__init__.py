"""``torch.nn`` modules: PE encoders and models."""

from graphpe.nn.rfp import LearnedRFP, RFPEncoder

__all__ = ["LearnedRFP", "RFPEncoder"]
