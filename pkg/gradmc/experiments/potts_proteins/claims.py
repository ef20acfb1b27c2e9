"""Claims of GWG Sec. 5.4, Fig. 7, Fig. 12 (App. H.1) (EXPERIMENTS.md A6) on the tidy potts_proteins metrics, as
effects with 95% intervals.

The score is top-L recall of the true contacts among the L pairs of largest coupling strength ||J_ij||_F (L =
sequence length; the paper's recall curves at k = L). Top-L precision is top-L recall times (#contacts / L),
the same ordering, so it is reported in ``measured`` beside the APC precision, not claimed twice.

A replicate is a seed: one fit of a method on a protein (the seed drives the subsample, the weighted resampling
and the PCD chains). PCD-GWG and PCD-Gibbs of one seed fit the same data, so they are paired by seed. PLM is
deterministic given the data: with all rows it runs once (one seed) and that one fit is the comparison value for
every PCD seed (interval: t over the PCD seeds of recall(seed) - recall_PLM); with a subsample it runs per seed
and is paired by seed like the others. Intervals are t intervals over seeds (unbounded below 5 seeds).

The paper's words, per protein (``QUOTES``):

- OPSD_BOVIN and CADH1_HUMAN (Fig. 7; 276 and 526 amino acids): "For the smaller protein, Gibbs sampling
  outperforms PLM but for the larger protein, the slow-mixing of the sampler causes the performance to drop
  below that of PLM. Despite the increased size, GWG performs the best." Claims, each a superiority test (no
  margin): on both, PCD-GWG - PLM > 0 and PCD-GWG - PCD-Gibbs > 0 ("performs the best"); on OPSD_BOVIN
  PCD-Gibbs - PLM > 0; on CADH1_HUMAN PCD-Gibbs - PLM < 0 (direction -1). Their inputs are not public
  (:data:`gradmc.proteins.EVCOUPLINGS_FILES`): when the config lists the protein and the metrics hold no rows
  of it, its claims are still made, with verdict NOT RUN naming the files and how to obtain them.
- PF00018 (Fig. 12, App. H.1): "the MCMC-based training outperforms PLM but by a smaller margin and GWG and
  Gibbs perform comparably here". Claims: PCD-GWG - PLM > 0 and PCD-Gibbs - PLM > 0 (superiority); |PCD-GWG -
  PCD-Gibbs| within +-``COMPARABLE_MARGIN`` (equivalence). The margin, 0.03 of top-L recall: the paper compares
  one run per method, and two single runs of the same PCD method differ by up to 1.96 x sqrt(2) x s = 0.03 (95%)
  where s = 0.011 is the run-to-run SD of PF00018 top-L recall measured over 5 seeds of the quick run (PCD-GWG
  0.010, PCD-Gibbs 0.011); a difference inside it cannot be told from seed noise in a figure of single runs.
  (0.03 is about 3 of PF00018's ~107 contacts at separation >= 6.)

Needs of every claim (read from the config): the paper's PCD, App. H: 10,000 iterations (``potts_proteins.pcd.
num_iterations``) of 50 sampler steps (``potts_proteins.pcd.num_steps``); and ``potts_proteins.seeds`` with >= 5
seeds (the t interval's least). Contact recovery of an unconverged PCD fit says nothing about the trained model
the paper compares.

Not GWG's: the synthetic Potts benchmark (Ingraham & Marks 2017's, with known J; the GWG paper never shows it).
Its claims are sanity checks, origin "other": "PCD-GWG learns the synthetic couplings more accurately than
PCD-Gibbs" (coupling RMSE vs the true J, zero-sum gauge, GWG - Gibbs, < 0) and "PCD-GWG recovers more of the
synthetic contacts than PCD-Gibbs" (top-L recall GWG - Gibbs, > 0), superiority, paired by seed, with the same
needs. PCD-DMALA and PCD-DLMC (categorical DMALA / DLMC negatives, Zhang et al. 2022, Sun et al. 2023) are not in
the paper: rows of the figure and table, no claim.
The paper prints no numbers for these figures (curves only), so there is no agreement claim.
"""

from __future__ import annotations

import math

import pandas as pd

from gradmc.claims.base import Claim, Need, at_least, config_value
from gradmc.claims.stats import MIN_T_REPLICATES, Interval, paired_t_interval, t_interval
from gradmc.proteins import EVCOUPLINGS_FILES

__all__ = ["claims", "COMPARABLE_MARGIN", "PAPER_ITERATIONS", "PAPER_STEPS", "QUOTES"]

EXPERIMENT = "potts_proteins"
PAPER_ITERATIONS = 10_000
PAPER_STEPS = 50
COMPARABLE_MARGIN = 0.03

