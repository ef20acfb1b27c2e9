"""Find a registered data file in the data folder, or download it through pooch and verify it.

Downloads go through :mod:`pooch` (HTTP(S) with retries, a progress bar on a terminal, archive
extraction) into a staging folder beside the final path; only a file that passes
every check of its registry entry (size, sha256 or the digest of its decoded arrays, see
:mod:`gradmc.data.registry`) is renamed into place, so a file at its final path has always been
verified. Addresses are tried in order: the mirror ``$GRADMC_DATA_BASE_URL`` alone when it is set,
else the canonical URL and then the entry's fallbacks.
"""

from __future__ import annotations

import gzip
import hashlib
import importlib
import os
import shutil
import sys
import tempfile
import urllib.parse
import zlib
from collections.abc import Callable
from pathlib import Path

import numpy as np

from gradmc.data import registry as _registry
from gradmc.data.registry import RemoteFile
from gradmc.errors import DataError, DataFolderError, DownloadError, MissingDataError

__all__ = ["fetch", "resolve_url", "candidate_urls", "sha256_file", "array_sha256", "missing_file_message",
           "BASE_URL_ENV"]

BASE_URL_ENV = "GRADMC_DATA_BASE_URL"
_CHUNK = 1 << 20
_SCHEMES = ("http", "https")
_RETRIES = 2


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


def array_sha256(array: np.ndarray) -> str:
    """Hex sha256 of an array's dtype, shape and C-order bytes: the "decoded digest" of a data file.

    Two files that decode to the same data (e.g. a ``.mat`` written by another MATLAB version, or an
    ``.amat`` with other line endings) have the same decoded digest; any changed value, shape or dtype
    changes it.
    """
    a = np.ascontiguousarray(array)
    h = hashlib.sha256(f"{a.dtype.str}{a.shape}".encode())
    h.update(a.tobytes())
    return h.hexdigest()


def candidate_urls(remote: RemoteFile, base_url: str | None = None) -> tuple[str, ...]:
    """Download addresses of ``remote`` in the order they are tried: ``{base_url}/{relpath}`` alone when
    ``base_url`` (else ``$GRADMC_DATA_BASE_URL``) is set, otherwise ``remote.urls`` (canonical first)."""
    base = base_url or os.environ.get(BASE_URL_ENV)
    if base:
        return (f"{base.rstrip('/')}/{remote.relpath}",)
    return remote.urls


def resolve_url(remote: RemoteFile, base_url: str | None = None) -> str | None:
    """The first address of :func:`candidate_urls` (None when the file has no public home)."""
    urls = candidate_urls(remote, base_url)
    return urls[0] if urls else None


def missing_file_message(remote: RemoteFile, folder: Path, url: str | None) -> str:
    """The MissingDataError (FileNotFoundError) text for ``remote`` missing from ``folder``: what, where, how to get it.

    Names the full expected path (``folder / remote.relpath``, e.g. ``data/mnist/<file>``), not just the
    folder, since canonical files may live in subfolders of the data folder.
    """
    if url:
        how = (f"fetch it with `gradmc data fetch {remote.name}` from {url} (or let `gradmc data prepare "
               "--download` fetch it), or place the file there")
    else:
        how = "it has no public URL: make it with `gradmc data prepare`, or place the file there"
    return (
        f"{remote.filename} not found at {folder / remote.relpath} (data folder {folder}; set "
        f"GRADMC_DATA_DIR to change it): {how}"
    )


def _sidecar(path: Path) -> Path:
    return path.with_name(path.name + ".sha256")


def _recorded_digest(path: Path) -> str | None:
    side = _sidecar(path)
    recorded = side.read_text().split()[:1] if side.exists() else []
    return recorded[0].lower() if recorded else None


def _decode(remote: RemoteFile, path: Path) -> np.ndarray:
    module, _, func = remote.decoder.partition(":")
    return getattr(importlib.import_module(module), func)(path)


def _check_decoded(remote: RemoteFile, path: Path, origin: str) -> None:
    """Raise DataError (a ValueError) unless ``path`` decodes to the registered array digest."""
    try:
        actual = array_sha256(_decode(remote, path))
    except ValueError as err:
        raise DataError(f"{remote.filename} ({origin}) does not decode: {err}") from None
    if actual != remote.decoded_sha256:
        raise DataError(
            f"{remote.filename} ({origin}) failed verification: its decoded data has digest {actual}, "
            f"expected {remote.decoded_sha256} (gradmc.data.download.array_sha256)"
        )


