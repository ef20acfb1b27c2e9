"""Provenance of a results file: which code, which config, which library versions, when.

The dict returned by :func:`provenance` goes, as JSON, into the footer of every Parquet file that
gradmc writes (see :mod:`gradmc.results.parquet`), and its short fields also become constant columns
of the table, so a row copied out of its file still says where it came from.
"""

from __future__ import annotations

import hashlib
import json
import platform
import subprocess
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import torch

import gradmc

__all__ = ["SCHEMA_VERSION", "provenance", "config_hash", "git_state"]

SCHEMA_VERSION = 1
"""Version of the provenance dict and of the results layout; bump when either changes incompatibly."""

_GIT_TIMEOUT_S = 10.0


def config_hash(config: dict) -> str:
    """Short, stable digest of a configuration.

    The config is serialised as canonical JSON (sorted keys, no whitespace, tuples as lists) and
    hashed with SHA-256; the first 16 hex characters (64 bits) are returned. Equal configs give equal
    hashes on every machine and Python version; any change of a key or value changes the hash.

    Raises:
        TypeError: if config holds a value JSON cannot represent (other than a Path, which is written
            as its string).
    """
    text = json.dumps(config, sort_keys=True, separators=(",", ":"), ensure_ascii=True, default=_json_default)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def _json_default(obj: object) -> object:
    if isinstance(obj, Path):
        return str(obj)
    raise TypeError(f"config value {obj!r} of type {type(obj).__name__} is not JSON-serialisable")


def _git(repo_dir: Path, *args: str) -> str | None:
    """stdout of ``git -C repo_dir *args``, or None if git is missing, fails or times out."""
    try:
        proc = subprocess.run(
            ["git", "-C", str(repo_dir), *args],
            capture_output=True,
            text=True,
            timeout=_GIT_TIMEOUT_S,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return proc.stdout if proc.returncode == 0 else None


def git_state(repo_dir: str | Path | None = None) -> tuple[str, bool]:
    """The commit checked out in ``repo_dir`` and whether tracked files differ from it.

    Args:
        repo_dir: any folder inside the work tree; default: the folder of the gradmc package, i.e.
            the code actually running.

    Returns:
        (commit, dirty): the full commit hash, or ``"unknown"`` when the folder is not in a git
        repository or git is missing; dirty is True when tracked files have uncommitted changes
        (untracked files are ignored, as in ``git describe --dirty``), False when clean or unknown.
        Never raises for git problems.
    """
    folder = Path(repo_dir) if repo_dir is not None else Path(gradmc.__file__).resolve().parent
    head = _git(folder, "rev-parse", "--verify", "HEAD")
    if head is None or not head.strip():
        return "unknown", False
    status = _git(folder, "status", "--porcelain", "--untracked-files=no")
    return head.strip(), bool(status and status.strip())


def provenance(config: dict, repo_dir: str | Path | None = None) -> dict[str, Any]:
    """Describe the code, config and environment that produce a results file.

    Args:
        config: the science configuration of the run (JSON-compatible dict).
        repo_dir: folder inside the git work tree to describe; default: the gradmc package's folder.

    Returns:
        dict with ``schema_version`` (int), ``git_commit`` (str, ``"unknown"`` outside git),
        ``git_dirty`` (bool), ``config_hash`` (16 hex chars, see :func:`config_hash`),
        ``package_version``, ``torch_version``, ``python_version`` (str), ``created_utc`` (ISO 8601,
        seconds, UTC) and ``config`` (the config itself, so a file describes its own run).

    Raises:
        TypeError: if config is not JSON-serialisable.
    """
    commit, dirty = git_state(repo_dir)
    return {
        "schema_version": SCHEMA_VERSION,
        "git_commit": commit,
        "git_dirty": dirty,
        "config_hash": config_hash(config),
        "package_version": gradmc.__version__,
        "torch_version": torch.__version__,
        "python_version": platform.python_version(),
        "created_utc": datetime.now(UTC).isoformat(timespec="seconds"),
        "config": json.loads(json.dumps(config, default=_json_default)),
    }
