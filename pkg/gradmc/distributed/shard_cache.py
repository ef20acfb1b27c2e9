"""Per-shard results that survive a killed sweep: each finished shard's rows are written at once, atomically.

:class:`ShardCache` stores each shard's frame as its own Parquet file ``<folder>/<key>.parquet`` the moment the
shard finishes (:mod:`gradmc.atomic`), and :func:`run_cached` runs only the shards whose file is missing, so a
rerun after a kill returns the same frames, in the same order, as an uninterrupted run.

The key (first 32 hex digits of a SHA-256, :meth:`ShardCache.describe`) hashes everything a shard's rows depend
on: the experiment name; the shard's type and fields (``run(shard)`` reads only its shard, :mod:`gradmc.registry`);
the content digest of every file a str field names (also in the shard a part of a split shard holds); the digest
of the code the shard runs (:func:`gradmc.codedigest.source_digest`, per shard for an experiment that declares
``shard_samplers``, :func:`gradmc.experiments.standard.shard_code_digest`); and the versions of
:data:`KEY_LIBRARIES`. Each file's Parquet footer records its key, its shard and a SHA-256 of its rows
(:func:`frame_digest`), and its pages carry checksums: a file whose key or rows do not match, or that cannot be
read, is recomputed with a warning. A shard that cannot be stored stays in memory (one warning per cache).
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import hashlib
import json
import os
import stat
from collections.abc import Callable, Sequence
from importlib import metadata
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from gradmc.atomic import atomic_path

__all__ = ["CACHE_KEY", "KEY_LIBRARIES", "ShardCache", "cache_folder_for", "frame_digest", "run_cached"]

CACHE_KEY = b"gradmc.shard"
"""Key of the shard-identity JSON in a cached shard's Parquet footer."""


def cache_folder_for(out: str | os.PathLike) -> Path:
    """The default shard cache of a job writing ``out``: ``<out without suffix>.shards/`` beside it
    (``results/quick/ising_sampling/metrics.parquet`` -> ``results/quick/ising_sampling/metrics.shards/``)."""
    out = Path(out)
    return out.with_name(f"{out.stem}.shards")


def _string_fields(shard: Any, prefix: str = ""):
    """(name, value) of each str field of a dataclass shard, and of the dataclasses its fields hold (named
    ``field.subfield``: the shard of a part of a split shard, :mod:`gradmc.distributed.memory_split`)."""
    if not dataclasses.is_dataclass(shard) or isinstance(shard, type):
        return
    for f in dataclasses.fields(shard):
        value = getattr(shard, f.name)
        if isinstance(value, str):
            yield prefix + f.name, value
        else:
            yield from _string_fields(value, f"{prefix}{f.name}.")


def _identity(shard: Any) -> dict[str, Any]:
    """JSON-ready identity of a shard: its qualified type and fields (a dataclass), else its repr."""
    kind = f"{type(shard).__module__}.{type(shard).__qualname__}"
    if dataclasses.is_dataclass(shard) and not isinstance(shard, type):
        fields = {f.name: getattr(shard, f.name) for f in dataclasses.fields(shard)}
        return {"type": kind, "fields": json.loads(json.dumps(fields, default=repr))}
    return {"type": kind, "repr": repr(shard)}


#: third-party libraries whose code computes shard rows (samplers, ESS, statistics): their versions enter every key
KEY_LIBRARIES = ("torch", "numpy", "scipy", "arviz", "pandas")


def _library_versions() -> dict[str, str]:
    """Installed versions of :data:`KEY_LIBRARIES` ("absent" for one that is not installed)."""
    versions = {}
    for name in KEY_LIBRARIES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = "absent"
    return versions


def frame_digest(frame: pd.DataFrame) -> str:
    """SHA-256 (hex) of a frame's columns, dtypes, index and every value (``pandas.util.hash_pandas_object``)."""
    h = hashlib.sha256(json.dumps([[str(c), str(t)] for c, t in frame.dtypes.items()]).encode("utf-8"))
    h.update(pd.util.hash_pandas_object(frame, index=True).to_numpy().tobytes())
    return h.hexdigest()


@functools.cache
def _sha256(path: str, size: int, mtime_ns: int) -> str:
    with open(path, "rb") as fh:  # size and mtime only key the memo: a rewritten file is hashed again
        return hashlib.file_digest(fh, "sha256").hexdigest()