def _verify(remote: RemoteFile, path: Path, actual: str, expected: str | None, origin: str) -> None:
    """Raise DataError (a ValueError) unless ``path`` (whose sha256 is ``actual``) is the registered file.

    ``expected`` is the file digest to enforce (the registry's, or the one recorded at first use), or
    None. With a ``decoded_sha256`` and no matching file digest, the decoded arrays are checked instead.
    """
    size = path.stat().st_size
    size_ok = remote.size is None or size == remote.size
    if expected is not None and actual == expected and size_ok:
        return
    if remote.content_sha256 is not None:
        try:
            if sha256_file(path, gunzip=True) == remote.content_sha256:
                return
        except (OSError, EOFError, zlib.error):  # truncated or not gzip: a mismatch, reported below
            pass
    if remote.decoded_sha256 is not None and remote.sha256 is None:
        _check_decoded(remote, path, origin)
        return
    if expected is None and size_ok:
        return
    size_note = f"; size {size} bytes, expected {remote.size}" if remote.size not in (None, size) else ""
    raise DataError(
        f"{remote.filename} ({origin}) failed verification: expected sha256 {expected or 'unknown'}, "
        f"actual {actual}{size_note}"
    )


def _pooch_download(remote: RemoteFile, url: str, staging: Path, timeout: float) -> Path:
    """Download ``url`` (``ARCHIVE#member`` extracts one member of a zip) into ``staging`` with pooch."""
    import pooch

    pooch.get_logger().setLevel("WARNING")  # fetch prints its own one-line messages
    address, _, member = url.partition("#")
    scheme = urllib.parse.urlsplit(address).scheme
    if scheme not in _SCHEMES:
        raise ValueError(f"refusing to download {address!r}: scheme must be one of {_SCHEMES}")
    fname = Path(urllib.parse.urlsplit(address).path).name or remote.filename
    # No hash for pooch: fetch verifies with the registry's rules (sha256, size, re-zipped .gz content,
    # decoded arrays) in _verify, so every failure reads the same; pooch downloads with retries.
    store = pooch.create(path=staging, base_url="", registry={fname: None}, urls={fname: address},
                         retry_if_failed=_RETRIES, allow_updates=False)
    downloader = pooch.HTTPDownloader(progressbar=sys.stderr.isatty(), timeout=timeout,
                                      headers={"User-Agent": "gradmc"})
    processor = pooch.Unzip(members=[member]) if member else None
    out = store.fetch(fname, downloader=downloader, processor=processor)
    if member:
        found = [Path(p) for p in out if Path(p).name == Path(member).name]
        if not found:
            raise ValueError(f"{address} has no member {member!r}")
        return found[0]
    return Path(out)


