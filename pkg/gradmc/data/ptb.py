"""Penn Treebank sentences as fixed-length token rows: the data of the GWG paper's text EBM (Appendix J;
EXPERIMENTS.md A8).

The paper keeps the sentences of Mikolov's PTB (``ptb.{train,valid,test}.txt``, one sentence per line, rare
words already replaced by ``<unk>``) that have at most 20 words, pads each with an end token to 20 positions,
and uses a 10,000-word vocabulary. Here:

- :func:`read_sentences` reads one file into lists of words;
- :func:`build_vocabulary` ranks words by frequency (index 0 ``<eos>``, also the padding, index 1 ``<unk>``);
- :func:`encode` turns sentences into an int64 (N, max_length) array, dropping the longer ones;
- :func:`prepare_text` writes the encoded splits and a JSON manifest to one ``.npz`` (atomically, plus a
  ``<out>.json`` sidecar with the file's sha256, like :mod:`gradmc.data.prepare_images`);
- :func:`load_prepared_text` reads it back as a :class:`TextData`; :func:`decode` turns rows back into text.

numpy only (no torch).
"""

from __future__ import annotations

import json
import os
import zipfile
import zlib
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from gradmc.atomic import atomic_path
from gradmc.data.download import sha256_file
from gradmc.errors import InputError, MissingInputError

__all__ = ["EOS", "UNK", "FORMAT", "TextData", "read_sentences", "build_vocabulary", "encode", "decode",
           "prepare_text", "load_prepared_text"]

EOS = "<eos>"
UNK = "<unk>"
FORMAT = "gradmc.text_dataset/1"
_ROLES = ("train", "valid", "test")


def read_sentences(path: str | os.PathLike) -> list[list[str]]:
    """The sentences of a PTB text file (GWG paper App. J): one per non-empty line, split on whitespace.

    Words are kept as they are (PTB already has ``<unk>`` for its rare words); blank lines are skipped.

    Args:
        path: a UTF-8 text file, e.g. ``ptb.valid.txt``.

    Returns:
        One list of words per non-empty line, in file order.

    Raises:
        gradmc.errors.MissingInputError: (an InputError and FileNotFoundError) the file does not exist.
        gradmc.errors.InputError: (a ValueError) it is a folder, cannot be read, is binary (a NUL byte) or not
            UTF-8, has no sentence, or a line holds the reserved word ``<eos>``; the message names the file.
    """
    path = Path(path)
    if path.is_dir():
        raise InputError(f"{path} is a folder, not a text file of sentences")
    if not path.exists():
        raise MissingInputError(f"text file {path} not found (PTB: `gradmc data fetch ptb_heldout` for valid and test, "
                                "`gradmc data fetch ptb` for train too)")
    try:
        raw = path.read_bytes()
    except OSError as err:
        raise InputError(f"cannot read text file {path} ({err.strerror})") from None
    if b"\0" in raw:
        raise InputError(f"{path} is not a text file (it holds NUL bytes: binary data?)")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as err:
        raise InputError(f"{path} is not UTF-8 text (byte {err.start}: {err.reason})") from None
    sentences = []
    for number, line in enumerate(text.split("\n"), 1):
        words = line.split()
        if EOS in words:
            raise InputError(f"{path}, line {number}: the word {EOS} is reserved for the end/padding token")
        if words:
            sentences.append(words)
    if not sentences:
        raise InputError(f"{path} holds no sentence (empty or blank lines only)")
    return sentences


