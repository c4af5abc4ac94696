"""Biaffine dependency parser (Dozat & Manning, 2017) with exact single-root decoding."""

__version__ = "0.1.0"
