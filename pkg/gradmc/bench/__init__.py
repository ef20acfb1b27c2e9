"""Benchmarks (``make bench``): sampler steps per second on fixed targets, written to JSON."""

__all__: list[str] = []
