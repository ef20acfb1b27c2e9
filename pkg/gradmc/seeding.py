"""Deterministic seeds and generators derived from names (benchopt style).

Every shard's random stream is seeded from a hash of its identity, so reruns are reproducible and
independent shards never share a stream.
"""

from __future__ import annotations

import hashlib

import torch

__all__ = ["seed_from", "make_generator"]


def seed_from(*parts: object) -> int:
    """Return a 63-bit seed from the ``repr`` of ``parts`` (order matters).

    Example: ``seed_from("rbm_sampling", "GWG", 3)``. Stable across processes and machines
    (SHA-256, not Python's salted ``hash``).
    """
    digest = hashlib.sha256(repr(parts).encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "little") & ((1 << 63) - 1)


def make_generator(seed: int, device: str | torch.device = "cpu") -> torch.Generator:
    """A ``torch.Generator`` on ``device`` seeded with ``seed`` (an int in [0, 2**63))."""
    if not isinstance(seed, int) or seed < 0:
        raise ValueError(f"seed must be a non-negative int, got {seed!r}")
    gen = torch.Generator(device=torch.device(device))
    gen.manual_seed(seed)
    return gen