def _download_errors() -> tuple[type[BaseException], ...]:
    import requests

    return (OSError, ValueError, requests.RequestException)


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
        data_dir: data folder (default ``data_dir()``: ``$GRADMC_DATA_DIR`` or the user cache).
        allow_download: when False a missing file raises instead of being downloaded.
        base_url: mirror to download from, as ``{base_url}/{relpath}`` (default ``$GRADMC_DATA_BASE_URL``,
            else the canonical ``remote.url`` and then ``remote.mirrors``).
        timeout: socket timeout in seconds, per attempt (pooch retries each address twice).
        progress: called with one-line status messages (None: silent).

    Returns:
        ``Path(data_dir) / remote.relpath``, verified against the registry: its sha256, else the digest of
        its decoded arrays, else (no digest registered) the digest recorded at first download in
        ``<file>.sha256``. A file verified by its decoded arrays gets its sha256 recorded there too, so
        later calls check it by a plain digest.

    Raises:
        gradmc.errors.DataError: (a ValueError) an existing file fails verification (the message names the
            file and both digests; it is neither used nor overwritten), or every download failed and at
            least one because the file was not the registered one. Nothing is left at the final path.
        gradmc.errors.MissingDataError: (a FileNotFoundError) the file is missing and ``allow_download``
            is False or no URL is known; the message names the file, its full expected path and how to
            get it.
        gradmc.errors.DataFolderError: (an OSError) the data folder cannot be written, or an existing
            file cannot be read.
        gradmc.errors.DownloadError: (a ConnectionError, an OSError) every address failed to download
            (unreachable host, HTTP error); the message lists each address with its error and where to
            place the file by hand.
    """
    say = progress or (lambda _msg: None)
    folder = _registry.data_dir() if data_dir is None else Path(data_dir)
    path = folder / remote.relpath
    urls = candidate_urls(remote, base_url)
    if path.exists():
        try:
            actual = sha256_file(path)
            _verify(remote, path, actual, remote.sha256 or _recorded_digest(path), "existing file")
        except ValueError as err:
            raise DataError(
                f"{path} exists but is not the registered file: {err}. It was neither used nor "
                "overwritten: delete it to download a fresh copy, or check where it came from."
            ) from None
        except OSError as err:  # unreadable (permissions, a folder in its place)
            raise DataFolderError(f"cannot read {path} in the data folder {folder} ({err.strerror}: "
                                  f"{err.filename}); fix its permissions, or delete it to download a fresh "
                                  "copy") from None
        if remote.decoded_sha256 is not None and remote.sha256 is None:  # cache the verified file digest
            if _recorded_digest(path) != actual:
                _record(path, actual, say)
        return path
    if not allow_download or not urls:
        raise MissingDataError(missing_file_message(remote, folder, urls[0] if urls else None))
    created = _missing_folders(path.parent)  # removed again, if still empty, when the fetch fails
    try:
        return _download(remote, path, folder, urls, base_url, timeout, say)
    except BaseException:
        _remove_empty(created)
        raise


def _missing_folders(folder: Path) -> list[Path]:
    """The folders that do not exist yet on the way to ``folder``, deepest first (``folder`` included)."""
    missing = []
    while not folder.exists() and folder != folder.parent:
        missing.append(folder)
        folder = folder.parent
    return missing


def _remove_empty(folders: list[Path]) -> None:
    """Remove each of ``folders`` (deepest first) that is empty; a folder holding anything stays."""
    for folder in folders:
        try:
            folder.rmdir()
        except OSError:  # not empty (a file arrived meanwhile), gone already, or not ours to remove
            pass


def _download(remote: RemoteFile, path: Path, folder: Path, urls: tuple[str, ...], base_url: str | None,
              timeout: float, say: Callable[[str], object]) -> Path:
    """Download ``remote`` to ``path`` from the first of ``urls`` that gives the registered file (for
    :func:`fetch`, which has checked that ``path`` is missing)."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        for stale in path.parent.glob(f".{remote.filename}.*.partial"):  # left by a killed earlier fetch
            shutil.rmtree(stale, ignore_errors=True)
        probe = Path(tempfile.mkdtemp(prefix=f".{remote.filename}.", suffix=".partial", dir=path.parent))
        probe.rmdir()
    except OSError as err:
        raise DataFolderError(f"cannot write {remote.filename} into the data folder {folder} ({err.strerror}: "
                              f"{err.filename}); set GRADMC_DATA_DIR to a writable folder") from None
    failures: list[str] = []
    verification_failed = False
    for url in urls:
        say(f"downloading {remote.filename} from {url}")
        staging = Path(tempfile.mkdtemp(prefix=f".{remote.filename}.", suffix=".partial", dir=path.parent))
        try:
            got = _pooch_download(remote, url, staging, timeout)
            actual = sha256_file(got)
            _verify(remote, got, actual, remote.sha256, f"downloaded from {url}")
            os.chmod(got, 0o666 & ~_umask())  # pooch's temporary files are private (0600)
            os.replace(got, path)
        except _download_errors() as err:
            verification_failed |= isinstance(err, ValueError)  # _verify's DataError, a bad address
            failures.append(f"{url}: {type(err).__name__}: {err}")
            say(f"{remote.filename}: {url} failed ({type(err).__name__}: {err})")
            continue
        finally:
            shutil.rmtree(staging, ignore_errors=True)
        if remote.sha256 is None:
            _record(path, actual, say)
        say(f"{path} ready ({path.stat().st_size} bytes, sha256 {actual})")
        return path
    mirror = base_url or os.environ.get(BASE_URL_ENV)
    hint = (f"the mirror {mirror} ({BASE_URL_ENV}, which replaces the public URLs) must serve it at "
            f"<mirror>/{remote.relpath}" if mirror else
            f"without a network, point {BASE_URL_ENV} at a mirror that serves it at <mirror>/{remote.relpath}")
    message = (f"could not download {remote.filename} from any of {len(urls)} address(es):\n  "
               + "\n  ".join(failures) + f"\nPlace the file at {path} by hand, or {hint}")
    raise (DataError if verification_failed else DownloadError)(message)


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def _record(path: Path, digest: str, say: Callable[[str], object]) -> None:
    """Write ``<file>.sha256`` (the digest later calls enforce); a read-only folder only loses the record."""
    try:
        _sidecar(path).write_text(f"{digest}  {path.name}\n")
    except OSError as err:
        say(f"could not record the digest of {path.name}: {err}")
        return
    say(f"{path.name}: recorded sha256 {digest} in {_sidecar(path).name}")
