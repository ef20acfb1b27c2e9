"""Claims of GWG App. J (EXPERIMENTS.md A8) on the text_ebm metrics (Penn Treebank), as effects with 95% intervals.

The paper finds "the autoregressive model slightly outperforms the EBM" and compares both with a uniform and a
unigram (Categorical fit to the training data) model. It prints the four test log-likelihoods, but their digits
are lost in our copy of its text: there is no agreement claim, only the orderings.

1. "The text EBM beats the unigram baseline": effect test log-likelihood EBM (GWG) - unigram (nats per sentence);
   > 0: the EBM better (direction +1).
2. "The text EBM beats the uniform distribution": EBM (GWG) - uniform, likewise (direction +1).
3. "The autoregressive LSTM LM outperforms the text EBM" (slightly, in the paper): LSTM LM - EBM (GWG); > 0: the
   LM better (direction +1, the paper's side). A FAIL means our EBM is significantly better than our LM.

A replicate is a test sentence: each model's value is a mean over the same test sentences, with its standard
error from the metrics (``test_log_likelihood_se``; the EBM's already combines the AIS standard error of log Z).
The interval is normal, effect +- z_{0.975} sqrt(se_a^2 + se_b^2): the root of the sum of squares treats the two
means as independent, which is conservative here (computed on the same sentences, the two per-sentence
log-likelihoods are positively correlated, so the paired difference varies less). The uniform model's value is
exact (SE 0). One training run per model: the intervals cover evaluation noise, not training-seed variation. AIS
underestimates log Z, so the EBM's estimate is optimistic (an upper bound in expectation): claims 1-2 lean on it,
claim 3 is conservative against the LM. Claims whose models are missing (a partial run) are not made.
"""

from __future__ import annotations

import math

import pandas as pd
from scipy import stats

from gradmc.claims.base import Claim
from gradmc.claims.stats import LEVEL, Interval

__all__ = ["claims", "PAPER_ITERATIONS", "PAPER_VOCAB", "PAPER_LENGTH"]

PAPER = "GWG App. J"
PAPER_ITERATIONS = 50_000  # "training was identical to our image EBMs" (App. J -> App. I)
PAPER_VOCAB, PAPER_LENGTH = 10_000, 20
EBM = "EBM (GWG)"
_NO_DIGITS = "the paper prints this value but its digits are lost in our copy of its text, so no paper_value"


def _value(df: pd.DataFrame, model: str, metric: str) -> float:
    rows = df[(df["sampler"] == model) & (df["metric"] == metric)]["value"]
    return float(rows.iloc[-1]) if len(rows) else math.nan


def _interval(effect: float, se: float, n: int) -> Interval:
    unit = "test sentences" if n > 1 else "test sets"  # the metrics may not record the number of sentences
    if not math.isfinite(se):
        return Interval(effect, -math.inf, math.inf, n, unit, "no standard error in the metrics")
    half = float(stats.norm.ppf(0.5 + LEVEL / 2.0)) * se
    return Interval(effect, effect - half, effect + half, n, unit,
                    f"normal, SE {se:.3g} = sqrt(se_a^2 + se_b^2) over test sentences (conservative: the same "
                    "sentences)")


def _sizes(df: pd.DataFrame) -> str:
    """The run's sizes the metrics imply: L = nats per sentence / per token, V from the uniform's -L log V."""
    parts = []
    ll, per = _value(df, "uniform", "test_log_likelihood"), _value(df, "uniform", "test_log_likelihood_per_token")
    if math.isfinite(ll) and per < 0:
        length = ll / per
        parts.append(f"V = {math.exp(-per):,.0f} words (paper {PAPER_VOCAB:,}), L = {length:.0f} tokens (paper "
                     f"{PAPER_LENGTH})")
    its = _value(df, EBM, "train_iterations")
    if math.isfinite(its):
        parts.append(f"{its:,.0f} training iterations (paper {PAPER_ITERATIONS:,})"
                     + (": reduced sizes" if its < PAPER_ITERATIONS else ""))
    levels = df.loc[(df["sampler"] == EBM) & (df["metric"] == "test_log_likelihood"), "step"]
    ess = _value(df, EBM, "ais_weights_ess")
    if len(levels):
        parts.append(f"AIS {int(levels.iloc[-1]):,} levels, weight ESS {ess:.3g}")
    if ess < 10:  # NaN compares False
        parts.append("with so few effective AIS chains the EBM's standard error is itself unreliable")
    return "; ".join(parts)


def claims(df: pd.DataFrame, config: dict | None = None) -> list[Claim]:
    """Claims 1-3 of the module docstring for the models present (none without the EBM's row)."""
    ll = {m: _value(df, m, "test_log_likelihood") for m in (EBM, "LSTM LM", "unigram", "uniform")}
    se = {m: _value(df, m, "test_log_likelihood_se") for m in ll}
    present = {m for m, v in ll.items() if math.isfinite(v)}
    count = df.loc[df["metric"] == "test_sentences", "value"]  # optional row: the test set's size
    n = int(count.iloc[-1]) if len(count) else 1
    note = ("replicate: a test sentence; one training run per model, so the interval covers evaluation noise only; "
            "SE of the difference as the root of the sum of squares, conservative since both means are over the "
            f"same sentences; the EBM's SE includes the AIS SE of log Z; {_NO_DIGITS}")
    sizes = _sizes(df)
    note = f"{note}; {sizes}" if sizes else note
    specs = (("unigram", EBM, "the text EBM (GWG) beats the unigram baseline on PTB",
              "test log-likelihood EBM (GWG) - unigram (nats per sentence); > 0: the EBM better"),
             ("uniform", EBM, "the text EBM (GWG) beats the uniform distribution on PTB",
              "test log-likelihood EBM (GWG) - uniform (nats per sentence); > 0: the EBM better"),
             (EBM, "LSTM LM", "the autoregressive LSTM language model outperforms the text EBM (GWG) on PTB "
              "(slightly, in the paper)",
              "test log-likelihood LSTM LM - EBM (GWG) (nats per sentence); > 0: the LM better"))
    out = []
    for worse, better, claim, effect_name in specs:
        if not {worse, better} <= present:
            continue
        iv = _interval(ll[better] - ll[worse], math.hypot(se[better], se[worse]), n)
        measured = (f"{better} {ll[better]:.2f} (SE {se[better]:.3g}) vs {worse} {ll[worse]:.2f} "
                    f"(SE {se[worse]:.3g}) nats per sentence")
        out.append(Claim("text_ebm", PAPER, claim, effect_name, iv, +1, measured, note))
    return out
