"""Claims of Kernel HMC Fig. 4 right (EXPERIMENTS.md B4) on the tidy kmc_abc metrics.

Reference: the exact ABC posterior marginal of theta_1 (``reference`` rows). Criteria, fixed in advance:
- marginal error of a sampler = |mean - ref mean| / ref sd + |sd / ref sd - 1| over its kept theta_1
  samples pooled over runs (0 = exact first two moments).
- "KMC is not biased": the mean over runs of the per-run theta_1 means is within 3 standard errors
  (sd of the run means / sqrt(runs)) of the reference mean, and the pooled sd within 20% of the reference.
- "HABC is biased": its mean is more than 3 standard errors away, or its pooled sd off by more than 20%.
- "KMC mixes like HABC": both median autocorrelations of theta_1 at lag ``LAG`` are below ``ACF_LIMIT``
  (both chains have decorrelated by then); the measured text adds the ESS and the cost in simulations
  per iteration.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from gradmc.claims.base import Claim

__all__ = ["claims", "marginal_error", "LAG", "ACF_LIMIT", "PAPER_ITERATIONS"]

LAG = 20
ACF_LIMIT = 0.1
SD_TOLERANCE = 0.2
Z_LIMIT = 3.0
PAPER_ITERATIONS = 5000
_FIG = "KMC Fig. 4 right"


def marginal_error(samples, ref_mean: float, ref_sd: float) -> float:
    """|mean - ref_mean| / ref_sd + |sd / ref_sd - 1| of 1-D samples (sd with ddof 1).

    Raises:
        ValueError: fewer than 2 samples or ref_sd not > 0.
    """
    x = np.asarray(samples, dtype=np.float64)
    if x.ndim != 1 or x.shape[0] < 2 or not ref_sd > 0:
        raise ValueError(f"need >= 2 samples (1-D) and ref_sd > 0, got shape {x.shape}, ref_sd {ref_sd}")
    return abs(float(x.mean()) - ref_mean) / ref_sd + abs(float(x.std(ddof=1)) / ref_sd - 1.0)


def _moments(df: pd.DataFrame, sampler: str) -> tuple[float, float, float, float]:
    """(mean of run means, its standard error, pooled sd, number of runs) of theta_1."""
    runs = df[(df["sampler"] == sampler) & (df["metric"] == "mean_theta1")]["value"].to_numpy()
    pooled = df[(df["sampler"] == sampler) & (df["metric"] == "theta1")]["value"].to_numpy()
    se = float(runs.std(ddof=1)) / math.sqrt(len(runs)) if len(runs) > 1 else float("nan")
    return float(runs.mean()), se, float(pooled.std(ddof=1)), len(runs)


def _median(df: pd.DataFrame, sampler: str, metric: str, step: int | None = None) -> float:
    m = df[(df["sampler"] == sampler) & (df["metric"] == metric)]
    if step is not None:
        m = m[m["step"] == step]
    return float(m["value"].median())


def _note(df: pd.DataFrame, passed: bool) -> str:
    if passed:
        return ""
    iters = int(df[df["metric"] == "theta1"]["step"].max())
    runs = int(df[df["metric"] == "mean_theta1"]["seed"].nunique())
    return "" if iters >= PAPER_ITERATIONS else f"{iters} kept iterations, {runs} runs (paper {PAPER_ITERATIONS})"


def claims(df: pd.DataFrame) -> list[Claim]:
    """Bias claims (KMC vs HABC against the exact ABC marginal) and the mixing claim; [] without the data."""
    present = set(df["sampler"])
    if "reference" not in present or "KMC" not in present:
        return []
    ref = df[df["sampler"] == "reference"].set_index("metric")["value"]
    ref_mean, ref_sd = float(ref["mean_theta1"]), float(ref["std_theta1"])
    theta = df[df["metric"] == "theta1"]
    err = {s: marginal_error(theta[theta["sampler"] == s]["value"], ref_mean, ref_sd) for s in ("KMC", "HABC")
           if s in present}
    mom = {s: _moments(df, s) for s in ("KMC", "HABC") if s in present}
    out: list[Claim] = []

    def text(s: str) -> str:
        m, se, sd, _ = mom[s]
        return f"{s} mean {m:.3f} (SE {se:.3f}), sd {sd:.3f}"

    head = f"exact ABC marginal mean {ref_mean:.3f}, sd {ref_sd:.3f}"
    m, se, sd, runs = mom["KMC"]
    ok = bool(runs > 1 and abs(m - ref_mean) <= Z_LIMIT * se and abs(sd / ref_sd - 1) <= SD_TOLERANCE)
    out.append(Claim("kmc_abc", _FIG, "KMC's theta_1 marginal matches the exact ABC posterior (not biased)",
                     f"{head}; {text('KMC')} ({runs} runs)", ok, _note(df, ok)))
    if "HABC" in present:
        m, se, sd, runs = mom["HABC"]
        biased = bool(abs(m - ref_mean) > Z_LIMIT * se or abs(sd / ref_sd - 1) > SD_TOLERANCE)
        out.append(Claim("kmc_abc", _FIG, "HABC's theta_1 marginal is biased", f"{head}; {text('HABC')}",
                         biased, _note(df, biased)))
        ok = bool(err["KMC"] < err["HABC"])
        out.append(Claim("kmc_abc", _FIG, "KMC's theta_1 marginal is closer to the exact ABC posterior than HABC's",
                         f"marginal error |dmean|/sd + |sd ratio - 1|: KMC {err['KMC']:.3f} vs HABC {err['HABC']:.3f}",
                         ok, _note(df, ok)))
        acf_k, acf_h = _median(df, "KMC", "acf_theta1", LAG), _median(df, "HABC", "acf_theta1", LAG)
        sims_k = _median(df, "KMC", "simulations_per_iteration")
        sims_h = _median(df, "HABC", "simulations_per_iteration")
        ok = bool(acf_k < ACF_LIMIT and acf_h < ACF_LIMIT)
        rw = f", RW {_median(df, 'RW', 'acf_theta1', LAG):.3f}" if "RW" in present else ""
        out.append(Claim("kmc_abc", _FIG, f"KMC mixes like HABC (median ACF of theta_1 at lag {LAG} < {ACF_LIMIT})"
                         " with far fewer simulations",
                         f"ACF at lag {LAG}: KMC {acf_k:.3f}, HABC {acf_h:.3f}{rw}; median ESS KMC "
                         f"{_median(df, 'KMC', 'ess_theta1'):.1f}, HABC {_median(df, 'HABC', 'ess_theta1'):.1f}; "
                         f"simulations per iteration KMC {sims_k:.0f} vs HABC {sims_h:.0f} ({sims_h / sims_k:.0f}x)",
                         ok, _note(df, ok)))
    if "RW" in present:
        e_k, e_r = _median(df, "KMC", "ess_theta1"), _median(df, "RW", "ess_theta1")
        ok = bool(e_k > e_r)
        out.append(Claim("kmc_abc", _FIG, "KMC mixes better than the pseudo-marginal random walk (ESS of theta_1)",
                         f"median ESS KMC {e_k:.1f} vs RW {e_r:.1f}, same simulations per iteration", ok,
                         _note(df, ok)))
    return out
