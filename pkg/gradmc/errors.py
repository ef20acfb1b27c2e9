"""The user-error family: what the ``gradmc`` command reports in one line (exit status 2).

Everything else is a bug and prints its traceback. Each class also derives from the builtin a caller would
expect (``ValueError``, ``FileNotFoundError``, ``ConnectionError``), so ``except ValueError`` keeps working.

- :class:`ConfigError`: a config file that is missing, not YAML, or rejected by the schema.
- :class:`InputError`: a command-line value or input file that is wrong (unknown name, foreign metrics,
  unreadable file); :class:`MissingInputError` for a file that does not exist.
- :class:`DataError`: a data set that cannot be fetched or verified, or a data folder that cannot be used;
  :class:`MissingDataError` for a data file that is not there, :class:`DownloadError` for a download that
  failed at every address, :class:`DataFolderError` for a data folder that cannot be written.
- :class:`ClusterError`: a Ray cluster that cannot be reached or cannot run the job;
  :class:`ClusterResourceError` for a cluster that answers but has no node for one shard.
- :class:`OutputError`: an output path that cannot be created.
"""

from __future__ import annotations

import difflib
import os
import tempfile
import zipfile
import zlib
from collections.abc import Iterable
from pathlib import Path

__all__ = ["UserError", "ConfigError", "InputError", "MissingInputError", "OutputError", "DataError",
           "MissingDataError", "DownloadError", "DataFolderError", "ClusterError", "ClusterResourceError",
           "check_readable", "closest", "unknown_name"]


class UserError(Exception):
    """Base of the errors caused by what the user gave (config, inputs, data, cluster), not by gradmc's code."""


class ConfigError(UserError, ValueError):
    """A configuration value that the schema rejects; the message names key, value and expectation."""


class InputError(UserError, ValueError):
    """A command-line value or input file that is wrong; the message names it and what was expected."""


class MissingInputError(InputError, FileNotFoundError):
    """An input file that does not exist."""


class DataError(UserError, ValueError):
    """A data file that cannot be fetched, verified or stored."""


class ClusterError(UserError, ConnectionError):
    """A Ray cluster that cannot be reached or used."""


class OutputError(InputError, OSError):
    """An output path (``--out``) whose folder cannot be created or written; the message names the path and
    the operating system's reason. Also an ``OSError``, as before."""


class MissingDataError(DataError, FileNotFoundError):
    """A data file that is not in the data folder and was not (or cannot be) downloaded; the message names
    its full expected path and how to get it. Also a ``FileNotFoundError``, as before."""


class DownloadError(DataError, ConnectionError):
    """A data file that could not be downloaded from any of its addresses (unreachable host, HTTP error);
    the message lists each address with its error and where to place the file by hand. Also a
    ``ConnectionError`` (an ``OSError``), as before."""


class DataFolderError(DataError, OSError):
    """A data folder that cannot be written (or a data file in it that cannot be read); the message names
    the folder and the operating system's reason. Also an ``OSError``, as before."""


class ClusterResourceError(ClusterError, RuntimeError):
    """A Ray cluster that answers but where no node offers the CPUs/GPUs one shard asks for (e.g. GPU shards
    on a CPU-only cluster); the message names what was asked, what the nodes offer and how to fix it. Also a
    ``RuntimeError``, as before."""


def closest(name: object, candidates: Iterable[str]) -> str | None:
    """The candidate ``name`` most likely misspells (:func:`difflib.get_close_matches`, ignoring case), or None
    when none is close."""
    if not isinstance(name, str):
        return None
    by_lower = {}
    for candidate in candidates:
        by_lower.setdefault(str(candidate).lower(), str(candidate))
    match = difflib.get_close_matches(name.lower(), list(by_lower), n=1)
    return by_lower[match[0]] if match else None


def unknown_name(what: str, name: object, valid: Iterable[str], *, candidates: Iterable[str] | None = None,
                 label: str = "valid") -> str:
    """The message for a name that is not one of ``valid``: ``unknown sampler 'GWK' — did you mean 'GWG'? valid:
    ACS, ..., RWM`` (without the question when nothing in ``valid`` is close).

    Args:
        what: what the name names ("sampler", "data set").
        name: the name given.
        valid: the names to list.
        candidates: the names to suggest from (default: ``valid``), e.g. concrete names where ``valid`` lists
            templates.
        label: the word before the list.
    """
    valid = [str(v) for v in valid]
    guess = closest(name, valid if candidates is None else candidates)
    text = f"unknown {what} {name!r}"
    text += f" — did you mean {guess!r}? " if guess is not None else "; "
    return text + f"{label}: {', '.join(valid)}"


def check_readable(path: str | Path, what: str) -> Path:
    """Check, before any work starts, that input file ``path`` exists and is not truncated.

    Zip containers (``.npz``, ``.pt`` checkpoints) are checked member by member (CRC), Parquet files by their
    footer; other files only for existence.

    Args:
        path: the file.
        what: how the command line names it (e.g. ``--data``), for the message.

    Returns:
        ``path`` as a Path.

    Raises:
        MissingInputError: the file does not exist.
        InputError: it cannot be read (truncated or corrupt), naming the file.
    """
    path = Path(path)
    sep = "" if what.endswith("=") else " "
    if path.is_dir():
        raise InputError(f"{what}{sep}{path} is a folder, not a file (give the file itself, e.g. "
                         ".../metrics.parquet)")
    if not path.is_file():
        raise MissingInputError(f"{what}{sep}{path} not found (run the stage that makes it first)")
    try:
        if path.suffix in (".npz", ".pt"):
            with zipfile.ZipFile(path) as archive:
                bad = archive.testzip()
            if bad is not None:
                raise InputError(f"{what}{sep}{path} is corrupt (member {bad} fails its checksum); delete and "
                                 "rebuild it")
        elif path.suffix == ".parquet":
            import pyarrow.parquet as pq

            pq.read_metadata(path)
    except (OSError, EOFError, zipfile.BadZipFile, zlib.error, ValueError) as err:  # zlib: a damaged member
        if isinstance(err, InputError):
            raise
        raise InputError(f"{what}{sep}{path} could not be read ({type(err).__name__}: {err}); delete and rebuild "
                         "it (rerun the stage that makes it)") from None
    return path


def check_output_file(path: str | Path, what: str) -> Path:
    """Check, before any work starts, that output file ``path`` can be written: its folder is writable
    (:func:`check_writable_folder`) and ``path`` itself is not an existing folder.

    Raises:
        InputError: either is not the case (named, with what was expected).
    """
    path = Path(path)
    if path.is_dir():
        raise InputError(f"{what} {path} is an existing folder: expected the path of a file to write")
    check_writable_folder(path.parent if str(path.parent) else Path("."), what)
    return path


def check_writable_folder(folder: str | Path, what: str) -> Path:
    """Check, before any work starts, that outputs can be written into ``folder`` (created if missing).

    Args:
        folder: the output folder.
        what: how the command line names the output (e.g. ``--out``), for the message.

    Returns:
        ``folder`` as a Path.

    Raises:
        InputError: it cannot be created, is not a folder, or is not writable.
    """
    folder = Path(folder)
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise InputError(f"{what}: cannot create the output folder {folder} ({err.strerror or err})") from None
    try:  # a real write: os.access is not enough (root, read-only or special file systems such as /proc)
        fd, probe = tempfile.mkstemp(prefix=".gradmc-write-check-", dir=folder)
        os.close(fd)
        os.unlink(probe)
    except OSError as err:
        raise InputError(f"{what}: cannot write into the output folder {folder} ({err.strerror or err}); choose a "
                         "writable folder") from None
    return folder
