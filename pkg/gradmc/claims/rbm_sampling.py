"""Claims of GWG Fig. 3 / Fig. 9 (EXPERIMENTS.md A1) on the tidy rbm_sampling metrics, as effects with 95% intervals.

Every (sampler, seed) shard samples the SAME trained MNIST RBM with ``num_chains`` independent chains, so:

- ESS claims ("GWG's ESS is larger than X's", Fig. 3 right): a replicate is one CHAIN. The per-chain ``ess``
  rows (chain >= 0) of all seeds are pooled (every chain is an independent run on one target); the effect is
  log(mean ESS GWG / mean ESS X), its interval a percentile bootstrap over chains, each sampler's chains
  resampled independently (:func:`gradmc.claims.stats.bootstrap_interval`). Chains with a non-finite ESS
  (NaN: the statistic never moved) are left out; ``measured`` gives the chain counts used.
- log MMD claims (Fig. 3 left, Fig. 9): the log MMD is a statistic of the SET of a shard's chains, so a
  replicate is one SEED. The effect is the mean over seeds of final log10 MMD^2 (at the last recorded step)
  of the paper's better sampler minus the other's, with a t interval of the per-seed differences
  (:func:`gradmc.claims.stats.paired_t_interval`). The two samplers of a seed do not share random numbers
  (each shard seeds its own stream), so the pairing by seed number is arbitrary, but every seed's difference
  is still an independent replicate, so the interval is valid. Fewer than 5 seeds: unbounded, INCONCLUSIVE.
  A seed with a non-finite final log MMD (-inf, identical sets: tiny runs only) is left out; ``measured``
  gives the seeds used.

The paper's "GWG reaches the block-Gibbs target" (Fig. 3, the Target line) has no printed margin, and the
metrics hold ONE target value (``log_mmd_target``, seed -1: one pair of independent reference sets), so
there is no spread of the target with which to set an agreement tolerance. It is tested as direction
claims instead: GWG's final log MMD is lower than each of Gibbs-1's, Gibbs-2's and HB-10-1's; the gap of
GWG to the target is reported in ``measured`` only. The paper prints no numbers for Fig. 3 / Fig. 9.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from gradmc.claims.base import Claim
from gradmc.claims.stats import bootstrap_interval, log_ratio_of_means, paired_t_interval

__all__ = ["claims", "PAPER_STEPS", "LATER"]

EXPERIMENT = "rbm_sampling"
PAPER_STEPS = 10_000
BASELINES = ("Gibbs-1", "Gibbs-2", "HB-10-1")
MULTI = ("GWG-3", "GWG-5")
# Later samplers' own headline RBM comparisons with GWG (our reading of each paper's RBM-sampling section; the
# papers print curves, no numbers): sampler -> (source, test ESS?, test final log MMD?)
LATER = {"DMALA": ("DMALA (Zhang et al. 2022) RBM sampling", True, True),
         "ACS": ("ACS (Pynadath et al. 2024) RBM sampling", False, True)}


def _chain_ess(df: pd.DataFrame, sampler: str):
    """Per-chain ESS of ``sampler``, chains of all seeds pooled (one value per chain)."""
    d = df[(df["sampler"] == sampler) & (df["metric"] == "ess") & (df["chain"] >= 0)]
    values = d["value"].to_numpy(dtype=float)
    return values[np.isfinite(values)]  # ArviZ gives NaN for a chain whose statistic never moved


def _final_mmd(df: pd.DataFrame, sampler: str) -> pd.Series:
    """Final log10 MMD^2 per seed (at each seed's last recorded step), indexed by seed."""
    m = df[(df["sampler"] == sampler) & (df["metric"] == "log_mmd")]
    last = m.groupby("seed")["step"].transform("max")
    final = m[m["step"] == last].groupby("seed")["value"].mean()
    return final[np.isfinite(final)]  # -inf: the chains equal the ground truth set exactly (tiny runs only)


def _mmd_claim(df: pd.DataFrame, better: str, other: str, paper: str, claim: str, note: str) -> Claim | None:
    a, b = _final_mmd(df, better), _final_mmd(df, other)
    seeds = sorted(set(a.index) & set(b.index))
    if not seeds:
        return None
    iv = paired_t_interval(a[seeds].to_numpy(), b[seeds].to_numpy(), "seeds")
    target = df[df["metric"] == "log_mmd_target"]["value"]
    gap = f"; target (two reference sets) {float(target.mean()):.3f}" if len(target) else ""
    return Claim(EXPERIMENT, paper, claim,
                 f"final log10 MMD^2 {better} - {other} (mean over seeds, paired by seed number); < 0: {better} "
                 "closer to the ground truth", iv, -1,
                 f"final log10 MMD^2 over {len(seeds)} seeds: {better} {float(a[seeds].mean()):.3f} vs {other} "
                 f"{float(b[seeds].mean()):.3f}{gap}", note)


def claims(df: pd.DataFrame, config: dict | None = None) -> list[Claim]:
    """GWG's ESS above Gibbs-1/2's and HB-10-1's; GWG's final log MMD below theirs; GWG-3/5's below GWG's;
    the later samplers' headline comparisons with GWG (:data:`LATER`) where they ran."""
    present = set(df["sampler"]) - {"Target"}
    out: list[Claim] = []
    if "GWG" not in present:
        return out
    steps = int(df[df["metric"] == "log_mmd"]["step"].max())
    note = f"{steps} steps (paper {PAPER_STEPS:,})" if steps < PAPER_STEPS else ""
    gwg = _chain_ess(df, "GWG")
    for other in (o for o in BASELINES if o in present):
        ess = _chain_ess(df, other)
        if len(gwg) and len(ess):
            iv = bootstrap_interval(log_ratio_of_means, [gwg, ess], "chains")
            out.append(Claim(EXPERIMENT, "GWG Fig. 3", f"GWG ESS > {other} ESS on the MNIST RBM",
                             f"log(mean per-chain ESS GWG / {other}), chains of all seeds pooled; > 0: GWG larger",
                             iv, +1, f"mean ESS over chains: GWG {gwg.mean():.3g} ({len(gwg)} chains) vs {other} "
                             f"{ess.mean():.3g} ({len(ess)} chains)", note))
    for other in (o for o in BASELINES if o in present):
        c = _mmd_claim(df, "GWG", other, "GWG Fig. 3", f"GWG's final log MMD is lower than {other}'s", note)
        if c is not None:
            out.append(c)
    for name, (source, test_ess, test_mmd) in LATER.items():
        if name not in present:
            continue
        ess = _chain_ess(df, name)
        if test_ess and len(gwg) and len(ess):
            iv = bootstrap_interval(log_ratio_of_means, [ess, gwg], "chains")
            out.append(Claim(EXPERIMENT, source, f"{name} ESS > GWG ESS on the MNIST RBM",
                             f"log(mean per-chain ESS {name} / GWG), chains of all seeds pooled; > 0: {name} larger",
                             iv, +1, f"mean ESS over chains: {name} {ess.mean():.3g} ({len(ess)} chains) vs GWG "
                             f"{gwg.mean():.3g} ({len(gwg)} chains)", note))
        if test_mmd:
            c = _mmd_claim(df, name, "GWG", source, f"{name}'s final log MMD is lower than GWG's", note)
            if c is not None:
                out.append(c)
    for multi in (m for m in MULTI if m in present):
        c = _mmd_claim(df, multi, "GWG", "GWG Fig. 9", f"{multi} converges faster than GWG (lower final log MMD)",
                       note)
        if c is not None:
            out.append(c)
    return out