QUOTES = {
    "fig7_smaller": "For thesmaller protein, Gibbs sampling outperforms PLM",
    "fig7_larger": "forthe larger protein, the slow-mixing of the sampler causesthe performance to drop below that "
                   "of PLM.",
    "fig7_best": "Despite theincreased size, GWG performs the best.",
    "pf00018_plm": "the MCMC-based training outperforms PLM but by asmaller margin",
    "pf00018_comparable": "GWG and Gibbs perform comparablyhere.",
}
"""The GWG sentences the claims test, verbatim (Sec. 5.4 on Fig. 7; App. H.1 on Fig. 12)."""

_LENGTHS = {"OPSD_BOVIN": 276, "CADH1_HUMAN": 526}  # GWG Sec. 5.4
_MARGIN_WHY = ("1.96 x sqrt(2) x 0.011: the 95% range of the difference of two single runs of one PCD method, from "
               "the run-to-run SD 0.011 of PF00018 top-L recall over 5 seeds of the quick run; the paper compares "
               "single runs")


def _plan(protein: str) -> list[tuple[str, str, int, str, str]]:
    """(method, other, direction, quote key, test) per claim of a real protein (module docstring)."""
    if protein == "PF00018":
        return [("PCD-GWG", "PLM", +1, "pf00018_plm", "superiority"),
                ("PCD-Gibbs", "PLM", +1, "pf00018_plm", "superiority"),
                ("PCD-GWG", "PCD-Gibbs", 0, "pf00018_comparable", "equivalence")]
    gibbs = (("PCD-Gibbs", "PLM", +1, "fig7_smaller", "superiority") if protein == "OPSD_BOVIN" else
             ("PCD-Gibbs", "PLM", -1, "fig7_larger", "superiority"))
    return [("PCD-GWG", "PLM", +1, "fig7_best", "superiority"),
            ("PCD-GWG", "PCD-Gibbs", +1, "fig7_best", "superiority"), gibbs]


def _statement(protein: str, method: str, other: str, direction: int, L: int | None) -> str:
    size = f" (top-L recall, L = {L})" if L else " (top-L recall)"
    if direction == 0:
        return f"{method} and {other} recover comparably many contacts on {protein}{size}"
    if direction > 0:
        return f"{method} recovers more contacts than {other} on {protein}{size}"
    return f"{method} recovers fewer contacts than {other} on {protein}{size}"


def _effect_name(method: str, other: str, direction: int) -> str:
    side = {1: f"> 0: {method} recovers more", -1: f"< 0: {method} recovers fewer",
            0: f"within +-{COMPARABLE_MARGIN:g}: comparable"}[direction]
    return f"top-L recall {method} - {other}; {side}"


def _figure(protein: str) -> str:
    return "GWG Fig. 12" if protein == "PF00018" else "GWG Fig. 7"


def _needs(config: dict | None) -> tuple[Need, ...]:
    why = "GWG App. H: PCD for 10,000 iterations, 50 steps of Gibbs or GWG per iteration"
    return (at_least(config, "potts_proteins.pcd.num_iterations", PAPER_ITERATIONS, "PCD iterations", why=why),
            at_least(config, "potts_proteins.pcd.num_steps", PAPER_STEPS, "sampler steps per PCD iteration", why=why),
            at_least(config, "potts_proteins.seeds", MIN_T_REPLICATES, "seeds", reduce=len,
                     why=f"a t interval over seeds needs at least {MIN_T_REPLICATES}"))


def _per_seed(d: pd.DataFrame, method: str, metric: str, at_l: bool) -> pd.Series:
    """seed -> value of ``metric`` (at k = L for the curve metrics)."""
    m = d[(d["sampler"] == method) & (d["metric"] == metric)]
    if at_l:
        m = m[m["k"] == m["length"]]
    return m.groupby("seed")["value"].first()


def _compare(a: pd.Series, other: pd.Series, other_name: str) -> tuple[Interval, str] | None:
    """Paired t over common seeds; a single deterministic PLM fit is broadcast to every seed of ``a``."""
    seeds = a.index.intersection(other.index)
    if other_name == "PLM" and len(other) == 1 and len(a) > 1 and len(seeds) <= 1:
        diff = a.to_numpy() - float(other.iloc[0])
        return t_interval(diff, "seeds"), f"one deterministic PLM fit vs {len(a)} PCD seeds"
    if not len(seeds):
        return None
    return paired_t_interval(a.loc[seeds].to_numpy(), other.loc[seeds].to_numpy(), "seeds"), \
        f"paired by seed ({len(seeds)} seeds)"


def _numbers(d: pd.DataFrame, method: str) -> str:
    r, p, pa = (_per_seed(d, method, m, True).mean() for m in ("recall", "precision", "precision_apc"))
    return f"{method} recall {r:.3f} / precision {p:.3f} (APC precision {pa:.3f})"


def _note(d: pd.DataFrame, pairing: str) -> str:
    its = d[(d["metric"] == "num_iterations") & d["sampler"].str.startswith("PCD")]
    n = int(its["value"].min()) if len(its) else 0
    sizes = f"; {n} PCD iterations (paper {PAPER_ITERATIONS:,}): reduced sizes" if n < PAPER_ITERATIONS else ""
    return f"replicate: a seed (one fit); {pairing}{sizes}"