def build_vocabulary(sentences: Sequence[Sequence[str]], size: int) -> list[str]:
    """A vocabulary of at most ``size`` words ranked by frequency in ``sentences`` (GWG paper App. J: 10,000).

    Index 0 is ``<eos>`` (the end token, also the padding), index 1 is ``<unk>``, then the most frequent other
    words, ties broken alphabetically (by code point), until ``size`` entries. With fewer distinct words than
    ``size - 2`` all of them are returned (a shorter list, no warning). Occurrences of ``<eos>`` and ``<unk>``
    in ``sentences`` do not take a place of their own.

    Args:
        sentences: lists of words (from :func:`read_sentences`).
        size: the number of entries, ``<eos>`` and ``<unk>`` included; an int >= 2.

    Returns:
        ``[EOS, UNK, word, ...]``, ``min(size, 2 + distinct other words)`` entries.

    Raises:
        ValueError: ``size`` is not an int >= 2.
    """
    if isinstance(size, bool) or not isinstance(size, int | np.integer) or size < 2:
        raise ValueError(f"vocabulary size must be an int >= 2 (<eos> and <unk> included), got {size!r}")
    counts = Counter(w for s in sentences for w in s if w not in (EOS, UNK))
    ranked = sorted(counts, key=lambda w: (-counts[w], w))
    return [EOS, UNK, *ranked[: int(size) - 2]]


def _index(vocabulary: Sequence[str]) -> dict[str, int]:
    """Word -> id of a vocabulary from :func:`build_vocabulary`; ValueError when it is not of that shape."""
    vocabulary = list(vocabulary)
    if vocabulary[:2] != [EOS, UNK]:
        raise ValueError(f"a vocabulary starts with {EOS!r}, {UNK!r} (ids 0 and 1), got {vocabulary[:2]}")
    index = {w: i for i, w in enumerate(vocabulary)}
    if len(index) != len(vocabulary):
        dupes = sorted(w for w, c in Counter(vocabulary).items() if c > 1)
        raise ValueError(f"vocabulary has repeated words: {dupes[:5]}")
    return index


def encode(sentences: Sequence[Sequence[str]], vocabulary: Sequence[str],
           max_length: int) -> tuple[np.ndarray, int]:
    """Token rows of the sentences of at most ``max_length`` words (GWG paper App. J: 20), padded with ``<eos>``.

    A sentence of ``k <= max_length`` words becomes its ``k`` word ids followed by ``max_length - k`` ids of
    ``<eos>`` (0); a sentence of exactly ``max_length`` words therefore has no ``<eos>`` at all (the paper pads
    to, not past, 20 positions). Longer sentences are dropped and counted. Words outside ``vocabulary`` map to
    ``<unk>`` (1). An empty sentence becomes a row of ``<eos>``.

    Args:
        sentences: lists of words.
        vocabulary: from :func:`build_vocabulary` (``<eos>`` at 0, ``<unk>`` at 1, no repeats).
        max_length: row length, an int >= 1.

    Returns:
        ``(tokens, dropped)``: int64 array (N, max_length) of the kept sentences in input order (N may be 0),
        and the number of sentences dropped for being longer than ``max_length``.

    Raises:
        ValueError: ``max_length`` not an int >= 1, a vocabulary not of that shape, or a sentence holding the
            reserved word ``<eos>``.
    """
    if isinstance(max_length, bool) or not isinstance(max_length, int | np.integer) or max_length < 1:
        raise ValueError(f"max_length must be an int >= 1, got {max_length!r}")
    index = _index(vocabulary)
    kept = [s for s in sentences if len(s) <= max_length]
    tokens = np.zeros((len(kept), int(max_length)), dtype=np.int64)
    for row, sentence in enumerate(kept):
        if EOS in sentence:
            raise ValueError(f"sentence {' '.join(sentence)!r} holds the reserved word {EOS}")
        tokens[row, : len(sentence)] = [index.get(w, 1) for w in sentence]
    return tokens, len(sentences) - len(kept)


