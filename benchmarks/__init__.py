"""Measurements of the Brain OS stack on the machine it runs on (see benchmarks.stack)."""
