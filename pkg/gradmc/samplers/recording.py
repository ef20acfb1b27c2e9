"""Which samplers a block of code builds by name: the run-time check behind per-shard cache keys.

:func:`gradmc.samplers.discrete.registry.make_sampler` reports every name it is called with to
:func:`note`; :func:`recording_samplers` collects them for a block. The shard runner
(:func:`gradmc.distributed.memory_split.run_unit`) compares what a shard built with what its experiment
declares (``shard_samplers``) and raises :class:`UndeclaredSamplerError` on a difference, so no shard is
cached under a key that misses a sampler's code. This module imports no sampler, so the runner's own code
digest does not depend on every sampler.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["UndeclaredSamplerError", "note", "recording_samplers"]


class UndeclaredSamplerError(RuntimeError):
    """A shard built a sampler that its experiment's ``shard_samplers(shard)`` does not name: its cached rows would
    outlive an edit to that sampler. The message names the experiment, the shard's samplers and the declared ones."""


_recording: list[set[str]] = []


def note(name: str) -> None:
    """Record that the sampler ``name`` was built (in every open :func:`recording_samplers` block)."""
    for built in _recording:
        built.add(name)


@contextmanager
def recording_samplers() -> Iterator[set[str]]:
    """Collect the sampler names built inside the block (nested blocks each see them):
    ``with recording_samplers() as built: ...``."""
    built: set[str] = set()
    _recording.append(built)
    try:
        yield built
    finally:
        _recording.remove(built)
