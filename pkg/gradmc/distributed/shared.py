"""What the shards of a sweep share (a model, reference samples, a data set), loaded once per worker process:
every later shard on that Ray actor (or reused task worker) gets the object :func:`load_once` already holds.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable
from typing import Any, TypeVar

__all__ = ["MAX_ENTRIES", "clear", "load_once", "loads"]

T = TypeVar("T")

MAX_ENTRIES = 8  # most objects kept per process (least recently used out first)


def _stamp(value: Any) -> Any:
    """(path, size, mtime_ns) for an argument that names a file, else the value itself."""
    if isinstance(value, (str, os.PathLike)):
        try:
            st = os.stat(value)
        except (OSError, ValueError):
            return value
        return (os.path.abspath(value), st.st_size, st.st_mtime_ns)
    return value


@functools.lru_cache(maxsize=MAX_ENTRIES)
def _load(loader: Callable[..., Any], args: tuple, stamps: tuple) -> Any:
    return loader(*args)  # stamps only key the cache: a rewritten file is another entry


def load_once(loader: Callable[..., T], *args: Any) -> T:
    """``loader(*args)``, computed once per process for the same loader and arguments, and, for an argument that
    names a file, its size and modification time (a rewritten file is loaded again).

    Args:
        loader: a module-level function.
        args: hashable arguments (paths, device names, split names).

    Returns:
        The loaded object, shared with every other caller in this process: read it, never modify it.

    Raises:
        Whatever ``loader`` raises (nothing is remembered then).
    """
    return _load(loader, args, tuple(_stamp(a) for a in args))


def loads() -> int:
    """How many times :func:`load_once` has called a loader in this process since the last :func:`clear`."""
    return _load.cache_info().misses


def clear() -> None:
    """Forget every object loaded in this process."""
    _load.cache_clear()
