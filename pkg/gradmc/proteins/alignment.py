"""A2M / aligned-FASTA reader and the 21-state protein alphabet (GWG paper Sec. 5.4, Appendix H).

Alphabet (plmc / EVcouplings order): state 0 is the gap, states 1..20 the amino acids in alphabetical
one-letter order, ``ALPHABET = "-ACDEFGHIKLMNPQRSTVWY"``; so ``GAP = 0`` and e.g. ``A = 1``, ``Y = 20``.

A2M (the SAM / HMMER / EVcouplings convention): upper-case letters and ``-`` are match columns, kept;
lower-case letters and ``.`` are insert columns, dropped. Every record must have the same number of match
columns. Unknown or ambiguous residues ``B Z J X U O *`` map to the gap state by default (as CCMpred and
GREMLIN do; plmc and EVcouplings instead drop such sequences: ``unknown="drop"``). Any other character
(digits, ``~``, ``#``, ...) is an error. With ``a2m=False`` the file is read as plain aligned FASTA: letters
of either case are match columns and ``.`` is a gap.
"""

from __future__ import annotations

import os

import numpy as np
import torch

__all__ = ["ALPHABET", "GAP", "NUM_STATES", "UNKNOWN_RESIDUES", "read_fasta_records", "encode_records",
           "read_a2m", "one_hot", "decode"]

ALPHABET = "-ACDEFGHIKLMNPQRSTVWY"
GAP = 0
NUM_STATES = len(ALPHABET)  # 21
UNKNOWN_RESIDUES = "BZJXUO*"

_DROP, _BAD = -1, -2


def _lookup(a2m: bool) -> np.ndarray:
    """Byte -> state table: a state in 0..20, _DROP (insert column) or _BAD (not allowed)."""
    lut = np.full(256, _BAD, dtype=np.int16)
    for k, c in enumerate(ALPHABET):
        lut[ord(c)] = k
    for c in UNKNOWN_RESIDUES:
        lut[ord(c)] = GAP
    letters = ALPHABET[1:] + UNKNOWN_RESIDUES.replace("*", "")
    for c in letters:
        lut[ord(c.lower())] = _DROP if a2m else lut[ord(c)]
    lut[ord(".")] = _DROP if a2m else GAP
    return lut


def read_fasta_records(path: str | os.PathLike) -> list[tuple[str, str]]:
    """(header, raw sequence) pairs of a FASTA/A2M file; a sequence may span several lines.

    The header is the text after ``>`` (stripped); sequence lines are concatenated with all whitespace
    removed. Blank lines are ignored.

    Raises:
        FileNotFoundError: no file at ``path``.
        ValueError: naming the file, if it has no records, text before the first ``>``, or a record with
            an empty sequence.
    """
    records: list[tuple[str, list[str]]] = []
    with open(path, encoding="ascii", errors="replace") as f:
        for lineno, line in enumerate(f, 1):
            line = line.strip()
            if not line:
                continue
            if line.startswith(">"):
                records.append((line[1:].strip(), []))
            elif not records:
                raise ValueError(f"{path}: line {lineno} holds sequence text before the first '>' header")
            else:
                records[-1][1].append("".join(line.split()))
    if not records:
        raise ValueError(f"{path}: no FASTA records (lines starting with '>') found")
    out = [(h, "".join(parts)) for h, parts in records]
    for k, (h, s) in enumerate(out):
        if not s:
            raise ValueError(f"{path}: record {k + 1} ('>{h}') has an empty sequence")
    return out


