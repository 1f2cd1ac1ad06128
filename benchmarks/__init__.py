"""Benchmarks: runnable measurements of Palimpsest against simpler baselines (`python -m benchmarks.<name>`)."""
