"""Biaffine dependency parser (Dozat & Manning, 2017) with exact single-root decoding."""

from biaffine.openmp import default_wait_policy

__version__ = "0.1.0"

# Before any module of the package imports torch, whose OpenMP runtime reads it once at load.
default_wait_policy()
