"""Find a registered data file in the data folder, or download it with checksum verification.

A file at its final path has always been verified: downloads go to a temporary file in the same
folder (``gradmc.atomic.atomic_path``), are checked (size when known, sha256) and only then renamed
into place.
"""

from __future__ import annotations

import gzip
import hashlib
import http.client
import os
import urllib.parse
import urllib.request
import zlib
from collections.abc import Callable
from pathlib import Path

from gradmc.atomic import atomic_path
from gradmc.data import registry as _registry
from gradmc.data.registry import RemoteFile

__all__ = ["fetch", "resolve_url", "sha256_file", "missing_file_message", "BASE_URL_ENV"]

BASE_URL_ENV = "GRADMC_DATA_BASE_URL"
_CHUNK = 1 << 20
_SCHEMES = ("http", "https", "file")


def sha256_file(path: str | os.PathLike, *, gunzip: bool = False) -> str:
    """Hex sha256 of a file's bytes (of its decompressed bytes when ``gunzip``), read in 1 MiB chunks.

    Raises:
        OSError, EOFError, zlib.error: unreadable file or, with ``gunzip``, a broken gzip stream.
    """
    h = hashlib.sha256()
    with gzip.open(path, "rb") if gunzip else open(path, "rb") as f:
        while chunk := f.read(_CHUNK):
            h.update(chunk)
    return h.hexdigest()


def resolve_url(remote: RemoteFile, base_url: str | None = None) -> str | None:
    """Download address: ``{base_url}/{relpath}`` when ``base_url`` (else ``$GRADMC_DATA_BASE_URL``) is
    set, else the canonical ``remote.url`` (None when the file has no public home)."""
    base = base_url or os.environ.get(BASE_URL_ENV)
    if base:
        return f"{base.rstrip('/')}/{remote.relpath}"
    return remote.url


def missing_file_message(remote: RemoteFile, folder: Path, url: str | None) -> str:
    """The FileNotFoundError text for ``remote`` missing from ``folder``: what, where, how to get it.

    Names the full expected path (``folder / remote.relpath``, e.g. ``data/mnist/<file>``), not just the
    folder, since canonical files may live in subfolders of the data folder.
    """
    if url:
        how = f"add --download to fetch it (checksummed) from {url}, or place the file there"
    else:
        how = "it has no public URL: make it with `gradmc data prepare`, or place the file there"
    return (
        f"{remote.filename} not found at {folder / remote.relpath} (data folder {folder}; set "
        f"GRADMC_DATA_DIR to change it): {how}"
    )


def _sidecar(path: Path) -> Path:
    return path.with_name(path.name + ".sha256")


def _expected_digest(remote: RemoteFile, path: Path) -> str | None:
    if remote.sha256 is not None:
        return remote.sha256.lower()
    side = _sidecar(path)
    recorded = side.read_text().split()[:1] if side.exists() else []
    return recorded[0].lower() if recorded else None


def _verify(remote: RemoteFile, path: Path, actual: str, expected: str | None, origin: str) -> None:
    """Raise ValueError unless ``path`` (whose sha256 is ``actual``) is the registered file."""
    size = path.stat().st_size
    if expected is None:
        if remote.size is None or size == remote.size:
            return
    elif actual == expected:
        return
    if remote.content_sha256 is not None:
        try:
            if sha256_file(path, gunzip=True) == remote.content_sha256:
                return
        except (OSError, EOFError, zlib.error):  # truncated or not gzip: a mismatch, reported below
            pass
    size_note = f"; size {size} bytes, expected {remote.size}" if remote.size not in (None, size) else ""
    raise ValueError(
        f"{remote.filename} ({origin}) failed verification: expected sha256 {expected or 'unknown'}, "
        f"actual {actual}{size_note}"
    )


def _download(url: str, dest: Path, timeout: float) -> str:
    """Stream ``url`` into the file ``dest``; return the sha256 of what was written."""
    scheme = urllib.parse.urlsplit(url).scheme
    if scheme not in _SCHEMES:
        raise ValueError(f"refusing to download {url!r}: scheme must be one of {_SCHEMES}")
    h = hashlib.sha256()
    request = urllib.request.Request(url, headers={"User-Agent": "gradmc"})
    with open(dest, "wb") as out, urllib.request.urlopen(request, timeout=timeout) as resp:
        try:
            while chunk := resp.read(_CHUNK):
                h.update(chunk)
                out.write(chunk)
        except http.client.IncompleteRead as err:
            raise ValueError(f"download of {url} was cut short: {err}") from err
    return h.hexdigest()


def fetch(
    remote: RemoteFile,
    data_dir: str | os.PathLike | None = None,
    *,
    allow_download: bool = True,
    base_url: str | None = None,
    timeout: float = 60,
    progress: Callable[[str], object] | None = print,
) -> Path:
    """Return the verified local path of ``remote`` under the data folder, downloading it if needed.

    Args:
        remote: the registry entry.
        data_dir: data folder (default ``data_dir()``: ``$GRADMC_DATA_DIR`` or ``data``).
        allow_download: when False a missing file raises instead of being downloaded.
        base_url: mirror to download from, as ``{base_url}/{relpath}`` (default ``$GRADMC_DATA_BASE_URL``,
            else the canonical ``remote.url``).
        timeout: socket timeout in seconds.
        progress: called with one-line status messages (None: silent).

    Returns:
        ``Path(data_dir) / remote.relpath``, whose sha256 matches the registry (or, when the registry
        has no digest, the digest recorded at first download in ``<file>.sha256``, printed then).

    Raises:
        ValueError: an existing file, or a download, fails verification (truncated, wrong sha256); the
            message names the file and both digests. Nothing is left at the final path.
        FileNotFoundError: the file is missing and ``allow_download`` is False or no URL is known; the
            message names the file, its full expected path and how to get it.
        OSError: the download itself failed (unreachable host, HTTP error).
    """
    say = progress or (lambda _msg: None)
    folder = _registry.data_dir() if data_dir is None else Path(data_dir)
    path = folder / remote.relpath
    url = resolve_url(remote, base_url)
    if path.exists():
        expected = _expected_digest(remote, path)
        try:
            _verify(remote, path, sha256_file(path), expected, "existing file")
        except ValueError as err:
            raise ValueError(
                f"{path} exists but is not the registered file: {err}. It was neither used nor "
                "overwritten: delete it to download a fresh copy, or check where it came from."
            ) from None
        return path
    if not allow_download or url is None:
        raise FileNotFoundError(missing_file_message(remote, folder, url))
    say(f"downloading {remote.filename} from {url}")
    with atomic_path(path) as tmp:  # verified before the rename; removed on any error
        actual = _download(url, tmp, timeout)
        _verify(remote, tmp, actual, remote.sha256, f"downloaded from {url}")
    if remote.sha256 is None:
        say(f"{remote.filename}: no registered sha256; recorded {actual} in {_sidecar(path).name}")
        try:
            _sidecar(path).write_text(f"{actual}  {remote.filename}\n")
        except OSError as err:
            say(f"could not record the digest: {err}")
    say(f"{path} ready (sha256 {actual})")
    return path