def decode(tokens: np.ndarray | Sequence[Sequence[int]], vocabulary: Sequence[str]) -> list[str]:
    """The text of token rows: each row's words joined by single spaces, up to (not including) its first
    ``<eos>`` (id 0); a row that starts with ``<eos>`` is ``""``. Inverse of :func:`encode` for sentences whose
    words are all in the vocabulary (others come back as ``<unk>``). GWG paper App. J (samples of the text EBM).

    Args:
        tokens: integer array-like (N, L).
        vocabulary: from :func:`build_vocabulary` (``<eos>`` at 0, ``<unk>`` at 1).

    Returns:
        N strings.

    Raises:
        ValueError: ``tokens`` not 2-D integers, an id outside ``[0, len(vocabulary))``, or a vocabulary not of
            that shape.
    """
    _index(vocabulary)
    array = np.asarray(tokens)
    if array.ndim != 2 or not (np.issubdtype(array.dtype, np.integer) or array.size == 0):
        raise ValueError(f"tokens must be a 2-D integer array (N, L), got shape {array.shape} dtype {array.dtype}")
    if array.size and (array.min() < 0 or array.max() >= len(vocabulary)):
        raise ValueError(f"token ids must lie in [0, {len(vocabulary)}), got {array.min()}..{array.max()}")
    out = []
    for row in array.tolist():
        end = row.index(0) if 0 in row else len(row)
        out.append(" ".join(vocabulary[t] for t in row[:end]))
    return out


@dataclass(frozen=True)
class TextData:
    """A prepared text data set (:func:`load_prepared_text`).

    Attributes:
        vocabulary: the words by id (``vocabulary[0] == EOS``, ``vocabulary[1] == UNK``).
        max_length: the row length L.
        splits: ``"train"``, ``"test"`` (and ``"valid"`` when prepared) -> int64 (N_split, L) token rows.
        manifest: the manifest written by :func:`prepare_text`.
    """

    vocabulary: tuple[str, ...]
    max_length: int
    splits: dict[str, np.ndarray]
    manifest: dict


def prepare_text(
    train_path: str | os.PathLike,
    test_path: str | os.PathLike,
    out: str | os.PathLike,
    *,
    vocab_size: int,
    max_length: int,
    valid_path: str | os.PathLike | None = None,
) -> dict:
    """Encode text files as the text EBM's data (GWG paper App. J; EXPERIMENTS.md A8) into ``out`` (``.npz``).

    The vocabulary comes from the file in the train role only (all its sentences, also those dropped for
    being longer than ``max_length``); every split is encoded with it
    (:func:`encode`). The train role is whatever file is given: the quick config trains on ``ptb.valid.txt``
    and tests on ``ptb.test.txt`` where ``ptb.train.txt`` is missing, and the manifest says so.

    Output keys: ``train``, ``test`` (and ``valid`` with ``valid_path``), int64 (N, max_length), and
    ``manifest``, a JSON string (0-d unicode array; loads with ``allow_pickle=False``). The manifest, plus the
    ``.npz``'s ``file`` name and ``sha256``, is also written to ``<out>.json``. Both are written atomically
    (:func:`gradmc.atomic.atomic_path`): after any error neither is half-written, and every input is read and
    checked before anything is written.

    Args:
        train_path: the file in the train role (also the vocabulary's source).
        test_path: the file in the test role.
        out: the ``.npz`` to write (folders are created).
        vocab_size: vocabulary entries, ``<eos>`` and ``<unk>`` included (paper: 10,000).
        max_length: longest sentence kept, and the row length (paper: 20).
        valid_path: an optional file in the valid role.

    Returns:
        The sidecar's content: ``format``, ``paper``, ``vocab_size`` (asked), ``vocabulary_size`` (built; smaller
        when the train file has fewer words), ``vocabulary`` (the list), ``max_length``, ``eos``/``unk`` (ids 0
        and 1), ``sources`` (role -> file name), and ``splits``: role -> ``file``, ``sha256``, ``bytes``,
        ``sentences``, ``kept``, ``dropped``, ``unk_tokens`` (``<unk>`` ids in the kept rows: words that are
        ``<unk>`` in the file or outside the vocabulary), ``shape``; plus ``file`` and ``sha256`` of ``out``.

    Raises:
        gradmc.errors.InputError: (a ValueError) ``vocab_size`` not an int >= 2, ``max_length`` not an int
            >= 1, an unreadable/empty/binary input (see :func:`read_sentences`), or a split with no sentence
            of at most ``max_length`` words.
        gradmc.errors.OutputError: (an OSError) the folder of ``out`` cannot be written.
    """
    try:
        build_vocabulary([], vocab_size)
        encode([], [EOS, UNK], max_length)
    except ValueError as err:
        raise InputError(str(err)) from None
    paths = {"train": Path(train_path), "valid": None if valid_path is None else Path(valid_path),
             "test": Path(test_path)}
    paths = {role: p for role, p in paths.items() if p is not None}
    sentences = {role: read_sentences(p) for role, p in paths.items()}
    vocabulary = build_vocabulary(sentences["train"], vocab_size)
    arrays, splits = {}, {}
    for role, path in paths.items():
        tokens, dropped = encode(sentences[role], vocabulary, max_length)
        if tokens.shape[0] == 0:
            raise InputError(f"{path} ({role}) has no sentence of at most max_length={max_length} words "
                             f"({dropped} longer ones)")
        arrays[role] = tokens
        splits[role] = {"file": path.name, "sha256": sha256_file(path), "bytes": path.stat().st_size,
                        "sentences": len(sentences[role]), "kept": int(tokens.shape[0]), "dropped": int(dropped),
                        "unk_tokens": int((tokens == 1).sum()), "shape": list(tokens.shape)}
    manifest = {
        "format": FORMAT, "paper": "GWG (Grathwohl et al. 2021) Appendix J; EXPERIMENTS.md A8",
        "vocab_size": int(vocab_size), "vocabulary_size": len(vocabulary), "vocabulary": vocabulary,
        "max_length": int(max_length), "eos": 0, "unk": 1,
        "sources": {role: p.name for role, p in paths.items()}, "splits": splits,
    }
    out = Path(out)
    with atomic_path(out) as tmp, open(tmp, "wb") as f:  # a file object: numpy adds no suffix
        np.savez_compressed(f, **arrays, manifest=np.array(json.dumps(manifest, sort_keys=True)))
    sidecar = {**manifest, "file": out.name, "sha256": sha256_file(out)}
    with atomic_path(out.with_name(out.name + ".json")) as tmp:
        tmp.write_text(json.dumps(sidecar, indent=2) + "\n")
    return sidecar