def encode_records(records: list[tuple[str, str]], *, a2m: bool = True, unknown: str = "gap",
                   source: str = "alignment") -> tuple[np.ndarray, list[str]]:
    """Encode (header, raw sequence) pairs into states, see the module docstring for the rules.

    Args:
        records: from :func:`read_fasta_records`.
        a2m: A2M rules (drop lower case and '.') or plain aligned FASTA.
        unknown: ``"gap"`` (B, Z, J, X, U, O, '*' -> gap) or ``"drop"`` (remove those sequences).
        source: name used in error messages (the file).

    Returns:
        states: (N, L) int8 array with values in 0..20 (``ALPHABET`` order);
        headers: the N kept headers, in file order.

    Raises:
        ValueError: an illegal character (names record, column and character), records whose match
            lengths differ (names the first offending record and both lengths), or no sequence left.
    """
    if unknown not in ("gap", "drop"):
        raise ValueError(f"unknown must be 'gap' or 'drop', got {unknown!r}")
    empty = [k for k, (_, s) in enumerate(records) if not s]
    if not records or empty:
        raise ValueError(f"{source}: no records" if not records else f"{source}: record {empty[0] + 1} is empty")
    lut = _lookup(a2m)
    joined = "".join(s for _, s in records).encode("ascii", errors="replace")
    codes = lut[np.frombuffer(joined, dtype=np.uint8)]
    lengths = np.array([len(s) for _, s in records])
    starts = np.concatenate([[0], np.cumsum(lengths)[:-1]])
    bad = np.flatnonzero(codes == _BAD)
    if bad.size:
        rec = int(np.searchsorted(starts, bad[0], side="right") - 1)
        col = int(bad[0] - starts[rec])
        raise ValueError(f"{source}: record {rec + 1} ('>{records[rec][0]}') has illegal character "
                         f"{records[rec][1][col]!r} at position {col + 1}; allowed: {ALPHABET}, '.', lower case, "
                         f"and unknown residues {UNKNOWN_RESIDUES}")
    keep = codes != _DROP
    match_len = np.add.reduceat(keep.astype(np.int64), starts)
    odd = np.flatnonzero(match_len != match_len[0])
    if odd.size:
        k = int(odd[0])
        raise ValueError(f"{source}: record {k + 1} ('>{records[k][0]}') has {match_len[k]} match columns, "
                         f"expected {match_len[0]} as in record 1 ('>{records[0][0]}')")
    if match_len[0] == 0:
        raise ValueError(f"{source}: records have no match columns (upper case or '-')")
    states = codes[keep].astype(np.int8).reshape(len(records), int(match_len[0]))
    headers = [h for h, _ in records]
    if unknown == "drop":
        is_unknown = np.zeros(codes.shape, dtype=bool)
        for c in UNKNOWN_RESIDUES:
            is_unknown |= np.frombuffer(joined, dtype=np.uint8) == ord(c)
        dirty = np.add.reduceat((is_unknown & keep).astype(np.int64), starts) > 0
        states, headers = states[~dirty], [h for h, d in zip(headers, dirty, strict=True) if not d]
        if not headers:
            raise ValueError(f"{source}: every sequence holds an unknown residue {UNKNOWN_RESIDUES}")
    return states, headers


def read_a2m(path: str | os.PathLike, *, a2m: bool = True, unknown: str = "gap") -> tuple[np.ndarray, list[str]]:
    """Read an A2M (default) or aligned-FASTA alignment into integer states.

    Returns:
        states: (N, L) int8, values in 0..20, ``ALPHABET = "-ACDEFGHIKLMNPQRSTVWY"`` order (0 = gap);
        headers: list of N header strings (text after '>').

    Raises:
        FileNotFoundError: no file at ``path``.
        ValueError: malformed file, illegal characters, or unequal match lengths (the message names the
            file and the record); see :func:`encode_records`.
    """
    return encode_records(read_fasta_records(path), a2m=a2m, unknown=unknown, source=str(path))


def one_hot(states, num_states: int = NUM_STATES, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """One-hot encoding (N, L, q) of integer states (N, L), the layout of ``gradmc.targets.Potts``.

    Raises:
        ValueError: states not 2-D or outside 0..num_states-1.
    """
    s = torch.as_tensor(np.asarray(states), dtype=torch.long)
    if s.dim() != 2:
        raise ValueError(f"states must have shape (N, L), got {tuple(s.shape)}")
    if s.numel() and (int(s.min()) < 0 or int(s.max()) >= num_states):
        raise ValueError(f"states must lie in 0..{num_states - 1}, got range {int(s.min())}..{int(s.max())}")
    return torch.nn.functional.one_hot(s, num_states).to(dtype)


def decode(states_row) -> str:
    """The 21-letter string of one row of states (gap as '-'), for messages and tests."""
    return "".join(ALPHABET[int(k)] for k in np.asarray(states_row))
