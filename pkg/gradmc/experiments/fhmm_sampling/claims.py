"""Claims of GWG Sec. 5.1 / Fig. 5 (EXPERIMENTS.md A4) on the tidy fhmm_sampling metrics, as effects with 95%
intervals.

The paper's words (``QUOTES["best_both"]``, the caption of Fig. 5): GWG "performs best in both evaluations",
the log joint density (left panel) and the reconstruction error (right panel), "outperforming the Hamming Ball
sampler which exploits model structure". "Best" is a claim against every sampler the figure shows (Gibbs-1,
Gibbs-2, HB-10-1, Block-HB), on both metrics; so:

- "GWG reaches a higher log joint than X", for every other sampler X the paper ran: final mean log p(x, y)
  GWG - X (nats), > 0 (direction +1). Test: superiority (no margin).
- "GWG reaches a lower reconstruction error than X", for the same X: final mean reconstruction error
  sum_t (W^T x_t + b - y_t)^2 GWG - X, < 0 (direction -1). Test: superiority (no margin). (The paper plots
  the log of this error; the log is monotone, and the per-seed difference is taken on the raw error.)

A replicate is one SEED: each seed draws its own random FHMM and observation y, shared by every sampler of
that seed (:mod:`gradmc.experiments.fhmm_sampling`), and the metrics are already means over the seed's chains
(set statistics). So samplers are paired by seed, and the interval is a paired t interval over seeds of the
per-seed difference at each run's last recorded step (:func:`gradmc.claims.stats.paired_t_interval`);
fewer than 5 seeds give an unbounded interval.

Needs (read from the config, :func:`gradmc.claims.base.at_least`), every claim: the paper's model and run
length (App. G: "a random FHMM with 1000 time-steps and a 10-dimensional hidden state", all samplers run for
"10,000 steps"), i.e. ``fhmm_sampling.L`` >= 1,000, ``fhmm_sampling.K`` >= 10, ``fhmm_sampling.num_steps``
>= 10,000, and ``fhmm_sampling.seeds`` with >= 5 seeds (the paired t interval's least). Which sampler comes
out ahead depends on the chain length per latent bit (Block-HB updates one random time step per step), so a
shorter, smaller run does not decide the paper's comparison.

The later samplers (:func:`gradmc.samplers.discrete.registry.is_later_sampler`) are rows of the figure and its
table only: the paper never ran them, so "GWG beats X" against them is no claim of the paper and is not made.
The paper prints no numbers for Fig. 5 (curves only): no agreement claim.
"""

from __future__ import annotations

import pandas as pd

from gradmc.claims.base import Claim, Need, at_least
from gradmc.claims.stats import MIN_T_REPLICATES, paired_t_interval
from gradmc.samplers.discrete.registry import is_later_sampler

__all__ = ["claims", "needs", "PAPER_L", "PAPER_K", "PAPER_STEPS", "QUOTES"]

EXPERIMENT = "fhmm_sampling"
PAPER = "GWG Fig. 5"
PAPER_L = 1000
PAPER_K = 10
PAPER_STEPS = 10000

QUOTES = {
    "best_both": "GWG performsbest in both evaluations, outperforming the Hamming Ball samplerwhich exploits model "
                 "structure.",
}
"""The GWG sentences the claims test, verbatim as stored (Fig. 5's caption; the stored text joins some words)."""


def needs(config: dict | None) -> tuple[Need, ...]:
    """The paper's FHMM size, run length and the seeds a paired t interval needs (module docstring)."""
    setting = "GWG App. G: a random FHMM with 1000 time-steps and a 10-dimensional hidden state"
    return (at_least(config, "fhmm_sampling.L", PAPER_L, "FHMM time steps L", why=setting),
            at_least(config, "fhmm_sampling.K", PAPER_K, "FHMM hidden factors K", why=setting),
            at_least(config, "fhmm_sampling.num_steps", PAPER_STEPS, "sampler steps",
                     why="GWG App. G: all samplers run for 10,000 steps"),
            at_least(config, "fhmm_sampling.seeds", MIN_T_REPLICATES, "seeds", reduce=len,
                     why=f"a paired t interval over seeds needs at least {MIN_T_REPLICATES}"))


def _final(df: pd.DataFrame, sampler: str, metric: str) -> pd.Series:
    """``metric`` (a mean over chains) per seed at each seed's last recorded step, indexed by seed."""
    m = df[(df["sampler"] == sampler) & (df["metric"] == metric)]
    last = m.groupby("seed")["step"].transform("max")
    return m[m["step"] == last].groupby("seed")["value"].mean()


def _note(df: pd.DataFrame, extra: str = "") -> str:
    steps = int(df[df["metric"] == "log_joint"]["step"].max())
    parts = [f"{steps} steps (paper {PAPER_STEPS})"] if steps < PAPER_STEPS else []
    return "; ".join(parts + ([extra] if extra else []))


def _claim(df: pd.DataFrame, other: str, metric: str, claim: str, what: str, direction: int, note: str,
           need: tuple[Need, ...]) -> Claim | None:
    a, b = _final(df, "GWG", metric), _final(df, other, metric)
    seeds = sorted(set(a.index) & set(b.index))
    if not seeds:
        return None
    iv = paired_t_interval(a[seeds].to_numpy(), b[seeds].to_numpy(), "seeds")
    side = "GWG higher" if direction > 0 else "GWG lower"
    return Claim(EXPERIMENT, PAPER, claim, f"final {what} GWG - {other} (mean over seeds, paired by seed); "
                 f"{'>' if direction > 0 else '<'} 0: {side}", iv, direction,
                 f"final {what} over {len(seeds)} seeds: GWG {float(a[seeds].mean()):.4g} vs {other} "
                 f"{float(b[seeds].mean()):.4g}", note, quote=QUOTES["best_both"], origin="GWG",
                 test="superiority", needs=need)


def claims(df: pd.DataFrame, config: dict | None = None) -> list[Claim]:
    """GWG's final log joint above, and its final reconstruction error below, each other sampler's the paper
    ran (the later samplers excepted, see the module docstring)."""
    present = set(df[df["metric"] == "log_joint"]["sampler"])
    out: list[Claim] = []
    if "GWG" not in present:
        return out
    need = needs(config)
    others = sorted(s for s in present - {"GWG"} if not is_later_sampler(s))
    for other in others:
        c = _claim(df, other, "log_joint", f"GWG reaches a higher log joint than {other}", "mean log p(x, y)", +1,
                   _note(df), need)
        if c is not None:
            out.append(c)
    for other in others:
        c = _claim(df, other, "recon_error", f"GWG reaches a lower reconstruction error than {other}",
                   "mean reconstruction error", -1,
                   _note(df, "near the posterior every sampler's error is about L * sigma^2, so it separates "
                         "the samplers less than the log joint"), need)
        if c is not None:
            out.append(c)
    return out
