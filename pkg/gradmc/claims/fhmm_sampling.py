"""Claims of GWG Fig. 5 (EXPERIMENTS.md A4) on the tidy fhmm_sampling metrics, as effects with 95% intervals.

A replicate is one SEED: each seed draws its own random FHMM and observation y, shared by every sampler of
that seed (:mod:`gradmc.experiments.fhmm_sampling`), and the metrics are already means over the seed's chains
(set statistics). So samplers are paired by seed, and the interval is a paired t interval over seeds of the
per-seed difference at each run's last recorded step (:func:`gradmc.claims.stats.paired_t_interval`);
fewer than 5 seeds give an unbounded interval (INCONCLUSIVE).

- "GWG reaches a higher log joint than X" (every other sampler X the paper could have compared, i.e. not one of
  the later samplers PAS-L, DMALA, DULA, DLMC, DLMC-Euler, ACS): final mean log p(x, y) GWG - X, > 0.
- "GWG reaches a lower reconstruction error than Block-HB": final mean reconstruction error GWG - Block-HB, < 0.

The later samplers (:func:`gradmc.samplers.discrete.registry.is_later_sampler`) are rows of the figure and its
table only: the paper never ran them, so "GWG beats X" against them is no claim of the paper and is not made.

The paper prints no numbers for Fig. 5.
"""

from __future__ import annotations

import pandas as pd

from gradmc.claims.base import Claim
from gradmc.claims.stats import paired_t_interval
from gradmc.samplers.discrete.registry import is_later_sampler

__all__ = ["claims", "PAPER_STEPS"]

EXPERIMENT = "fhmm_sampling"
PAPER = "GWG Fig. 5"
PAPER_STEPS = 10000


def _final(df: pd.DataFrame, sampler: str, metric: str) -> pd.Series:
    """``metric`` (a mean over chains) per seed at each seed's last recorded step, indexed by seed."""
    m = df[(df["sampler"] == sampler) & (df["metric"] == metric)]
    last = m.groupby("seed")["step"].transform("max")
    return m[m["step"] == last].groupby("seed")["value"].mean()


def _note(df: pd.DataFrame, extra: str = "") -> str:
    steps = int(df[df["metric"] == "log_joint"]["step"].max())
    parts = [f"{steps} steps (paper {PAPER_STEPS})"] if steps < PAPER_STEPS else []
    return "; ".join(parts + ([extra] if extra else []))


def _claim(df: pd.DataFrame, other: str, metric: str, claim: str, what: str, direction: int, note: str) -> Claim | None:
    a, b = _final(df, "GWG", metric), _final(df, other, metric)
    seeds = sorted(set(a.index) & set(b.index))
    if not seeds:
        return None
    iv = paired_t_interval(a[seeds].to_numpy(), b[seeds].to_numpy(), "seeds")
    side = "GWG higher" if direction > 0 else "GWG lower"
    return Claim(EXPERIMENT, PAPER, claim, f"final {what} GWG - {other} (mean over seeds, paired by seed); "
                 f"{'>' if direction > 0 else '<'} 0: {side}", iv, direction,
                 f"final {what} over {len(seeds)} seeds: GWG {float(a[seeds].mean()):.4g} vs {other} "
                 f"{float(b[seeds].mean()):.4g}", note)


def claims(df: pd.DataFrame, config: dict | None = None) -> list[Claim]:
    """GWG's final log joint above each other sampler's (the later samplers excepted, see the module docstring);
    GWG's final reconstruction error below Block-HB's."""
    present = set(df[df["metric"] == "log_joint"]["sampler"])
    out: list[Claim] = []
    if "GWG" not in present:
        return out
    note = _note(df)
    for other in sorted(s for s in present - {"GWG"} if not is_later_sampler(s)):
        c = _claim(df, other, "log_joint", f"GWG reaches a higher log joint than {other}", "mean log p(x, y)", +1,
                   note)
        if c is not None:
            out.append(c)
    if "Block-HB" in present:
        c = _claim(df, "Block-HB", "recon_error", "GWG reaches a lower reconstruction error than Block-HB",
                   "mean reconstruction error", -1,
                   _note(df, "near the posterior every sampler's error is about L * sigma^2, so it separates "
                         "the samplers less than the log joint"))
        if c is not None:
            out.append(c)
    return out
