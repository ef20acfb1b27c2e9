"""Protein data for the GWG Potts experiment (A6; GWG paper Sec. 5.4, Appendix H).

alignment: A2M reader and the 21-state alphabet; weights: sequence reweighting and Neff; contacts:
coupling norms, APC, contact maps, precision/recall curves; loaders: PF00018, the synthetic Potts
benchmark and EVcouplings-style inputs (OPSD_BOVIN, CADH1_HUMAN); scoring (``gradmc.proteins.scoring``,
not imported here: it needs gradmc.training): the k grid, top-L APC precision, the coupling RMSE. PLM lives
in gradmc.training.plm.
"""

from gradmc.proteins.alignment import ALPHABET, GAP, NUM_STATES, decode, one_hot, read_a2m
from gradmc.proteins.contacts import (
    DEFAULT_CUTOFF,
    DEFAULT_MIN_SEPARATION,
    apc,
    contact_curve,
    contact_map,
    coupling_norms,
    precision_at_k,
    rank_pairs,
)
from gradmc.proteins.loaders import (
    EVCOUPLINGS_FILES,
    PROTEIN_FILES,
    PROTEIN_NAMES,
    ProteinData,
    load_evcouplings_protein,
    load_pf00018,
    load_protein,
    load_synthetic_potts,
    missing_files,
)
from gradmc.proteins.weights import DEFAULT_THETA, neff, sequence_weights

__all__ = [
    "ALPHABET",
    "GAP",
    "NUM_STATES",
    "read_a2m",
    "one_hot",
    "decode",
    "sequence_weights",
    "neff",
    "DEFAULT_THETA",
    "coupling_norms",
    "apc",
    "contact_map",
    "rank_pairs",
    "contact_curve",
    "precision_at_k",
    "DEFAULT_CUTOFF",
    "DEFAULT_MIN_SEPARATION",
    "ProteinData",
    "PROTEIN_FILES",
    "EVCOUPLINGS_FILES",
    "PROTEIN_NAMES",
    "load_pf00018",
    "load_synthetic_potts",
    "load_evcouplings_protein",
    "load_protein",
    "missing_files",
]
