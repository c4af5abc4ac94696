"""Network building blocks with no parser knowledge, and the shared sentence encoder."""

from biaffine.nn.encoder import ENCODERS, Encoder, build_encoder
from biaffine.nn.pretrained import PretrainedEmbedding, read_vectors
from biaffine.nn.transformer import TransformerEmbedding, TransformerEncoder

__all__ = [
    "ENCODERS",
    "Encoder",
    "PretrainedEmbedding",
    "TransformerEmbedding",
    "TransformerEncoder",
    "build_encoder",
    "read_vectors",
]
