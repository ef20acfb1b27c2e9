"""Claims of GWG App. J (EXPERIMENTS.md A8) on the text_ebm metrics (Penn Treebank), as effects with 95% intervals,
each with the paper's words (:data:`QUOTES`), its test and what it needs from the config.

The paper finds "the autoregressive model slightly outperforms the EBM" (QUOTES["slightly"]) and compares both with
a uniform and a unigram (Categorical fit to the training data) model (QUOTES["comparison"]). It prints the four
test log-likelihoods, but their digits are lost in our copy of its text: there is no agreement claim, only the
orderings.

What the paper's setting needs (read from the config only; :func:`setting_needs`): PTB's training split
(``text_ebm.data.train_split`` = "train"), its 10,000-word vocabulary and sentences of up to 20 words
(``data.vocab_size`` >= 10,000, ``data.max_length`` >= 20; QUOTES["data"]), the EBM's sizes (``model.hidden`` >=
512, ``model.embed_dim`` >= 256, ``model.proj`` >= 512; QUOTES["model"]) and "training ... identical to our image
EBMs" (QUOTES["identical"]: ``train.iterations`` >= 50,000, App. I.2). The LM claim also needs the LM's sizes
(``lm.hidden`` >= 512, ``lm.embed_dim`` >= 256; QUOTES["lm"]). An unmet need makes the claim NOT DECIDABLE AT THIS
SCALE: the orderings of models of another vocabulary, length and size are not the paper's. Every claim also needs
at least 32 AIS chains (``ais.num_chains``; :func:`gradmc.claims.ais.ais_chains_need`): with fewer, no
interval is given, whatever the run.

1. "The text EBM beats the unigram baseline" (QUOTES["comparison"], QUOTES["success"]): superiority; effect test
   log-likelihood EBM (GWG) - unigram (nats per sentence); > 0: the EBM better (direction +1). Needs the setting.
2. "The text EBM beats the uniform distribution": origin "other" (a sanity check: any trained model should beat
   the uniform; the paper only prints the uniform's value for comparison); superiority, EBM (GWG) - uniform,
   likewise (direction +1). Needs only the AIS chains (below).
3. "The autoregressive LSTM LM outperforms the text EBM" (QUOTES["slightly"]): superiority, the test "outperforms"
   calls for; LSTM LM - EBM (GWG); > 0: the LM better (direction +1, the paper's side). A FAIL means our EBM is
   significantly better than our LM. "Slightly" sizes the gap, but the paper's digits are lost, so no number
   bounds it and that part is not tested (the measured gap shows in ``measured``). Needs the setting and the LM's
   sizes.

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

from gradmc.claims.ais import ais_chains, ais_chains_need, min_ais_weights_ess
from gradmc.claims.base import Claim, Need, at_least
from gradmc.claims.stats import LEVEL, Interval

__all__ = ["claims", "setting_needs", "PAPER_ITERATIONS", "PAPER_VOCAB", "PAPER_LENGTH", "QUOTES"]

#: The paper's words each claim tests, verbatim from the stored GWG text (extraction artefacts kept).
QUOTES = {
    "slightly": "We find the autoregressive model slightly outperforms theEBM.",
    "comparison": "Forcomparison, a uniform distribution over possible tokensobtains − . and a Categorical "
                  "distribution fit to thetraining data obtains − . .",
    "success": "we believe they demonstrate thatGibbs-With-Gradients can enable MCMC-trained EBMs tosuccessfully "
               "model text data with large vocabulary sizes.",
    "data": "This is a dataset of short sen-tences with 10,000 words. We cut out all sentences withgreater than 20 "
            "words",
    "model": "Our model consists of a bidirectional LSTM (Gers et al.,1999) with 512 hidden units. We project the "
             "10,000 wordsto an embedding of size 256 ... We project this to 512 dimensions",
    "identical": "Besides this, trainingwas identical to our image EBMs in section 8.",
    "lm": "We compare with a simple autoregressive language modelwhich is based on an LSTM with 512 hidden units and "
          "usea learned word embedding of size 256.",
}

PAPER = "GWG App. J"
PAPER_ITERATIONS = 50_000  # "training was identical to our image EBMs" (App. J -> App. I)
PAPER_VOCAB, PAPER_LENGTH = 10_000, 20
PAPER_HIDDEN, PAPER_EMBED, PAPER_PROJ = 512, 256, 512
EBM = "EBM (GWG)"
_NO_DIGITS = "the paper prints this value but its digits are lost in our copy of its text, so no paper_value"


def _value(df: pd.DataFrame, model: str, metric: str) -> float:
    rows = df[(df["sampler"] == model) & (df["metric"] == metric)]["value"]
    return float(rows.iloc[-1]) if len(rows) else math.nan


def _interval(effect: float, se: float, n: int, ais_ess: float = math.nan, chains: int | None = None) -> Interval:
    """effect +- z_{0.975} se; unbounded without a standard error, or when the EBM's AIS weights ESS ``ais_ess``
    (NaN: not in the metrics, unchecked) is below :func:`gradmc.claims.ais.min_ais_weights_ess` of its
    ``chains`` (from the config): the image EBMs' coverage rule, for the same AIS standard error."""
    unit = "test sentences" if n > 1 else "test sets"  # the metrics may not record the number of sentences
    if not math.isfinite(se):
        return Interval(effect, -math.inf, math.inf, n, unit, "no standard error in the metrics")
    least = min_ais_weights_ess(chains)
    if ais_ess < least:  # NaN compares False
        of = f"{chains} AIS chains" if chains is not None else "AIS chains (the chain count is not known)"
        return Interval(effect, -math.inf, math.inf, n, unit,
                        f"no interval: the EBM's AIS weights ESS {ais_ess:.3g} < {least:g} of {of}: the normal "
                        f"interval from its AIS standard error covers under 93%; SE {se:.3g}")
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


