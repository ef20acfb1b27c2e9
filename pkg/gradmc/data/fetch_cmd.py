"""``gradmc data fetch`` and ``gradmc data list``: the data registry from the command line (and for the
pipeline's fetch rules, which call ``gradmc data fetch <file>``)."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from pathlib import Path

from gradmc.data import catalog
from gradmc.data.download import fetch
from gradmc.data.registry import data_dir
from gradmc.errors import DataError, DownloadError, MissingDataError

__all__ = ["fetch_files", "list_datasets"]


def fetch_files(
    names: list[str],
    *,
    config: Mapping | None = None,
    folder: str | os.PathLike | None = None,
    base_url: str | None = None,
    progress: Callable[[str], object] = print,
) -> list[Path]:
    """Fetch (download if missing, verify if present) the files of ``names`` and of ``config``'s pipeline.

    Args:
        names: data set names, registry file names, or ``all`` (see :mod:`gradmc.data.catalog`).
        config: a validated config; adds every file its pipeline reads (:func:`catalog.config_files`).
        folder: the data folder (default ``$GRADMC_DATA_DIR``, else the user cache).
        base_url: mirror (default ``$GRADMC_DATA_BASE_URL``, else each file's own addresses).
        progress: receives one line per file and per download attempt.

    Returns:
        The verified local paths, in order.

    Every file is tried; failures are reported together at the end (files fetched meanwhile stay: they
    are verified).

    Raises:
        gradmc.errors.InputError: an unknown name (before anything is fetched).
        gradmc.errors.DataError: (a ValueError) some file failed verification (present or downloaded); the
            message lists every failure.
        gradmc.errors.MissingDataError: (a FileNotFoundError) every failure is a missing file with no
            public URL.
        gradmc.errors.DownloadError: (a ConnectionError) otherwise, some file could not be downloaded (or
            written); the message lists each failed file with the addresses tried and where to place it by
            hand.
    """
    folder = Path(folder) if folder is not None else data_dir()
    remotes = catalog.resolve_names(names, folder)
    if config is not None:
        remotes += [r for r in catalog.config_files(config, folder) if r not in remotes]
    progress(f"[data] data folder {folder}: {len(remotes)} file(s)")
    paths, failed = [], []
    for i, remote in enumerate(remotes, 1):
        present = (folder / remote.relpath).exists()
        try:
            path = fetch(remote, folder, allow_download=True, base_url=base_url, progress=progress)
        except (OSError, ValueError) as err:  # go on with the other files, then report every failure
            failed.append((remote, err))
            progress(f"[data] {i}/{len(remotes)} {remote.name}: FAILED ({err})")
            continue
        checked = remote.sha256 or remote.decoded_sha256 or remote.content_sha256
        state = ("verified" if checked else "present (no registered digest: not verified)") if present else \
            "downloaded"
        progress(f"[data] {i}/{len(remotes)} {remote.name}: {state}, {path} ({path.stat().st_size} bytes)")
        paths.append(path)
    if failed:
        summary = "\n".join(f"- {r.name} ({r.relpath}): {err}" for r, err in failed)
        text = f"{len(failed)} of {len(remotes)} data file(s) could not be fetched into {folder}:\n{summary}"
        # A verification failure is a ValueError that is no OSError: the family's missing-file, folder and
        # download classes (MissingDataError, DataFolderError, DownloadError) are ValueErrors and OSErrors.
        if any(isinstance(e, ValueError) and not isinstance(e, OSError) for _, e in failed):
            raise DataError(text)
        if all(isinstance(e, FileNotFoundError) for _, e in failed):
            raise MissingDataError(text)
        raise DownloadError(text)
    return paths


def list_datasets(folder: str | os.PathLike | None = None, out: Callable[[str], object] = print) -> None:
    """Print each data set with its files, their addresses, and whether each is in the data folder."""
    folder = Path(folder) if folder is not None else data_dir()
    out(f"data folder: {folder}  (GRADMC_DATA_DIR; downloads: gradmc data fetch NAME)")
    reg = catalog._registry()
    for ds in catalog.DATASETS.values():
        out(f"{ds.name}: {ds.description}")
        for name in ds.files + ds.alternatives:
            remote = reg[name]
            here = "present" if (folder / remote.relpath).exists() else "missing"
            alt = " (accepted instead)" if name in ds.alternatives else ""
            where = remote.url or "no public URL"
            if len(remote.urls) > 1:
                where += f" (+{len(remote.urls) - 1} fallback)"
            out(f"    {remote.relpath:<48} {here:<8} {where}{alt}")
