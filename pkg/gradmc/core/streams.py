"""Random streams per fixed block of chains, so that how chains are grouped into shards cannot change a result.

A kernel step draws its randomness for all C chains at once (``torch.rand((C, ...), generator=g)``), so
with one generator per shard, chain c's draws depend on how many chains share the batch: splitting a
shard's chains over two shards would change every chain after the split point. :class:`ChainStreams`
gives each fixed block of chains its own ``torch.Generator``: a draw of shape (C, ...) is the
concatenation along dim 0 of each block's own draw of shape (block size, ...). Chain c's random numbers
then depend only on its block's seed and on the sequence of draws, so a shard holding blocks 0-3 and two
shards holding blocks 0-1 and 2-3 produce the same chains (the memory-aware split of
:mod:`gradmc.distributed.memory_split` relies on this).

Every discrete kernel draws through :func:`rand`, :func:`randint`, :func:`random_words` and :func:`bernoulli`.
Given a plain ``torch.Generator`` they make exactly the torch call they replace (same stream, same values), so nothing
changes for callers that do not use blocks.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

__all__ = ["ChainStreams", "Randomness", "bernoulli", "rand", "randint", "random_words"]


class ChainStreams:
    """One ``torch.Generator`` per block of consecutive chains (chains first in every drawn tensor).

    Args:
        generators: the blocks' generators, in chain order, all on one device.
        sizes: the blocks' chain counts (positive ints), one per generator.

    Raises:
        ValueError: no generators, a count that is not positive, lengths that differ, or generators on
            different devices.
    """

    def __init__(self, generators: Sequence[torch.Generator], sizes: Sequence[int]):
        generators, sizes = list(generators), [int(n) for n in sizes]
        if not generators or len(generators) != len(sizes):
            raise ValueError(f"ChainStreams needs one chain count per generator, got {len(generators)} generators "
                             f"and {len(sizes)} counts")
        if any(n < 1 for n in sizes):
            raise ValueError(f"every block needs at least one chain, got counts {sizes}")
        if len({str(g.device) for g in generators}) != 1:
            raise ValueError(f"all generators must be on one device, got {sorted({str(g.device) for g in generators})}")
        self.generators = generators
        self.sizes = sizes

    @property
    def num_chains(self) -> int:
        """Total chains C over all blocks."""
        return sum(self.sizes)

    @property
    def device(self) -> torch.device:
        """The generators' device."""
        return self.generators[0].device

    def _check(self, rows: int, what: str) -> None:
        if rows != self.num_chains:
            raise ValueError(f"{what}: a draw for {rows} chains from streams of {self.num_chains} chains "
                             f"(blocks {self.sizes}); chains must be the first dimension")

    def __repr__(self) -> str:
        return f"ChainStreams(blocks={self.sizes})"


Randomness = torch.Generator | ChainStreams
"""What a kernel accepts as its source of randomness."""


def _blocks(gen: ChainStreams):
    start = 0
    for g, n in zip(gen.generators, gen.sizes, strict=True):
        yield g, start, start + n
        start += n


def rand(shape: Sequence[int], generator: Randomness, *, device=None, dtype=None) -> torch.Tensor:
    """Uniform [0, 1) draws of ``shape`` (chains first when ``generator`` is a :class:`ChainStreams`).

    Raises:
        ValueError: ``shape[0]`` is not the streams' chain count.
    """
    shape = tuple(shape)
    if not isinstance(generator, ChainStreams):
        return torch.rand(shape, generator=generator, device=device, dtype=dtype)
    generator._check(shape[0] if shape else 0, "rand")
    return torch.cat([torch.rand((b - a, *shape[1:]), generator=g, device=device, dtype=dtype)
                      for g, a, b in _blocks(generator)])


def randint(high: int, shape: Sequence[int], generator: Randomness, *, device=None) -> torch.Tensor:
    """Integers uniform in [0, high) of ``shape`` (int64; chains first for :class:`ChainStreams`).

    Raises:
        ValueError: ``shape[0]`` is not the streams' chain count.
    """
    shape = tuple(shape)
    if not isinstance(generator, ChainStreams):
        return torch.randint(high, shape, generator=generator, device=device)
    generator._check(shape[0] if shape else 0, "randint")
    return torch.cat([torch.randint(high, (b - a, *shape[1:]), generator=g, device=device)
                      for g, a, b in _blocks(generator)])


def _bernoulli(p: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
    """u < p with u uniform in float64 (2^-53 grid): the law of ``torch.bernoulli(p)``, 3x faster on CPU
    (RBM 100 x 784: 0.54 against 1.53 ms on one thread)."""
    lo, hi = torch.aminmax(p) if p.numel() else (p.new_zeros(()), p.new_zeros(()))
    if not (bool(lo >= 0) and bool(hi <= 1)):  # NaN fails both
        raise RuntimeError(f"Bernoulli probabilities must lie in [0, 1], got min {float(lo)}, max {float(hi)}")
    u = torch.rand(p.shape, generator=generator, dtype=torch.float64, device=p.device)
    return (u < p).to(p.dtype)


def _words(shape: tuple, generator: torch.Generator, device) -> torch.Tensor:
    pairs = torch.empty((*shape[:-1], (shape[-1] + 1) // 2), dtype=torch.int64, device=device)
    pairs.random_(-(2 ** 63), None, generator=generator)  # the full int64 range: 64 random bits each
    return pairs.view(torch.int32)[..., :shape[-1]]


def random_words(shape: Sequence[int], generator: Randomness, *, device=None) -> torch.Tensor:
    """int32 tensor of ``shape`` (at least 1-d), every entry 32 independent uniform random bits (chains first for
    :class:`ChainStreams`): full-range int64 draws of half the last dimension (rounded up), viewed as int32 pairs
    (on the CPU about half the cost of ``rand`` per entry). A view into the draw, not contiguous for an odd
    last dimension.

    Raises:
        ValueError: ``shape[0]`` is not the streams' chain count.
    """
    shape = tuple(shape)
    if not isinstance(generator, ChainStreams):
        return _words(shape, generator, device)
    generator._check(shape[0] if shape else 0, "random_words")
    return torch.cat([_words((b - a, *shape[1:]), g, device) for g, a, b in _blocks(generator)])


def bernoulli(p: torch.Tensor, generator: Randomness) -> torch.Tensor:
    """Bernoulli(p) draws, elementwise, shape and dtype of ``p`` (chains first for :class:`ChainStreams`).

    Raises:
        ValueError: ``p.shape[0]`` is not the streams' chain count.
        RuntimeError: an entry of p outside [0, 1] or NaN (as ``torch.bernoulli`` raises).
    """
    if not isinstance(generator, ChainStreams):
        return _bernoulli(p, generator)
    generator._check(p.shape[0] if p.dim() else 0, "bernoulli")
    return torch.cat([_bernoulli(p[a:b], g) for g, a, b in _blocks(generator)])
