"""Runnable examples; run each from the repository root as ``python -m examples.NAME``."""
