"""The layers graphpe's encoders and models are made of: message passing (GIN, GINE, GatedGCN,
PEG's gates), attention over each graph's nodes (multi-head by size buckets, linear,
Performer, GRIT, Graphormer, and SGFormer's and Polynormer's linear-time attentions with
SGFormer's two branches), the GPS layer over the message-passing and attention modules it
is given, the encoders every encoding builds on (linear, pairwise, GIN on channel signals), the
GPSE network, and the fused CPU forms of the GPS and GINE layers.

They know nothing of the encodings: :mod:`graphpe.nn` exports them with every encoding's
encoder and the models.
"""
