"""GWG paper Sec. 5.4, Fig. 7, 12, 13, Appendix H (EXPERIMENTS.md A6): Potts models for protein contacts.

Shards: one per (protein, method, seed), method in PLM, PCD-Gibbs, PCD-GWG (the paper's) or PCD-DMALA / PCD-DLMC
(later samplers, not in the paper), seed in ``seeds`` (independent
replicates: the seed drives the subsample, the weighted resampling of the rows, the PCD buffer and chains).
PLM (L-BFGS from zero on fixed data) is deterministic given the data, so with ``num_sequences`` = 0 (all rows)
it runs once, with the first seed, and the claims use that one fit against every PCD seed; with a subsample
(``num_sequences`` > 0) the data change with the seed and PLM runs once per seed too. Proteins from ``$GRADMC_DATA_DIR``
through :mod:`gradmc.proteins` loaders: ``PF00018`` (Pfam SH3 alignment, contacts = distance < 5 A),
``synthetic`` (Ingraham & Marks' benchmark with known h, J, contact map C) and, for users who have the
EVcouplings files, ``OPSD_BOVIN`` and ``CADH1_HUMAN``. :func:`shards` checks every file first: a missing public
file stops the run before any work, naming each file and where to get it; the EVcouplings proteins (not public) are
skipped when their files are missing (:func:`runnable_proteins`), and their claims read NOT RUN.

Data: ``num_sequences`` > 0 keeps a random subset of that many rows (the same for every method: seeded by
protein and seed). Real alignments are reweighted (w_n = 1 / #neighbours at identity >= theta, theta = 0.8); the
synthetic rows are i.i.d. draws of the true model and keep weight 1 (as in the GWG release).
- PLM: :func:`gradmc.training.plm.fit_plm` (weighted pseudo-likelihood, L-BFGS; l2 strengths by default the
  plmc / EVcouplings ones, optional group-l1), ``plm.max_iterations`` iterations in ``plm.dtype``.
- PCD-Gibbs / PCD-GWG / PCD-DMALA / PCD-DLMC: :class:`gradmc.training.pcd.PCD` on
  :class:`gradmc.training.potts_models.PottsModel` (J = 0, fields at the weighted profile
  log((counts + 1) / (Neff + q)) centred, or 0), negatives from ``Gibbs-1``, ``GWG`` or ``DMALA`` (categorical;
  one step = one site update / one proposed change / one proposal that changes each site independently, step
  size alpha = 0.2, Metropolis-adjusted; one function+gradient evaluation per step like GWG) or ``DLMC``
  (categorical: each site's q-state flow for tau = e / L by a q x q matrix exponential, Metropolis-adjusted), Adam,
  block-l1 ``block_l1`` * sum_{i<j} ||J_ij||_F (Eq. 34 on the paper's Eq. 13 J; see potts_models). Paper:
  buffer 2,560, batch 256 + 256, 50 steps, 10,000 iterations, strength 0.01. Sequence weights enter the
  data batches by systematic resampling of the rows (``systematic_resample``: PCD draws rows uniformly).

Metrics (tidy rows, target = protein, sampler = method, seed = the shard's seed, chain = -1; extra int64
columns ``length`` = L and ``k``, ``i``, ``j``, -1 where they do not apply):
- ``precision``, ``recall`` (raw ||J_ij||_F over all q states: the paper's score) and ``precision_apc``,
  ``recall_apc`` (APC-corrected) of the top-k pairs with j - i >= ``min_separation``, step = 0 and column
  ``k``, for k on a grid up to ``max_k_factor`` * L that always holds L/5, L/2 and L
  (:func:`gradmc.proteins.scoring.k_grid`);
- ``coupling_norm`` (raw ||J_ij||_F) and ``contact`` (1/0, NaN where the structure has no residue) as
  L x L matrices, one row per cell, step = 0 and columns ``i``, ``j``; synthetic also ``true_coupling_norm``
  (of the true J);
- synthetic only: ``coupling_rmse`` = RMSE over all entries of the blocks i < j of learned minus true J,
  both moved to the zero-sum gauge (``plm.zero_sum_gauge``: the gauge in which equal distributions have
  equal J), and ``coupling_norm_rmse`` (the same over the block norms);
- ``train_time_s`` (fit wall time), ``sampler_time_s`` (PCD), ``num_iterations``, ``neff``, ``num_sequences``;
- PCD curves every ``log_every`` iterations (step = iteration): ``train_precision_at_L_apc`` and, on the
  synthetic benchmark, ``train_coupling_rmse``.
``energy_evals``/``grad_evals``: PCD sampler evaluations (per chain batch) or PLM objective+gradient
evaluations; ``wall_time_s``: the fit time.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import pandas as pd
import torch

from gradmc.data.registry import data_dir as default_data_dir
from gradmc.errors import ConfigError, MissingDataError
from gradmc.experiments.runner import tidy_frame
from gradmc.proteins import (
    EVCOUPLINGS_FILES,
    ProteinData,
    apc,
    contact_curve,
    coupling_norms,
    load_protein,
    load_synthetic_potts,
    missing_files,
    one_hot,
    sequence_weights,
)
from gradmc.proteins.scoring import coupling_rmse, k_grid, top_l_precision_apc
from gradmc.samplers.discrete.registry import make_sampler
from gradmc.seeding import make_generator, seed_from
from gradmc.training.pcd import PCD, Penalty
from gradmc.training.plm import fit_plm
from gradmc.training.potts_models import PottsModel, profile_fields, systematic_resample

__all__ = ["EXPERIMENT", "META", "PCD_SAMPLERS", "Shard", "shards", "run", "runnable_proteins", "shard_samplers"]

EXPERIMENT = "potts_proteins"
META = {
    # what `gradmc plan` shortens and how it counts units (gradmc.registry)
    "plan": {"unit": "PLM L-BFGS iteration or PCD iteration",
             "units": {"by": "method", "PLM": "plm.max_iterations", "PCD": "pcd.num_iterations"},
             "lengths": {"potts_proteins.plm.max_iterations": [2, 4], "potts_proteins.pcd.num_iterations": [2, 4]},
             "schedule": {"potts_proteins.pcd.log_every": 1, "potts_proteins.pcd.checkpoint_every": 1000000,
                          "potts_proteins.checkpoint_dir": None},
             "classes": ["protein", "method"]},
    "title": "GWG Fig. 7/12/13: Potts models of proteins, PLM vs PCD-Gibbs vs PCD-GWG (vs later samplers) contacts",
    "message": "Fitting Potts models to {proteins} with {methods}: PCD {pcd[num_iterations]} iterations x "
               "{pcd[num_steps]} steps on Ray",
    "sort_by": ["target", "sampler", "metric", "step", "k", "i", "j"],
    "figure": "fig7_potts_contacts",
    "category": "GWG paper",
    "extra_figures": ["couplings"],
}
#: PCD method -> the categorical sampler (:func:`make_sampler` name, ``state="categorical"``) of its negatives.
PCD_SAMPLERS = {"PCD-Gibbs": "Gibbs-1", "PCD-GWG": "GWG", "PCD-DMALA": "DMALA", "PCD-DLMC": "DLMC"}
#: Scheduling order of the methods, costliest first (higher rank first) to balance the Ray workers: a Gibbs-1
#: step evaluates all q states of a site; a DMALA step (one function+gradient evaluation, then a draw over every
#: site and state) costs about a GWG step, measured 3% more (12.4 vs 12.1 ms, 64 chains, L = 50, q = 21, one
#: thread); PLM last.
_COST_RANK = {"PCD-Gibbs": 4, "PCD-DLMC": 3, "PCD-DMALA": 2, "PCD-GWG": 1, "PLM": 0}


@dataclass(frozen=True)
class Shard:
    """One fit: ``method`` on ``protein`` (files under ``data_dir``, the driver's resolved data folder)."""

    protein: str
    method: str
    data_dir: str
    seed: int
    num_sequences: int
    sample_key: str
    theta: float
    min_separation: int
    max_k_factor: float
    num_k: int
    plm: tuple  # (key, value) pairs of the config's plm section
    pcd: tuple  # (key, value) pairs of the config's pcd section
    device: str
    checkpoint_dir: str | None


def shards(config: dict, inputs: dict[str, str]) -> list[Shard]:
    """Every (protein, method, seed) of ``config['potts_proteins']``, costliest method first; data files checked
    first. PLM gets only the first seed when it fits all rows (``num_sequences`` = 0: it is deterministic).

    The data files are found in the data folder (``$GRADMC_DATA_DIR``), not in ``inputs`` (none).

    Raises:
        ConfigError (a ValueError): a PCD batch larger than its buffer; the old scalar ``seed`` key (now
            ``seeds``, a list).
        FileNotFoundError: public data files missing from the data folder (``$GRADMC_DATA_DIR`` or ``data``), or
            no protein whose files are there; the message lists each with where to get it, and nothing has run
            (:func:`runnable_proteins`: missing EVcouplings proteins are skipped).
    """
    spec = config[EXPERIMENT]
    if "seed" in spec:
        raise ConfigError(f"{EXPERIMENT}.seed ({spec['seed']!r}) was replaced by {EXPERIMENT}.seeds, a list of seeds "
                          f"(one shard per protein, method and seed), e.g. seeds: [{spec['seed']}]")
    seeds = [int(s) for s in spec["seeds"]]
    plm, pcd = dict(spec["plm"]), dict(spec["pcd"])
    if pcd["batch_size"] > pcd["buffer_size"]:
        raise ConfigError(f"{EXPERIMENT}.pcd.batch_size ({pcd['batch_size']}) must be <= buffer_size "
                         f"({pcd['buffer_size']}): each iteration updates batch_size buffer rows")
    folder = default_data_dir().resolve()
    proteins = runnable_proteins(spec["proteins"], folder)
    common = dict(data_dir=str(folder), num_sequences=int(spec["num_sequences"]),
                  sample_key=spec["synthetic_sample_key"], theta=float(spec["theta"]),
                  min_separation=int(spec["min_separation"]), max_k_factor=float(spec["max_k_factor"]),
                  num_k=int(spec["num_k"]), plm=tuple(sorted(plm.items())),
                  pcd=tuple(sorted(pcd.items())), device=config["device"], checkpoint_dir=spec["checkpoint_dir"])
    # Costliest first to balance the Ray workers: PCD-Gibbs (q energy evaluations per step), PCD-DLMC (a q x q matrix
    # exponential per site), PCD-DMALA, PCD-GWG, PLM.
    methods = sorted(spec["methods"], key=lambda m: -_COST_RANK[m])
    def method_seeds(method: str) -> list[int]:
        return seeds[:1] if method == "PLM" and int(spec["num_sequences"]) == 0 else seeds

    return [Shard(protein=p, method=m, seed=s, **common) for m in methods for p in proteins
            for s in method_seeds(m)]


def runnable_proteins(proteins: list[str], folder: Path) -> list[str]:
    """The proteins of ``proteins`` whose files are in the data folder ``folder``, in order.

    A protein whose inputs are not public (the EVcouplings ones, :data:`gradmc.proteins.EVCOUPLINGS_FILES`: the GWG
    authors made them and share them on request) is skipped when its files are missing, with one line on stderr
    naming each file and how to obtain it; its claims then read NOT RUN. Any other missing file stops the run.

    Raises:
        MissingDataError (a FileNotFoundError): a missing file of a public input (the data rules fetch those), or
            no protein left to run; the message lists each missing file with where to get it, and nothing has run.
    """
    public = [p for p in proteins if p not in EVCOUPLINGS_FILES]
    missing = missing_files(public, folder)
    skipped = {p: missing_files([p], folder) for p in proteins if p in EVCOUPLINGS_FILES}
    skipped = {p: lines for p, lines in skipped.items() if lines}
    if skipped and len(skipped) == len(proteins):
        missing += [line for lines in skipped.values() for line in lines]
    if missing:
        raise MissingDataError(f"{EXPERIMENT}: {len(missing)} data file(s) missing from the data folder {folder} "
                                "(set GRADMC_DATA_DIR to use another); nothing was run:\n  - " + "\n  - ".join(missing))
    for protein, lines in skipped.items():
        print(f"[{EXPERIMENT}] {protein} not run, its inputs are not in the data folder (they are not public: ask "
              "the GWG authors, or make them with EVcouplings); its claims read NOT RUN:\n  - " + "\n  - ".join(lines),
              file=sys.stderr, flush=True)
    return [p for p in proteins if p not in skipped]


def _load(shard: Shard) -> tuple[ProteinData, np.ndarray]:
    """The (subsampled) alignment and its sequence weights (N,) (ones for the synthetic benchmark)."""
    if shard.protein == "synthetic":
        data = load_synthetic_potts(shard.data_dir, sample_key=shard.sample_key)
    else:
        data = load_protein(shard.protein, shard.data_dir)
    n = data.num_sequences
    if 0 < shard.num_sequences < n:
        gen = make_generator(seed_from(EXPERIMENT, shard.protein, "subsample", shard.num_sequences, shard.seed))
        keep = torch.randperm(n, generator=gen)[:shard.num_sequences].sort().values.numpy()
        data = replace(data, states=data.states[keep], headers=tuple(data.headers[i] for i in keep))
    if data.gap_state is None:
        return data, np.ones(data.num_sequences)
    return data, sequence_weights(data.states, shard.theta, num_states=data.num_states, device=shard.device)


def _fit_plm(shard: Shard, data: ProteinData, weights: np.ndarray):
    opts = dict(shard.plm)
    dtype = getattr(torch, opts.pop("dtype"))
    res = fit_plm(data.states, data.num_states, weights=None if data.gap_state is None else weights, dtype=dtype,
                  device=shard.device, **opts)
    info = {"train_time_s": res.wall_time_s, "energy_evals": res.num_evaluations, "grad_evals": res.num_evaluations,
            "num_iterations": res.num_iterations}
    return res.h, res.J, info, []


def _fit_pcd(shard: Shard, data: ProteinData, weights: np.ndarray):
    opts, dev = dict(shard.pcd), shard.device
    L, q = data.length, data.num_states
    rows = systematic_resample(weights, generator=make_generator(seed_from(EXPERIMENT, shard.protein, "resample",
                                                                           shard.seed)))
    x = one_hot(data.states, q)[rows].to(dev)  # (N, L, q), rows repeated by weight
    h0 = profile_fields(data.states, weights, q) if opts["init_fields"] == "profile" else None
    model = PottsModel(L, q, h=h0).to(dev)
    gen = make_generator(seed_from(EXPERIMENT, shard.protein, shard.method, shard.seed), dev)
    strength = float(opts["block_l1"])
    trainer = PCD(model, make_sampler(PCD_SAMPLERS[shard.method], state="categorical"), x,
                  num_steps=int(opts["num_steps"]), batch_size=int(opts["batch_size"]),
                  buffer_size=int(opts["buffer_size"]), lr=float(opts["lr"]), generator=gen,
                  penalties=[Penalty("block_l1", "J_eq13", strength)] if strength > 0 else [])

    def progress(tr: PCD) -> dict:
        J = tr.model.J.detach().cpu()
        out = {"train_precision_at_L_apc": top_l_precision_apc(J, data.contacts, data.observed, shard.min_separation)}
        if data.true_J is not None:
            out["train_coupling_rmse"] = coupling_rmse(J, tr.model.h.detach().cpu(), data.true_J, data.true_h)[0]
        return out

    checkpoint = None
    if shard.checkpoint_dir:
        from gradmc.experiments.standard import checkpoint_tag  # its code digest names the checkpoint

        digest = checkpoint_tag(EXPERIMENT, shard)
        checkpoint = (Path(shard.checkpoint_dir)
                      / f"{EXPERIMENT}_{shard.protein}_{shard.method}_seed{shard.seed}_{digest}.pt")
    history = trainer.train(int(opts["num_iterations"]), callback=progress, callback_every=int(opts["log_every"]),
                            checkpoint_path=checkpoint, checkpoint_every=int(opts["checkpoint_every"]))
    if checkpoint is not None:
        checkpoint.unlink(missing_ok=True)
    last = history[-1]
    info = {k: last[k] for k in ("train_time_s", "sampler_time_s", "energy_evals", "grad_evals")}
    info["num_iterations"] = last["iteration"]
    return model.h.detach().cpu(), model.J.detach().cpu(), info, history


def shard_samplers(shard: Shard) -> tuple[str, ...]:
    """The sampler a shard trains with: its PCD method's, none for PLM.

    The shard cache keys the shard by these samplers' code (:func:`gradmc.experiments.standard.shard_code_digest`).
    """
    return (PCD_SAMPLERS[shard.method],) if shard.method in PCD_SAMPLERS else ()


def run(shard: Shard) -> pd.DataFrame:
    """Fit one model and score its couplings; tidy rows (see the module docstring).

    Raises:
        FileNotFoundError / ValueError: from the loaders, PLM or PCD.
    """
    data, weights = _load(shard)
    fit = _fit_plm if shard.method == "PLM" else _fit_pcd
    h, J, info, history = fit(shard, data, weights)
    L = data.length
    cost = (int(info["energy_evals"]), int(info["grad_evals"]), float(info["train_time_s"]))
    rows, cells = [], []  # cells: (k, i, j) of each row, -1 where not applicable

    def add(metric: str, step: int, value: float, costs=cost, cell=(-1, -1, -1)) -> None:
        rows.append((shard.method, shard.seed, -1, int(step), metric, float(value), *costs))
        cells.append(cell)

    F = coupling_norms(J)
    for suffix, scores in (("", F), ("_apc", apc(F))):
        curve = contact_curve(scores, data.contacts, min_separation=shard.min_separation, mask=data.observed)
        for k in k_grid(L, len(curve), shard.max_k_factor, shard.num_k):
            add(f"precision{suffix}", 0, curve["precision"].iloc[k - 1], cell=(k, -1, -1))
            add(f"recall{suffix}", 0, curve["recall"].iloc[k - 1], cell=(k, -1, -1))
    contact = np.where(data.observed | np.eye(L, dtype=bool), data.contacts.astype(float), np.nan)
    matrices = [("coupling_norm", F), ("contact", contact)]
    if data.true_J is not None:
        matrices.append(("true_coupling_norm", coupling_norms(data.true_J)))
        rmse, norm_rmse = coupling_rmse(J, h, data.true_J, data.true_h)
        add("coupling_rmse", 0, rmse)
        add("coupling_norm_rmse", 0, norm_rmse)
    for metric, mat in matrices:
        for s, v in enumerate(np.asarray(mat, dtype=np.float64).ravel()):
            add(metric, 0, v, cell=(-1, *divmod(s, L)))
    for metric in ("train_time_s", "sampler_time_s", "num_iterations"):
        if metric in info:
            add(metric, 0, info[metric])
    add("neff", 0, weights.sum())
    add("num_sequences", 0, data.num_sequences)
    for h_row in history:
        costs = (int(h_row["energy_evals"]), int(h_row["grad_evals"]), float(h_row["train_time_s"]))
        for metric in ("train_precision_at_L_apc", "train_coupling_rmse"):
            if metric in h_row:
                add(metric, h_row["iteration"], h_row[metric], costs)
    df = tidy_frame(rows, EXPERIMENT, shard.protein)
    df.insert(df.columns.get_loc("sampler") + 1, "length", np.int64(L))
    df[["k", "i", "j"]] = np.asarray(cells, dtype=np.int64).reshape(-1, 3)
    return df.astype({"length": "int64", "k": "int64", "i": "int64", "j": "int64"})

