"""Process-level performance settings of gradmc's compute processes.

:func:`tune_allocator` keeps glibc's malloc from handing freed memory back to the operating system between
sampler steps. Kernels such as HB-10-1 on the RBM allocate (C, 11, H) temporaries of a few MB every step;
with glibc's defaults those come from fresh ``mmap`` pages (or a trimmed heap) and every page faults in
again, which made HB-10-1 about 40% slower (247 against 427 steps/s in ``make bench``). It sets
``M_MMAP_THRESHOLD`` and ``M_TRIM_THRESHOLD`` to 256 MiB, the same as
``GLIBC_TUNABLES=glibc.malloc.mmap_threshold=268435456:glibc.malloc.trim_threshold=268435456``. The cost:
a process may keep up to 256 MiB of freed memory (per arena) instead of returning it.

Called by the ``gradmc`` CLI and by every Ray shard before it runs; a library user calls it if wanted.
Nothing happens off glibc (macOS, musl), or when ``GRADMC_MALLOC_TUNING=0``.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os

__all__ = ["MALLOC_THRESHOLD", "tune_allocator"]

#: bytes, for both M_MMAP_THRESHOLD and M_TRIM_THRESHOLD
MALLOC_THRESHOLD = 256 * 2**20
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3  # glibc's mallopt parameter numbers (malloc.h)
_applied: bool | None = None


def tune_allocator() -> bool:
    """Apply the malloc thresholds once per process; returns whether they are in effect.

    False (and nothing changed) when ``GRADMC_MALLOC_TUNING`` is "0", or the C library is not glibc.
    """
    global _applied
    if os.environ.get("GRADMC_MALLOC_TUNING", "1") == "0":
        return False
    if _applied is None:
        name = ctypes.util.find_library("c")
        try:
            libc = ctypes.CDLL(name) if name else None
            mallopt = getattr(libc, "mallopt", None) if libc is not None else None
            gnu = getattr(libc, "gnu_get_libc_version", None) if libc is not None else None
        except OSError:
            mallopt = gnu = None
        _applied = bool(mallopt is not None and gnu is not None
                        and mallopt(_M_MMAP_THRESHOLD, MALLOC_THRESHOLD) == 1
                        and mallopt(_M_TRIM_THRESHOLD, MALLOC_THRESHOLD) == 1)
    return _applied
