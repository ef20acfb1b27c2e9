"""Out of memory inside a shard: recognise it and say which shard it was and how to make shards smaller.

A shard's memory grows with its sizes (chains x dimension x steps kept, samples x features, ...).
When it does not fit, torch raises ``torch.OutOfMemoryError`` (GPU caching allocator), a
``RuntimeError`` from its CPU allocator ("DefaultCPUAllocator: can't allocate memory"), and Python
or NumPy raise ``MemoryError``. :func:`run_guarded` turns all of them into
:class:`ShardOutOfMemoryError`, whose message names the shard's sizes and the fix, and which the
driver reports with the shard's index (:func:`gradmc.distributed.run_shards`). A shard that the
kernel's OOM killer (or Ray's memory monitor) kills never gets to raise: that is a worker death,
described on the driver (:func:`oom_hint` is appended there).
"""

from __future__ import annotations

import dataclasses
import socket
from collections.abc import Callable
from typing import Any

import torch

__all__ = ["ShardOutOfMemoryError", "is_out_of_memory", "oom_hint", "run_guarded", "shard_sizes"]

_CPU_ALLOCATOR_MESSAGES = ("can't allocate memory", "not enough memory", "out of memory")


class ShardOutOfMemoryError(MemoryError):
    """A shard ran out of host or GPU memory; the message names its sizes and how to lower them."""


def is_out_of_memory(err: BaseException) -> bool:
    """True for torch.OutOfMemoryError, MemoryError, and torch's CPU-allocator RuntimeError."""
    if isinstance(err, (MemoryError, torch.OutOfMemoryError)):
        return True
    return isinstance(err, RuntimeError) and any(text in str(err) for text in _CPU_ALLOCATOR_MESSAGES)


def shard_sizes(shard: Any) -> str:
    """The shard's scalar fields as ``name=value, ...`` (ints, floats, bools, short strings), or its repr.

    Sizes such as ``num_chains`` and ``dim`` are what decide a shard's memory; paths and tensors are
    left out. A field holding a dataclass (the shard of a part of a split shard) contributes its own sizes.
    """
    fields = getattr(shard, "__dataclass_fields__", None)
    if not fields:
        return repr(shard)
    parts = []
    for name in fields:
        value = getattr(shard, name)
        if dataclasses.is_dataclass(value) and not isinstance(value, type):
            parts.append(shard_sizes(value))
        elif isinstance(value, (bool, int, float)) or (isinstance(value, str) and len(value) <= 40
                                                     and not name.endswith("_path")):
            parts.append(f"{name}={value!r}")
    return ", ".join(parts) or repr(shard)


def oom_hint() -> str:
    """What to change in the config when a shard does not fit in memory."""
    return (
        "lower the chains per shard (e.g. num_chains, or trials/seeds per shard) or the problem size "
        "in the config, or split the work over more, smaller shards; on a GPU also give each shard a "
        "larger share of the device (a larger gpus_per_shard, so fewer shards share one GPU)"
    )


def run_guarded(fn: Callable[[Any], Any], shard: Any) -> Any:
    """``fn(shard)``, with out-of-memory errors re-raised as :class:`ShardOutOfMemoryError`.

    Raises:
        ShardOutOfMemoryError: if fn runs out of memory (see :func:`is_out_of_memory`); the message
            names fn, the host, the shard's sizes (:func:`shard_sizes`), the original error and the
            fix; the original error is chained as ``__cause__``. GPU caches are emptied first so the
            worker process can run its next shard.
        Exception: any other error of fn, unchanged.
    """
    try:
        return fn(shard)
    except (MemoryError, RuntimeError) as err:
        if not is_out_of_memory(err):
            raise
        original = f"{type(err).__name__}: {str(err).strip().splitlines()[0] if str(err).strip() else ''}"
        if torch.cuda.is_available() and torch.cuda.is_initialized():
            torch.cuda.empty_cache()
        name = getattr(fn, "__qualname__", repr(fn))
        raise ShardOutOfMemoryError(
            f"out of memory in {name} on {socket.gethostname()} ({original}) with shard sizes "
            f"{shard_sizes(shard)}: {oom_hint()}"
        ) from err