def load_prepared_text(path: str | os.PathLike) -> TextData:
    """Read a ``.npz`` written by :func:`prepare_text` (GWG paper App. J text EBM data), checking it.

    Returns:
        :class:`TextData`: vocabulary, max_length, the int64 (N, max_length) rows of every split the manifest
        lists (``train``, ``test``, maybe ``valid``), and the manifest.

    Raises:
        gradmc.errors.MissingInputError: the file does not exist.
        gradmc.errors.InputError: (a ValueError) not a readable ``.npz`` (not a zip, truncated, pickled objects),
            no manifest or one of another format, or a split that is missing or disagrees with the manifest
            (shape, non-integer ids, ids outside the vocabulary); the message names the file.
    """
    path = Path(path)
    if not path.is_file():
        raise MissingInputError(f"prepared text data {path} not found (make it with prepare_text)")
    if not zipfile.is_zipfile(path):  # np.load would take any other bytes for a pickle
        raise InputError(f"{path} is not a prepared text data set: not an .npz (zip) archive")
    try:
        with np.load(path, allow_pickle=False) as npz:
            if "manifest" not in npz.files:
                raise InputError(f"{path}: no 'manifest' key; not a prepared text data set")
            manifest = json.loads(str(npz["manifest"]))
            listed = manifest.get("splits", {}) if isinstance(manifest, Mapping) else {}
            roles = sorted(listed, key=lambda r: (_ROLES.index(r) if r in _ROLES else len(_ROLES), str(r)))
            arrays = {role: npz[role] for role in roles if role in npz.files}
    except InputError:
        raise
    except (OSError, ValueError, EOFError, zipfile.BadZipFile, zlib.error) as err:  # JSONDecodeError: ValueError
        raise InputError(f"{path} is not a readable prepared text data set ({type(err).__name__}: {err}); "
                         "delete it and prepare it again") from None
    if not isinstance(manifest, Mapping) or manifest.get("format") != FORMAT:
        found = manifest.get("format") if isinstance(manifest, Mapping) else type(manifest).__name__
        raise InputError(f"{path}: manifest format {found!r}, expected {FORMAT!r}")
    vocabulary, max_length = manifest.get("vocabulary"), manifest.get("max_length")
    if not isinstance(vocabulary, list) or vocabulary[:2] != [EOS, UNK] or not all(isinstance(w, str) for w in
                                                                                   vocabulary):
        raise InputError(f"{path}: the manifest's vocabulary is not a list of words starting {EOS}, {UNK}")
    if isinstance(max_length, bool) or not isinstance(max_length, int) or max_length < 1:
        raise InputError(f"{path}: the manifest's max_length {max_length!r} is not an int >= 1")
    if set(roles) - set(_ROLES) or not {"train", "test"} <= set(roles):
        raise InputError(f"{path}: manifest splits {roles}, expected train, test and maybe valid")
    for role in roles:
        rows = arrays.get(role)
        expected = [manifest["splits"][role].get("kept") if isinstance(manifest["splits"][role], Mapping) else None,
                    max_length]
        if rows is None or rows.ndim != 2 or list(rows.shape) != expected:
            got = "missing" if rows is None else f"of shape {list(rows.shape)}"
            raise InputError(f"{path}: split {role!r} is {got}, the manifest says {expected}")
        if not np.issubdtype(rows.dtype, np.integer) or (rows.size and (rows.min() < 0 or
                                                                         rows.max() >= len(vocabulary))):
            raise InputError(f"{path}: split {role!r} holds ids outside [0, {len(vocabulary)}) or not integers")
    return TextData(vocabulary=tuple(vocabulary), max_length=int(max_length),
                    splits={role: arrays[role].astype(np.int64, copy=False) for role in roles},
                    manifest=dict(manifest))


