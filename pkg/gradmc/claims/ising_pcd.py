"""Claims of GWG Fig. 6 / Fig. 11 (EXPERIMENTS.md A5) on the tidy ising_pcd metrics, as effects with 95% intervals.

The measurement is ``final_log_rmse``: log RMSE of the learned couplings J against the true J at the end of
PCD training, one number per (true model, sampler, K, seed). A seed is one PCD run; the true model is the same
for every seed (it is the target), and each seed's GWG and Gibbs-1 runs learn from the same data set, so the
two samplers are paired by seed.

1. Per true model and per K run (Fig. 11): "PCD with GWG learns J better than with Gibbs-1 at equal K".
   Effect: final log RMSE(J) GWG - Gibbs-1 at that K, paired by seed; < 0: GWG closer (direction -1).
   Replicate: a seed; interval: paired t over seeds (unbounded below 5 seeds: INCONCLUSIVE).
2. Per true model (Fig. 6, "better solutions with lower computational cost"): "GWG with the fewest MCMC
   steps per iteration learns J better than Gibbs-1 with the most". One GWG step costs about one Gibbs-1
   step here (both make two dense evaluations of the model per step). Effect: final log RMSE(J) of GWG at
   K_min - Gibbs-1 at K_max, paired by seed; < 0: GWG closer (direction -1). Replicate: a seed; paired t.
The paper prints no numbers for these figures (curves only), so there is no agreement claim. Seeds present
for only one side of a pair are dropped from that pair.
"""

from __future__ import annotations

import pandas as pd

from gradmc.claims.base import Claim
from gradmc.claims.stats import paired_t_interval

__all__ = ["claims", "PAPER_ITERATIONS", "PAPER_STEPS"]

PAPER_ITERATIONS = 10_000  # our paper config (the paper does not state the Ising training length)
PAPER_STEPS = (5, 10, 25, 50, 100)
_EFFECT = "final log RMSE(J) {a} - {b} (paired by seed); < 0: GWG closer to the true J"


def _label(row: pd.Series) -> str:
    if row["model"] == "lattice":
        return f"{row['side']}x{row['side']} lattice, theta = {row['theta']:g}"
    return f"Erdos-Renyi graph, D = {row['dim']}"


def _note(iterations: int, ks: list[int]) -> str:
    if iterations >= PAPER_ITERATIONS and set(PAPER_STEPS) <= set(ks):
        return "replicate: one PCD run (seed) per sampler on the same true model"
    return (f"replicate: one PCD run (seed) on the same true model; only {iterations} PCD iterations and K in {ks} "
            f"(paper config {PAPER_ITERATIONS} iterations, K in {list(PAPER_STEPS)}): reduced sizes")


def _pair(t: pd.DataFrame, sampler_a: str, k_a: int, sampler_b: str, k_b: int) -> tuple[pd.Series, pd.Series]:
    """Per-seed values of (sampler_a at K = k_a) and (sampler_b at K = k_b), on the seeds both have."""
    a = t[(t["sampler"] == sampler_a) & (t["K"] == k_a)].groupby("seed")["value"].mean()
    b = t[(t["sampler"] == sampler_b) & (t["K"] == k_b)].groupby("seed")["value"].mean()
    seeds = a.index.intersection(b.index)
    return a.loc[seeds], b.loc[seeds]


def _claim(paper: str, statement: str, effect_name: str, a: pd.Series, b: pd.Series, names: tuple[str, str],
           note: str) -> Claim:
    iv = paired_t_interval(a.to_numpy(), b.to_numpy(), "seeds")
    measured = (f"final log RMSE(J), mean over {len(a)} seeds: {names[0]} {a.mean():.3f} vs {names[1]} "
                f"{b.mean():.3f}")
    return Claim("ising_pcd", paper, statement, effect_name, iv, -1, measured, note)


def claims(df: pd.DataFrame, config: dict | None = None) -> list[Claim]:
    """Claims 1 (per model and K) and 2 (per model, K_min vs K_max; only with >= 2 K) of the module docstring.
    Models without both samplers (on a common seed) are skipped."""
    fin = df[df["metric"] == "final_log_rmse"]
    if not len(fin):
        return []
    iterations = int(fin["step"].max())
    out: list[Claim] = []
    for _, t in fin.groupby("target", sort=False):
        samplers = set(t["sampler"])
        if not {"GWG", "Gibbs-1"} <= samplers:
            continue
        label = _label(t.iloc[0])
        ks = sorted(int(k) for k in set(t.loc[t["sampler"] == "GWG", "K"]) & set(t.loc[t["sampler"] == "Gibbs-1", "K"]))
        note = _note(iterations, ks)
        for k in ks:
            a, b = _pair(t, "GWG", k, "Gibbs-1", k)
            if len(a):
                out.append(_claim("GWG Fig. 11", f"PCD with GWG learns J better than with Gibbs-1 at K = {k} ({label})",
                                  _EFFECT.format(a=f"GWG(K={k})", b=f"Gibbs-1(K={k})"), a, b,
                                  (f"GWG K = {k}", f"Gibbs-1 K = {k}"), note))
        if len(ks) >= 2:
            a, b = _pair(t, "GWG", ks[0], "Gibbs-1", ks[-1])
            if len(a):
                out.append(_claim("GWG Fig. 6", f"GWG with the fewest MCMC steps per iteration (K = {ks[0]}) learns J "
                                  f"better than Gibbs-1 with the most (K = {ks[-1]}) ({label})",
                                  _EFFECT.format(a=f"GWG(K={ks[0]})", b=f"Gibbs-1(K={ks[-1]})"), a, b,
                                  (f"GWG K = {ks[0]}", f"Gibbs-1 K = {ks[-1]}"), note))
    return out