def _not_run(protein: str) -> str:
    a2m, prefix = EVCOUPLINGS_FILES[protein]
    return (f"no metrics for {protein}: its inputs are not public, $GRADMC_DATA_DIR/protein/{a2m} and "
            f"$GRADMC_DATA_DIR/protein/{prefix}.csv (or .npy); ask the GWG authors for them, or regenerate them "
            "with EVcouplings (github.com/debbiemarkslab/EVcouplings: the alignment with its align stage, "
            "focus-mode A2M; the distance map with its compare stage), then rerun potts_proteins")


def _real(d: pd.DataFrame, protein: str, need: tuple[Need, ...]) -> list[Claim]:
    out: list[Claim] = []
    if protein not in ("PF00018", *_LENGTHS):  # a protein the paper does not show: no claim
        return out
    methods = set(d["sampler"])
    L = int(d["length"].iloc[0])
    for method, other, direction, key, test in _plan(protein):
        if not {method, other} <= methods:
            continue
        got = _compare(_per_seed(d, method, "recall", True), _per_seed(d, other, "recall", True), other)
        if got is None:
            continue
        iv, pairing = got
        eq = direction == 0
        out.append(Claim(EXPERIMENT, _figure(protein), _statement(protein, method, other, direction, L),
                         _effect_name(method, other, direction), iv, direction,
                         f"mean over seeds: {_numbers(d, method)}; {_numbers(d, other)}", _note(d, pairing),
                         tolerance=COMPARABLE_MARGIN if eq else None, quote=QUOTES[key], origin="GWG", test=test,
                         margin_why=_MARGIN_WHY if eq else "", needs=need))
    return out


def _missing(protein: str, need: tuple[Need, ...]) -> list[Claim]:
    nothing = Interval(math.nan, math.nan, math.nan, 0, "seeds", "not run")
    return [Claim(EXPERIMENT, _figure(protein), _statement(protein, method, other, direction, _LENGTHS[protein]),
                  _effect_name(method, other, direction), nothing, direction, quote=QUOTES[key], origin="GWG",
                  test=test, needs=need, not_run=_not_run(protein))
            for method, other, direction, key, test in _plan(protein)]


def _synthetic(d: pd.DataFrame, need: tuple[Need, ...]) -> list[Claim]:
    out = []
    methods = set(d["sampler"])
    if not {"PCD-GWG", "PCD-Gibbs"} <= methods:
        return out
    paper = "Ingraham & Marks 2017 synthetic Potts benchmark (not in GWG)"
    L = int(d["length"].iloc[0])
    got = _compare(_per_seed(d, "PCD-GWG", "recall", True), _per_seed(d, "PCD-Gibbs", "recall", True), "PCD-Gibbs")
    if got is not None:
        iv, pairing = got
        out.append(Claim(EXPERIMENT, paper, f"PCD-GWG recovers more of the synthetic contacts than PCD-Gibbs "
                         f"(top-L recall, L = {L})", _effect_name("PCD-GWG", "PCD-Gibbs", +1), iv, +1,
                         f"mean over seeds: {_numbers(d, 'PCD-GWG')}; {_numbers(d, 'PCD-Gibbs')}", _note(d, pairing),
                         origin="other", test="superiority", needs=need))
    g, b = (_per_seed(d, m, "coupling_rmse", False) for m in ("PCD-GWG", "PCD-Gibbs"))
    got = _compare(g, b, "PCD-Gibbs")
    if got is not None:
        iv, pairing = got
        out.append(Claim(EXPERIMENT, paper, "PCD-GWG learns the synthetic Potts couplings more accurately "
                         "than PCD-Gibbs (RMSE vs the true J, zero-sum gauge)",
                         "coupling RMSE PCD-GWG - PCD-Gibbs (paired by seed); < 0: GWG closer to the true J",
                         iv, -1, f"coupling RMSE, mean over seeds: PCD-GWG {g.mean():.4f} vs PCD-Gibbs "
                         f"{b.mean():.4f}", _note(d, pairing), origin="other", test="superiority", needs=need))
    return out


def claims(df: pd.DataFrame, config: dict | None = None) -> list[Claim]:
    """The claims of the module docstring for the proteins and methods present (missing ones skipped), and NOT RUN
    claims for each EVcouplings protein the config lists but the metrics lack."""
    need = _needs(config)
    out: list[Claim] = []
    for protein in sorted(df["target"].unique()):
        d = df[df["target"] == protein]
        out += _synthetic(d, need) if protein == "synthetic" else _real(d, protein, need)
    listed = config_value(config, "potts_proteins.proteins") or []
    present = set(df["target"])
    for protein in listed:
        if protein in EVCOUPLINGS_FILES and protein not in present:
            out += _missing(protein, need)
    return out
