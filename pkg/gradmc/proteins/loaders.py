"""Protein data sets of the GWG paper's A6 experiment (Sec. 5.4, Appendix H; Ingraham & Marks 2017).

* ``PF00018``: Pfam SH3-domain alignment (10,211 x 48, A2M) + ``PF00018_summary.txt`` (one tab-separated
  row per pair i < j, 1-based i and j in columns 0 and 1, median minimum-atom distance in angstrom in
  0-based column 5). Contacts: distance < 5 A.
* ``synthetic``: the Potts benchmark ``original_dataset.mat`` with known parameters: ``eij`` (50, 50, 20, 20),
  ``hi`` (50, 20), contact matrix ``C``, chain distances ``D``, samples ``sample`` (2000, 50) and
  ``sample_full`` (100000, 50) with 1-based states. q = 20 abstract states, so there is NO gap state
  (``gap_state=None``); state k here is the file's k + 1. Its energy counts each pair once with
  eij(j, i) = eij(i, j)^T and eij(i, i) = 0, exactly the ``gradmc.targets.Potts`` convention, so
  ``true_J``/``true_h`` plug into ``Potts`` unchanged.
* ``OPSD_BOVIN``, ``CADH1_HUMAN``: EVcouplings focus A2M + monomer distance map (see ``evcouplings.py``),
  not public: ``<data>/protein/<NAME>/<NAME>_full_bXX.a2m`` and ``..._distance_map_monomer.{csv,npy}``.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import scipy.io
import torch

from gradmc.data.download import fetch
from gradmc.data.protein_remotes import PROTEIN_FILES
from gradmc.data.registry import data_dir as default_data_dir
from gradmc.errors import DataError, InputError, MissingDataError
from gradmc.proteins import evcouplings
from gradmc.proteins.alignment import GAP, NUM_STATES, read_a2m
from gradmc.proteins.contacts import DEFAULT_CUTOFF, contact_map

__all__ = ["ProteinData", "PROTEIN_FILES", "EVCOUPLINGS_FILES", "parse_pf00018_summary", "load_pf00018",
           "load_synthetic_potts", "load_evcouplings_protein", "load_protein", "missing_files", "PROTEIN_NAMES"]

#: EVcouplings inputs used by the GWG release: (alignment, distance-map prefix) under <data>/protein/.
EVCOUPLINGS_FILES: dict[str, tuple[str, str]] = {
    "OPSD_BOVIN": ("OPSD_BOVIN/OPSD_BOVIN_full_b03.a2m", "OPSD_BOVIN/OPSD_BOVIN_full_b03_distance_map_monomer"),
    "CADH1_HUMAN": ("CADH1_HUMAN/CADH1_HUMAN_full_b02.a2m", "CADH1_HUMAN/CADH1_HUMAN_full_b02_distance_map_monomer"),
}
PROTEIN_NAMES = ("PF00018", "synthetic", *EVCOUPLINGS_FILES)


@dataclass(frozen=True, eq=False)
class ProteinData:
    """An alignment with its structural ground truth.

    Attributes:
        name: data set name.
        states: (N, L) int8 states in 0..num_states-1 (``alignment.ALPHABET`` order for proteins).
        num_states: q (21 for proteins, 20 for the synthetic benchmark).
        gap_state: index of the gap state (0 for proteins) or None (synthetic).
        headers: N sequence names.
        contacts: (L, L) bool, symmetric, False on the diagonal and where unknown.
        observed: (L, L) bool, pairs whose contact status is known (pass as ``mask`` to contact_curve).
        distances: (L, L) float64 angstrom (NaN unknown, 0 diagonal), or None.
        positions: (L,) int64 residue numbers of the columns (1-based; -1 = no residue).
        true_h, true_J: known parameters (L, q), (L, L, q, q) float64 in the ``gradmc.targets.Potts``
            convention (synthetic only), else None.
    """

    name: str
    states: np.ndarray
    num_states: int
    gap_state: int | None
    headers: tuple[str, ...]
    contacts: np.ndarray
    observed: np.ndarray
    distances: np.ndarray | None
    positions: np.ndarray
    true_h: torch.Tensor | None = None
    true_J: torch.Tensor | None = None

    @property
    def num_sequences(self) -> int:
        """N."""
        return int(self.states.shape[0])

    @property
    def length(self) -> int:
        """L, the number of alignment columns."""
        return int(self.states.shape[1])


def _off_diagonal(L: int) -> np.ndarray:
    return ~np.eye(L, dtype=bool)


def parse_pf00018_summary(path: str | os.PathLike, length: int) -> np.ndarray:
    """Distances (L, L) in angstrom from the summary table (column 5), symmetric, 0 on the diagonal.

    Raises:
        ValueError: naming the file, if a row has < 6 columns or non-numeric fields, an index is outside
            1..L or not i < j, a pair repeats, or not all L (L - 1) / 2 pairs are present.
    """
    d = np.full((length, length), np.nan)
    with open(path) as f:
        for lineno, line in enumerate(f, 1):
            fields = line.rstrip("\n").split("\t")
            if not line.strip():
                continue
            try:
                i, j, dist = int(fields[0]), int(fields[1]), float(fields[5])
            except (ValueError, IndexError):
                raise DataError(f"{path}: line {lineno} needs integer i, j in columns 0, 1 and a distance "
                                 f"in column 5 (tab separated), got {line.strip()[:80]!r}") from None
            if not (1 <= i < j <= length):
                raise DataError(f"{path}: line {lineno} pair ({i}, {j}) is not 1 <= i < j <= {length}")
            if not np.isnan(d[i - 1, j - 1]):
                raise DataError(f"{path}: line {lineno} repeats pair ({i}, {j})")
            d[i - 1, j - 1] = d[j - 1, i - 1] = dist
    np.fill_diagonal(d, 0.0)
    missing = int(np.isnan(d).sum()) // 2
    if missing:
        raise DataError(f"{path}: {missing} of the {length * (length - 1) // 2} pairs i < j are missing")
    return d


def load_pf00018(data_dir: str | os.PathLike | None = None, *, allow_download: bool = False,
                 base_url: str | None = None, cutoff: float = DEFAULT_CUTOFF, unknown: str = "gap") -> ProteinData:
    """PF00018 alignment (10,211 x 48, q = 21) and its contacts (distance < cutoff; 219 pairs at 5 A).

    Raises:
        FileNotFoundError: a file is missing (message names it, its expected path and its URL).
        ValueError: a file fails its checksum or validation.
    """
    a2m = fetch(PROTEIN_FILES["pf00018_a2m"], data_dir, allow_download=allow_download, base_url=base_url,
                progress=None)
    summary = fetch(PROTEIN_FILES["pf00018_summary"], data_dir, allow_download=allow_download,
                    base_url=base_url, progress=None)
    states, headers = read_a2m(a2m, unknown=unknown)
    L = states.shape[1]
    dist = parse_pf00018_summary(summary, L)
    return ProteinData("PF00018", states, NUM_STATES, GAP, tuple(headers), contact_map(dist, cutoff),
                       _off_diagonal(L), dist, np.arange(1, L + 1))


def load_synthetic_potts(data_dir: str | os.PathLike | None = None, *, allow_download: bool = False,
                         base_url: str | None = None, sample_key: str = "sample",
                         num_samples: int | None = None) -> ProteinData:
    """The synthetic Potts benchmark with known h, J and contact map C (q = 20, no gap state).

    Args:
        sample_key: ``"sample"`` (2000 thinned draws) or ``"sample_full"`` (100,000 draws).
        num_samples: keep the first this many rows (Ingraham & Marks fit on the first 400).

    Raises:
        FileNotFoundError: the .mat file is missing (message names it and its URL).
        ValueError: bad checksum, missing keys, wrong shapes, states outside 1..q, couplings that are not
            symmetric with zero diagonal blocks, or a bad sample_key / num_samples.
    """
    if sample_key not in ("sample", "sample_full"):
        raise ValueError(f"sample_key must be 'sample' or 'sample_full', got {sample_key!r}")
    path = fetch(PROTEIN_FILES["potts_synthetic"], data_dir, allow_download=allow_download, base_url=base_url,
                 progress=None)
    mat = scipy.io.loadmat(path)
    missing = [k for k in ("eij", "hi", "C", "D", "q", sample_key) if k not in mat]
    if missing:
        raise DataError(f"{path}: missing keys {missing}")
    q = int(np.asarray(mat["q"]).ravel()[0])
    eij, hi = np.asarray(mat["eij"], np.float64), np.asarray(mat["hi"], np.float64)
    L = hi.shape[0]
    x = np.asarray(mat[sample_key])
    if eij.shape != (L, L, q, q) or hi.shape != (L, q) or mat["C"].shape != (L, L) or x.ndim != 2 or x.shape[1] != L:
        raise DataError(f"{path}: inconsistent shapes eij {eij.shape}, hi {hi.shape}, C {mat['C'].shape}, "
                         f"{sample_key} {x.shape} for L = {L}, q = {q}")
    if x.min() < 1 or x.max() > q:
        raise DataError(f"{path}: {sample_key} must hold 1-based states 1..{q}, got {x.min()}..{x.max()}")
    if not np.allclose(eij, eij.transpose(1, 0, 3, 2)) or np.abs(eij[np.arange(L), np.arange(L)]).max() > 0:
        raise DataError(f"{path}: eij must satisfy eij[j, i] = eij[i, j].T with zero diagonal blocks")
    if num_samples is not None:
        if not 1 <= num_samples <= x.shape[0]:
            raise ValueError(f"num_samples must lie in 1..{x.shape[0]}, got {num_samples}")
        x = x[:num_samples]
    contacts = np.asarray(mat["C"]).astype(bool) & _off_diagonal(L)
    return ProteinData("synthetic", (x - 1).astype(np.int8), q, None, tuple(str(k) for k in range(len(x))),
                       contacts, _off_diagonal(L), np.asarray(mat["D"], np.float64), np.arange(1, L + 1),
                       torch.from_numpy(hi), torch.from_numpy(eij))


def load_evcouplings_protein(a2m_path: str | os.PathLike, distance_map_prefix: str | os.PathLike, *,
                             name: str | None = None, cutoff: float = DEFAULT_CUTOFF,
                             unknown: str = "gap") -> ProteinData:
    """A focus-mode A2M alignment with an EVcouplings monomer distance map (OPSD_BOVIN, CADH1_HUMAN style).

    Columns are numbered by the focus sequence (first record); pairs with a residue missing from the
    structure have ``observed = False`` and count as non-contacts.

    Raises:
        FileNotFoundError: the alignment or a distance-map file is missing (names it and how to make it).
        ValueError: see ``alignment.read_a2m``, ``evcouplings.focus_positions`` and
            ``evcouplings.read_distance_map``.
    """
    a2m_path = Path(a2m_path)
    if not a2m_path.is_file():
        raise MissingDataError(
            f"alignment {a2m_path.name} not found at {a2m_path}: make it with the EVcouplings align stage "
            "(focus-mode A2M, target sequence first) and place it there")
    states, headers, positions = evcouplings.read_focus_alignment(a2m_path, unknown=unknown)
    ids, dmat = evcouplings.read_distance_map(distance_map_prefix)
    dist = evcouplings.alignment_distances(positions, ids, dmat)
    observed = ~np.isnan(dist) & _off_diagonal(len(positions))
    return ProteinData(name or a2m_path.stem, states, NUM_STATES, GAP, tuple(headers), contact_map(dist, cutoff),
                       observed, dist, positions)


def load_protein(name: str, data_dir: str | os.PathLike | None = None, *, allow_download: bool = False,
                 base_url: str | None = None, cutoff: float = DEFAULT_CUTOFF) -> ProteinData:
    """Load one of ``PROTEIN_NAMES`` from the data folder (``$GRADMC_DATA_DIR`` or ``data``).

    Raises:
        ValueError: unknown name (lists the known ones). FileNotFoundError / ValueError: see the loaders.
    """
    if name == "PF00018":
        return load_pf00018(data_dir, allow_download=allow_download, base_url=base_url, cutoff=cutoff)
    if name == "synthetic":
        return load_synthetic_potts(data_dir, allow_download=allow_download, base_url=base_url)
    if name in EVCOUPLINGS_FILES:
        folder = (default_data_dir() if data_dir is None else Path(data_dir)) / "protein"
        a2m, prefix = EVCOUPLINGS_FILES[name]
        return load_evcouplings_protein(folder / a2m, folder / prefix, name=name, cutoff=cutoff)
    raise InputError(f"unknown protein data set {name!r}; known: {list(PROTEIN_NAMES)}")


def missing_files(proteins, folder: str | os.PathLike) -> list[str]:
    """One line per missing input file of ``proteins`` (names in :data:`PROTEIN_NAMES`) under the data folder
    ``folder``: the path and where to get it (a download URL, or how EVcouplings makes the file). Empty when
    every file is present."""
    folder, out = Path(folder), []
    for name in proteins:
        if name in EVCOUPLINGS_FILES:
            a2m, prefix = EVCOUPLINGS_FILES[name]
            how = ("not public: EVcouplings (github.com/debbiemarkslab/EVcouplings) makes it, the alignment with its "
                   "align stage (focus-mode A2M), the distance map with its compare stage (DistanceMap.to_file)")
            base = folder / "protein"
            paths = [base / a2m, base / f"{prefix}.csv", base / f"{prefix}.npy"]
            out += [f"{name}: {p} ({how})" for p in paths if not p.is_file()]
            continue
        keys = ("potts_synthetic",) if name == "synthetic" else ("pf00018_a2m", "pf00018_summary")
        for key in keys:
            path = folder / PROTEIN_FILES[key].relpath
            if not path.is_file():
                out.append(f"{name}: {path} (download {PROTEIN_FILES[key].url})")
    return out