def prepare_from_config(config: dict, out: str | Path, *, data_dir: str | Path | None = None,
                  allow_download: bool = False, progress: Callable[[str], None] | None = print) -> dict:
    """Prepare the PTB files of ``config["text_ebm"]["data"]`` (train_split, vocab_size, max_length) as the text
    EBM's ``.npz`` at ``out`` (:func:`prepare_text`; GWG App. J); the files are verified (sha256) in the
    data folder, and fetched when ``allow_download``.

    Returns the manifest. Raises:
        InputError: no ``text_ebm.data`` section; gradmc.errors.DataError or MissingInputError: a missing or
            corrupt PTB file (named, with the fetch command).
    """
    from gradmc.data.download import fetch
    from gradmc.data.registry import get_remote

    try:
        d = config["text_ebm"]["data"]
    except KeyError:
        raise InputError("config has no 'text_ebm.data' section (GWG App. J text EBM)") from None

    def path(split: str) -> Path:
        return fetch(get_remote(f"ptb_{split}"), data_dir, allow_download=allow_download, progress=progress)

    roles = {"train": "valid", "test": "test"} if d["train_split"] == "valid" else \
        {"train": "train", "valid": "valid", "test": "test"}
    paths = {role: path(split) for role, split in roles.items()}
    manifest = prepare_text(paths["train"], paths["test"], out, vocab_size=d["vocab_size"],
                            max_length=d["max_length"], valid_path=paths.get("valid"))
    if progress:
        progress(f"[data] PTB ({', '.join(f'{r}: {p.name}' for r, p in paths.items())}): vocabulary "
                 f"{manifest['vocabulary_size']}, L = {d['max_length']}, "
                 + ", ".join(f"{r} {s['kept']} kept / {s['sentences']}" for r, s in manifest["splits"].items()))
    return manifest