def setting_needs(config: dict | None, lm: bool = False) -> tuple[Need, ...]:
    """The paper's data, EBM and training sizes (and, with ``lm``, the LM's): module docstring."""
    needs = (at_least(config, "text_ebm.data.train_split", 1, "training on PTB's training split (1 = 'train')",
                      why="GWG App. J trains on PTB", reduce=lambda split: float(split == "train")),
             at_least(config, "text_ebm.data.vocab_size", PAPER_VOCAB, "vocabulary (words)",
                      why="GWG App. J: 10,000 words"),
             at_least(config, "text_ebm.data.max_length", PAPER_LENGTH, "sentence length (words)",
                      why="GWG App. J: sentences of up to 20 words"),
             at_least(config, "text_ebm.model.hidden", PAPER_HIDDEN, "EBM LSTM hidden units", why="GWG App. J: 512"),
             at_least(config, "text_ebm.model.embed_dim", PAPER_EMBED, "EBM word embedding", why="GWG App. J: 256"),
             at_least(config, "text_ebm.model.proj", PAPER_PROJ, "EBM projection", why="GWG App. J: 512"),
             at_least(config, "text_ebm.train.iterations", PAPER_ITERATIONS, "EBM training iterations",
                      why="GWG App. J: training identical to the image EBMs', 50,000 iterations (App. I.2)"))
    if lm:
        needs += (at_least(config, "text_ebm.lm.hidden", PAPER_HIDDEN, "LM LSTM hidden units", why="GWG App. J: 512"),
                  at_least(config, "text_ebm.lm.embed_dim", PAPER_EMBED, "LM word embedding", why="GWG App. J: 256"))
    return needs


def claims(df: pd.DataFrame, config: dict | None = None) -> list[Claim]:
    """Claims 1-3 of the module docstring for the models present (none without the EBM's row); needs read from
    ``config`` (unchecked when None)."""
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
    chains = ais_chains(config, "text_ebm.ais")
    specs = (("unigram", EBM, "the text EBM (GWG) beats the unigram baseline on PTB",
              "test log-likelihood EBM (GWG) - unigram (nats per sentence); > 0: the EBM better",
              dict(paper=PAPER, quote=f"{QUOTES['comparison']} ... {QUOTES['success']}", needs=setting_needs(config))),
             ("uniform", EBM, "the text EBM (GWG) beats the uniform distribution on PTB",
              "test log-likelihood EBM (GWG) - uniform (nats per sentence); > 0: the EBM better",
              dict(paper="sanity check (GWG App. J prints the uniform's value for comparison)", origin="other",
                   quote="not a claim of the paper: any trained model should beat the uniform distribution over the "
                   "vocabulary", needs=())),
             (EBM, "LSTM LM", "the autoregressive LSTM language model outperforms the text EBM (GWG) on PTB "
              "(slightly, in the paper)",
              "test log-likelihood LSTM LM - EBM (GWG) (nats per sentence); > 0: the LM better",
              dict(paper=PAPER, quote=QUOTES["slightly"], needs=setting_needs(config, lm=True),
                   note="'slightly' is not tested: the paper's digits are lost, so no number bounds the gap")))
    out = []
    for worse, better, claim, effect_name, extra in specs:
        if not {worse, better} <= present:
            continue
        ais_ess = _value(df, EBM, "ais_weights_ess") if EBM in (worse, better) else math.nan
        iv = _interval(ll[better] - ll[worse], math.hypot(se[better], se[worse]), n, ais_ess, chains)
        measured = (f"{better} {ll[better]:.2f} (SE {se[better]:.3g}) vs {worse} {ll[worse]:.2f} "
                    f"(SE {se[worse]:.3g}) nats per sentence")
        paper = extra.pop("paper")
        extra["needs"] = extra["needs"] + (ais_chains_need(config, "text_ebm.ais"),)
        extra_note = extra.pop("note", "")
        out.append(Claim("text_ebm", paper, claim, effect_name, iv, +1, measured,
                         f"{extra_note}; {note}" if extra_note else note, test="superiority", **extra))
    return out
