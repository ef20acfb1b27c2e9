"""Claims of GWG Fig. 4 (EXPERIMENTS.md A3) on the tidy ising_sampling metrics, as effects with 95% intervals.

A replicate is one CHAIN: the lattice Ising model of a (side, theta) is deterministic (no random parameters),
every chain of every seed and chunk starts independently and runs on that one target, and the statistic's
reference configuration is the same for all samplers of a (side, theta). The per-chain ``ess`` rows
(chain >= 0) of all seeds and chunks are pooled per (side, theta, sampler); a chain with a non-finite ESS
(NaN: its statistic never moved) is left out, and ``measured`` gives the chain counts used.

- "GWG ESS > Gibbs-1 ESS on the largest lattice at theta >= 0.3": one claim per such theta (or, when the
  grid has none, its largest theta); effect log(mean ESS GWG / mean ESS Gibbs-1), > 0; interval a percentile
  bootstrap over chains, the two samplers' chains resampled independently.
- "GWG's ESS advantage over Gibbs-1 grows with theta" (per side): effect
  log(mean GWG / mean Gibbs-1) at the largest theta minus the same at the smallest, > 0; percentile bootstrap
  over chains of the four independent samples (GWG and Gibbs-1 at each of the two thetas).
- Later samplers (:data:`LATER`, e.g. "DMALA ESS > GWG ESS on the largest lattice at theta >= 0.3", our
  reading of the DMALA paper's lattice-Ising comparison): effect log(mean ESS X / mean ESS GWG), > 0, the
  same bootstrap over chains; made whenever X and GWG ran, with or without Gibbs-1.

The theta >= 0.3 cut-off (STRONG_THETA) is kept from the earlier claims: it names the strong-coupling end of the
sweep, this project's reading of Fig. 4 (the paper prints no ESS numbers and no cut-off). It selects which
thetas are tested; it is not a margin on the effect.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from gradmc.claims.base import Claim
from gradmc.claims.stats import bootstrap_interval, log_ratio_of_means

__all__ = ["claims", "PAPER_STEPS", "STRONG_THETA", "LATER"]

EXPERIMENT = "ising_sampling"
PAPER = "GWG Fig. 4"
PAPER_STEPS = 100_000
STRONG_THETA = 0.3
# Later samplers' headline lattice-Ising comparison with GWG (ESS at strong coupling on the largest lattice; our
# reading of each paper's Ising section, which prints curves, no numbers): sampler -> source
LATER = {"DMALA": "DMALA (Zhang et al. 2022) lattice Ising"}


def _chains(df: pd.DataFrame) -> dict[tuple[int, float, str], np.ndarray]:
    """(side, theta, sampler) -> per-chain ESS, chains of all seeds and chunks pooled."""
    d = df[(df["metric"] == "ess") & (df["chain"] >= 0) & np.isfinite(df["value"])]  # NaN: a chain that never moved
    return {(int(s), float(t), str(n)): part["value"].to_numpy(dtype=float)
            for (s, t, n), part in d.groupby(["side", "theta", "sampler"])}


def _growth(g_hi: np.ndarray, b_hi: np.ndarray, g_lo: np.ndarray, b_lo: np.ndarray) -> float:
    """log(mean g_hi / mean b_hi) - log(mean g_lo / mean b_lo)."""
    return log_ratio_of_means(g_hi, b_hi) - log_ratio_of_means(g_lo, b_lo)


def claims(df: pd.DataFrame, config: dict | None = None) -> list[Claim]:
    """GWG ESS > Gibbs-1 ESS on the largest lattice at strong coupling; GWG's advantage grows with theta; each
    later sampler of :data:`LATER` that ran beats GWG's ESS there too."""
    if "GWG" not in set(df["sampler"]):
        return []
    ess = _chains(df)
    steps = int(df["step"].max())
    note = f"{steps} steps per chain; the paper runs {PAPER_STEPS:,}" if steps < PAPER_STEPS else ""
    out = []
    side = int(df["side"].max())
    for name, source in LATER.items():
        later = sorted({t for s, t, _ in ess if s == side and (s, t, name) in ess and (s, t, "GWG") in ess})
        for t in [t for t in later if t >= STRONG_THETA - 1e-12] or later[-1:]:
            a, g = ess[(side, t, name)], ess[(side, t, "GWG")]
            iv = bootstrap_interval(log_ratio_of_means, [a, g], "chains")
            out.append(Claim(EXPERIMENT, source, f"{name} ESS > GWG ESS on the {side}x{side} lattice at theta {t:g}",
                             f"log(mean per-chain ESS {name} / GWG), chains of all seeds pooled; > 0: {name} larger",
                             iv, +1, f"mean ESS: {name} {a.mean():.3g} ({len(a)} chains) vs GWG {g.mean():.3g} "
                             f"({len(g)} chains)", note))
    thetas = sorted({t for s, t, _ in ess if s == side and (s, t, "GWG") in ess and (s, t, "Gibbs-1") in ess})
    for t in [t for t in thetas if t >= STRONG_THETA - 1e-12] or thetas[-1:]:
        g, b = ess[(side, t, "GWG")], ess[(side, t, "Gibbs-1")]
        iv = bootstrap_interval(log_ratio_of_means, [g, b], "chains")
        out.append(Claim(EXPERIMENT, PAPER, f"GWG ESS > Gibbs-1 ESS on the {side}x{side} lattice at theta {t:g}",
                         "log(mean per-chain ESS GWG / Gibbs-1), chains of all seeds pooled; > 0: GWG larger", iv, +1,
                         f"mean ESS: GWG {g.mean():.3g} ({len(g)} chains) vs Gibbs-1 {b.mean():.3g} "
                         f"({len(b)} chains)", note))
    for s in sorted({s for s, _, _ in ess}):
        ts = sorted({t for ss, t, _ in ess if ss == s and (s, t, "GWG") in ess and (s, t, "Gibbs-1") in ess})
        if len(ts) < 2:
            continue
        lo, hi = ts[0], ts[-1]
        samples = [ess[(s, hi, "GWG")], ess[(s, hi, "Gibbs-1")], ess[(s, lo, "GWG")], ess[(s, lo, "Gibbs-1")]]
        iv = bootstrap_interval(_growth, samples, "chains")
        r_hi, r_lo = (math.exp(log_ratio_of_means(*samples[:2])), math.exp(log_ratio_of_means(*samples[2:])))
        out.append(Claim(EXPERIMENT, PAPER, f"GWG's ESS advantage over Gibbs-1 grows with theta ({s}x{s} lattice)",
                         f"log(mean ESS GWG / Gibbs-1) at theta {hi:g} minus at theta {lo:g}, chains pooled; "
                         "> 0: the advantage grows", iv, +1,
                         f"ESS ratio GWG / Gibbs-1: {r_hi:.3g} at theta {hi:g} vs {r_lo:.3g} at theta {lo:g} "
                         f"(chains: {', '.join(str(len(x)) for x in samples)})", note))
    return out