class ShardCache:
    """Shard frames of one experiment, stored one Parquet file per shard under ``folder``.

    Args:
        folder: the cache folder (created on the first store).
        experiment: the experiment's name (part of every key).
        code_digest: digest of the code that computes a shard (e.g. ``source_digest(module)``), or a function of
            the shard (a unit of the sweep) giving the digest of the code that shard runs.
        progress: receives a line for each ignored file (wrong key, unreadable); None for silence.
    """

    def __init__(self, folder: str | os.PathLike, experiment: str, code_digest: str | Callable[[Any], str],
                 progress: Callable[[str], None] | None = print):
        self.folder = Path(folder)
        self.experiment = experiment
        self.code_digest = code_digest
        self._progress = progress
        self._store_failed = False

    def _file_digest(self, path: str) -> str | None:
        """SHA-256 of a regular file's bytes (memoised on path, size and mtime), None if it is not one."""
        try:
            st = os.stat(path)
        except (OSError, ValueError):
            return None
        return _sha256(os.path.abspath(path), st.st_size, st.st_mtime_ns) if stat.S_ISREG(st.st_mode) else None

    def describe(self, shard: Any) -> dict[str, Any]:
        """Everything the key hashes (see the module docstring), as a JSON-ready dict."""
        files = {name: digest for name, value in _string_fields(shard)
                 if (digest := self._file_digest(value)) is not None}
        code = self.code_digest(shard) if callable(self.code_digest) else self.code_digest
        return {"experiment": self.experiment, "shard": _identity(shard), "files": files, "code": code,
                "libraries": _library_versions()}

    def key(self, shard: Any) -> str:
        """32 hex digits of a SHA-256 over :meth:`describe` (sorted-key JSON)."""
        text = json.dumps(self.describe(shard), sort_keys=True)
        return hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]

    def path(self, shard: Any) -> Path:
        """``<folder>/<key>.parquet``."""
        return self.folder / f"{self.key(shard)}.parquet"

    def _ignore(self, path: Path, why: str) -> None:
        if self._progress is not None:
            self._progress(f"[shard cache] warning: ignoring {path} ({why}); its shard is recomputed")

    def load(self, shard: Any) -> pd.DataFrame | None:
        """The stored frame of ``shard``, or None if none is stored, or the file's recorded key does not
        match its name, or it cannot be read (each of the last two with a warning line)."""
        path = self.path(shard)
        if not os.path.lexists(path):
            return None
        if not path.is_file():
            self._ignore(path, "not a regular file")
            return None
        try:
            table = pq.read_table(path, page_checksum_verification=True)
            frame = table.to_pandas()
        except (OSError, pa.ArrowException, ValueError) as err:
            self._ignore(path, f"unreadable: {' '.join(str(err).split())}")
            return None
        recorded = {}
        with contextlib.suppress(ValueError, TypeError):
            recorded = json.loads((table.schema.metadata or {}).get(CACHE_KEY, b"{}"))
        if not isinstance(recorded, dict):
            recorded = {}
        if recorded.get("key") != path.stem:
            self._ignore(path, f"its footer records key {recorded.get('key')!r}, not {path.stem!r}")
            return None
        if recorded.get("rows_sha256") != frame_digest(frame):
            self._ignore(path, "its rows do not match the digest its footer records (the file was changed)")
            return None
        return frame

    def store(self, shard: Any, frame: pd.DataFrame) -> Path | None:
        """Write ``frame`` as the stored result of ``shard``, atomically (never a half-written file).

        Returns:
            The file, or None if it could not be written (a folder that is not writable, a folder in the
            way): then a warning says so, once per cache, and the caller keeps the frame in memory.

        Raises:
            TypeError: ``frame`` is not a pandas DataFrame (the cache holds shard frames only).
        """
        if not isinstance(frame, pd.DataFrame):
            raise TypeError(f"the shard cache stores DataFrames; shard {shard!r} returned {type(frame).__name__}")
        path = self.path(shard)
        table = pa.Table.from_pandas(frame)
        footer = json.dumps({"key": path.stem, "rows_sha256": frame_digest(frame), **self.describe(shard)},
                            sort_keys=True).encode("utf-8")
        table = table.replace_schema_metadata({**(table.schema.metadata or {}), CACHE_KEY: footer})
        try:
            with atomic_path(path) as tmp:
                pq.write_table(table, tmp, write_page_checksum=True)
        except OSError as err:
            if not self._store_failed and self._progress is not None:
                self._progress(f"[shard cache] warning: cannot store shards in {self.folder} "
                               f"({' '.join(str(err).split())}); finished shards are kept in memory only, so an "
                               "interrupted run recomputes them")
            self._store_failed = True
            return None
        return path


def run_cached(
    fn: Callable[[Any], pd.DataFrame],
    shards: Sequence[Any],
    cache: ShardCache | None,
    runner: Callable[..., list[Any]],
    *,
    progress: Callable[[str], None] | None = print,
    desc: str = "shards",
    names: Sequence[str] | None = None,
    noun: str = "shards",
    **runner_kwargs: Any,
) -> tuple[list[pd.DataFrame], int]:
    """Frames of every shard, in the order of ``shards``: stored ones from ``cache``, the rest computed.

    Args:
        fn: the shard function (``run(shard) -> DataFrame``).
        shards: the sweep's shards.
        cache: where finished shards are stored; None computes every shard and stores nothing.
        runner: ``runner(fn, shards, on_result=..., progress=..., desc=..., names=..., noun=..., **runner_kwargs)``
            (:func:`gradmc.distributed.run_shards`) computing the missing shards and calling
            ``on_result(i, frame)`` on the driver as each finishes, which stores it at once.
        progress: receives a line saying how many shards came from the cache; None for silence.
        desc: label of the progress lines.
        names: each shard's name in progress lines and errors (``shard 3 part 2/4``,
            :func:`gradmc.distributed.memory_split.unit_names`), handed to ``runner`` for the shards it runs, so
            they keep their names in the whole sweep; None: ``shard <index in shards>``.
        noun: what the shards are called in counts (``parts``).

    Returns:
        (frames, computed): ``frames[i]`` is shard i's frame; ``computed`` is how many shards ran now.
    """
    shards = list(shards)
    frames = [cache.load(shard) if cache is not None else None for shard in shards]
    todo = [i for i, frame in enumerate(frames) if frame is None]
    if cache is not None and progress is not None:
        progress(f"[{desc}] shard cache {cache.folder}: {len(shards) - len(todo)} of {len(shards)} {noun} stored, "
                 f"{len(todo)} to run")
    if not todo:
        return frames, 0

    def keep(j: int, frame: pd.DataFrame) -> None:
        if cache is not None:
            cache.store(shards[todo[j]], frame)

    computed = runner(fn, [shards[i] for i in todo], on_result=keep, progress=progress, desc=desc, noun=noun,
                      names=[names[i] if names is not None else f"shard {i}" for i in todo], **runner_kwargs)
    for i, frame in zip(todo, computed, strict=True):
        frames[i] = frame
    return frames, len(todo)
