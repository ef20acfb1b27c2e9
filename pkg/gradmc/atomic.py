"""Atomic file output: write to a temporary sibling, fsync, then rename into place.

An interrupted or failed writer never leaves a half-written file at the final path, so a later run
(or Snakemake) never trusts a truncated result.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

from gradmc.errors import OutputError

__all__ = ["atomic_path"]


@contextlib.contextmanager
def atomic_path(path: str | Path) -> Iterator[Path]:
    """Yield a temporary path next to ``path``; on success fsync it and rename it to ``path``.

    The temporary file is ``.<name>.<random>.tmp`` in the same directory (same file system, so the
    rename is atomic). On any exception it is removed and ``path`` is left untouched. Parent
    directories are created. The result gets the mode a plain ``open(path, "w")`` would give it
    (``0o666`` less the umask), not the owner-only ``0o600`` of ``tempfile.mkstemp``.

    Raises:
        gradmc.errors.OutputError: (an OSError) the folder of ``path`` cannot be created or written (before
            the block runs); the message names ``path`` and the reason. Errors inside the block, and of the
            final fsync/rename, propagate unchanged.
    """
    path = Path(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    except OSError as err:
        raise OutputError(f"cannot write {path}: {err.strerror} ({err.filename}); choose an output path in a "
                          "writable folder") from err
    os.close(fd)
    tmp = Path(tmp_name)
    try:
        yield tmp
        os.chmod(tmp, 0o666 & ~_umask())
        with open(tmp, "rb+") as fh:
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    _fsync_dir(path.parent)


def _umask() -> int:
    """The process umask, read without changing it where possible.

    Linux (4.7+) reports it in ``/proc/self/status`` (``Umask:`` line); elsewhere it is read by
    setting and restoring it (``os.umask``), which is racy with threads creating files at that
    instant; 0o022 if neither works.
    """
    try:
        with open("/proc/self/status", encoding="ascii", errors="replace") as fh:
            for line in fh:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    try:
        old = os.umask(0o022)
        os.umask(old)
        return old
    except OSError:  # pragma: no cover - os.umask does not fail on POSIX
        return 0o022


def _fsync_dir(folder: Path) -> None:
    """Persist the rename; best effort (some file systems refuse fsync on directories)."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
