"""Network building blocks with no parser knowledge, and the shared sentence encoder."""

from biaffine.nn.encoder import ENCODERS, Encoder, build_encoder

__all__ = ["ENCODERS", "Encoder", "build_encoder"]
