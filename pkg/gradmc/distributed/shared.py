"""What the shards of a sweep share (a model, reference samples, a data set), loaded once per worker process.

A shard's ``run`` loads its inputs from the paths it carries. Called through :func:`load_once`, the loader
runs once per process for the same arguments and the same file contents: every later shard on that Ray
actor (or reused task worker) gets the object already in memory. The key includes the size and
modification time of every argument that names a file, so a rewritten file is loaded again. Callers must
treat what they get as read-only (it is shared with the next shard). The memo is a ``functools.lru_cache``.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable
from typing import Any, TypeVar

__all__ = ["MAX_ENTRIES", "clear", "load_once", "loads"]

T = TypeVar("T")

MAX_ENTRIES = 8
"""Most objects kept per process (least recently used first out), so a long sweep over many inputs does not
hold them all."""


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
    """``loader(*args)``, computed once per process for the same loader, arguments and file contents.

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
