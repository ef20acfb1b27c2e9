"""Claims of GWG Fig. 3 / Fig. 9 (EXPERIMENTS.md A1) on the tidy rbm_sampling metrics, as effects with 95% intervals.

Every (sampler, seed) shard samples the SAME trained MNIST RBM with ``num_chains`` independent chains, so:

- ESS effects: a replicate is one CHAIN. The per-chain ``ess`` rows (chain >= 0) of all seeds are pooled
  (every chain is an independent run on one target); the effect is a function of the samplers' mean ESS, its
  interval a percentile bootstrap over chains, each sampler's chains resampled independently
  (:func:`gradmc.claims.stats.bootstrap_interval`). Chains with a non-finite ESS (NaN: the statistic never
  moved) are left out; ``measured`` gives the chain counts used.
- log MMD effects: the log MMD is a statistic of the SET of a shard's chains, so a replicate is one SEED. The
  effect is the mean over seeds of final log10 MMD^2 (at the last recorded step) of one sampler minus
  another's, with a t interval of the per-seed differences (:func:`gradmc.claims.stats.paired_t_interval`). The
  two samplers of a seed do not share random numbers (each shard seeds its own stream), so the pairing by seed
  number is arbitrary, but every seed's difference is still an independent replicate, so the interval is valid.
  Fewer than 5 seeds: unbounded, INCONCLUSIVE. A seed with a non-finite final log MMD (-inf, identical sets:
  tiny runs only) is left out; ``measured`` gives the seeds used.

The claims, with the sentence each tests (:data:`QUOTES`; the paper prints no numbers for Fig. 3 / Fig. 9):

- ``caption`` ("outperforms unstructured baselines in ESS"): "GWG ESS > X ESS" for X in :data:`BASELINES`;
  superiority, effect log(mean ESS GWG / mean ESS X) > 0.
- ``mmd_match`` ("GWG matches ... Block-Gibbs ... in MMD ..., while the other samplers do not"):
  "GWG's final log MMD is lower than X's"; superiority, effect GWG - X < 0.
- ``mmd_match``: "GWG's final log MMD matches block Gibbs's"; equivalence, effect GWG - BlockGibbs (paired by
  seed), margin +-:data:`MMD_MARGIN` log10 units (``margin_why``: the measured run-to-run spread). It needs
  the block-Gibbs sampler run as a sampler ("BlockGibbs" in ``rbm_sampling.samplers``: its 100 chains give the
  floor a 100-sample set can reach, with a spread over seeds). The recorded Target (``log_mmd_target``) cannot
  stand in: it compares two 500-sample sets, whose biased-MMD floor is about 3x lower than a 100-sample set's
  (:mod:`gradmc.evaluation.mmd`), and it is one value with no spread. Without BlockGibbs the claim is NOT RUN.
- ``ess_halfway`` ("approximately halfway between the baselines and the Block-Gibbs sampler (in log-space)"):
  "GWG's ESS lies about halfway between the baselines' and block Gibbs's (log-space)"; equivalence, effect
  (log mean ESS GWG - b) / (log mean ESS BlockGibbs - b) - 1/2, b the mean over the baselines that ran of their
  log mean ESS; margin +-:data:`HALFWAY_MARGIN`. NOT RUN without BlockGibbs, as above.
- ``multi`` ("the multi-sample variant has faster convergence and greater ESS", Fig. 9): for GWG-3 and GWG-5,
  "GWG-N ESS > GWG ESS" (superiority, log ratio > 0) and "GWG-N converges faster than GWG (lower log MMD over
  the run)": log10 MMD^2 averaged over the run's recorded steps (Fig. 9's curve per step: lower when it falls
  sooner; the final value alone says where a run ends, not how fast it got there), superiority, GWG-N - GWG < 0.
- A paper sampler (:data:`BASELINES`, :data:`MULTI`) that did not run gives NOT RUN rows naming the config key.
- Needs of every GWG claim: ``rbm_sampling.num_steps`` >= :data:`PAPER_STEPS` (the paper's "Log-ESS ... after
  10,000 steps"; the quick run's GWG log MMD is still falling at 5,000); the MMD claims also
  ``rbm_sampling.reference.num_steps`` >= 10,000 (the paper's ground truth: block Gibbs "run for 10,000 steps").
- Later samplers (:data:`LATER`): origin "other" (our reading of each paper's RBM section, whose text is not
  stored here, so no quote); superiority tests of ESS and/or final log MMD against GWG; no needs.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from gradmc.claims.base import Claim, at_least
from gradmc.claims.stats import Interval, bootstrap_interval, log_ratio_of_means, paired_t_interval

__all__ = ["claims", "PAPER_STEPS", "LATER", "QUOTES", "BASELINES", "MULTI", "MMD_MARGIN", "HALFWAY_MARGIN"]

EXPERIMENT = "rbm_sampling"
PAPER_STEPS = 10_000
PAPER_REFERENCE_STEPS = 10_000
BASELINES = ("Gibbs-1", "Gibbs-2", "HB-10-1")
MULTI = ("GWG-3", "GWG-5")
BLOCK = "BlockGibbs"
MMD_MARGIN = 0.2
"""Equivalence margin of "GWG matches block Gibbs in MMD", in log10 MMD^2 units (see MMD_MARGIN_WHY)."""
MMD_MARGIN_WHY = ("the measured run-to-run spread: the SD over 5 seeds of the final log10 MMD^2 of the samplers "
                  "nearest the floor in the quick run is about 0.1 (GWG-3 0.07, GWG 0.10, DMALA 0.14); a single "
                  "run, what the paper's figure shows, cannot tell apart sets within +-2 SD = 0.2")
HALFWAY_MARGIN = 0.25
"""Equivalence margin of "approximately halfway", as a fraction of the log-space way from the baselines to block
Gibbs (see HALFWAY_MARGIN_WHY)."""
HALFWAY_MARGIN_WHY = ("the paper's words: 'approximately halfway' read as the middle half of the log-space way "
                      "(between a quarter and three quarters), where GWG is nearer the middle than either end; the "
                      "paper prints no ESS numbers or error bars")

QUOTES = {
    "caption": "Gibbs-With-Gradients matches Block-Gibbs inMMD and outperforms unstructured baselines in ESS.",
    "mmd_match": "We see on the left that GWG matches the structured Block-Gibbs sampler in MMD (“Target” in the "
                 "Figure), while theother samplers do not.",
    "ess_halfway": "On the right we see that the effectivesample size of GWG is notably above the baselines andis "
                   "approximately halfway between the baselines and theBlock-Gibbs sampler (in log-space).",
    "steps": "Right: Log-ESS of various samplersafter 10,000 steps.",
    "reference": "We generate a set of 500 sam-ples using the Block-Gibbs sampler run for 10,000 steps.",
    "multi": "We findin this case the multi-sample variant has faster convergenceand greater ESS.",
}
"""The GWG sentences the claims test, verbatim from the stored text (Sec. 5.1 Fig. 3, App. D.2, App. E.1)."""

# Later samplers' own headline RBM comparisons with GWG (our reading of each paper's RBM-sampling section; the
# papers print curves, no numbers, and their text is not stored here): sampler -> (source, test ESS?, test final
# log MMD?)
LATER = {"DMALA": ("DMALA (Zhang et al. 2022) RBM sampling", True, True),
         "ACS": ("ACS (Pynadath et al. 2024) RBM sampling", False, True)}

_NAN = Interval(math.nan, math.nan, math.nan, 0, "", "not run")


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


def _curve_mmd(df: pd.DataFrame, sampler: str) -> pd.Series:
    """log10 MMD^2 averaged over the recorded steps of each seed's run (the area under Fig. 9's curve per step: lower
    when the curve falls sooner), indexed by seed."""
    m = df[(df["sampler"] == sampler) & (df["metric"] == "log_mmd")]
    m = m[np.isfinite(m["value"])]
    return m.groupby("seed")["value"].mean()


_MMD_STATISTICS = {
    "final": (_final_mmd, "final log10 MMD^2", "closer to the ground truth"),
    "curve": (_curve_mmd, "log10 MMD^2 averaged over the run's recorded steps",
              "lower on average over the run: converges faster"),
}


def _target(df: pd.DataFrame) -> str:
    target = df[df["metric"] == "log_mmd_target"]["value"]
    return f"; target (two reference sets) {float(target.mean()):.3f}" if len(target) else ""


def _mmd_claim(df: pd.DataFrame, better: str, other: str, paper: str, claim: str, note: str,
               statistic: str = "final", **kw) -> Claim | None:
    """``better`` - ``other`` in the MMD ``statistic`` (:data:`_MMD_STATISTICS`), paired by seed; < 0: ``better``
    lower. None when no seed has both."""
    per_seed, what, meaning = _MMD_STATISTICS[statistic]
    a, b = per_seed(df, better), per_seed(df, other)
    seeds = sorted(set(a.index) & set(b.index))
    if not seeds:
        return None
    iv = paired_t_interval(a[seeds].to_numpy(), b[seeds].to_numpy(), "seeds")
    return Claim(EXPERIMENT, paper, claim,
                 f"{what} {better} - {other} (mean over seeds, paired by seed number); < 0: {better} {meaning}", iv, -1,
                 f"{what} over {len(seeds)} seeds: {better} {float(a[seeds].mean()):.3f} vs {other} "
                 f"{float(b[seeds].mean()):.3f}{_target(df)}", note, **kw)


def _ess_claim(better: np.ndarray, other: np.ndarray, names: tuple[str, str], paper: str, note: str,
               **kw) -> Claim:
    b, o = names
    iv = bootstrap_interval(log_ratio_of_means, [better, other], "chains")
    return Claim(EXPERIMENT, paper, f"{b} ESS > {o} ESS on the MNIST RBM",
                 f"log(mean per-chain ESS {b} / {o}), chains of all seeds pooled; > 0: {b} larger", iv, +1,
                 f"mean ESS over chains: {b} {better.mean():.3g} ({len(better)} chains) vs {o} {other.mean():.3g} "
                 f"({len(other)} chains)", note, **kw)


def _not_run(paper: str, claim: str, effect_name: str, direction: int, why: str, **kw) -> Claim:
    return Claim(EXPERIMENT, paper, claim, effect_name, _NAN, direction, not_run=why, **kw)


def _halfway(gwg: np.ndarray, block: np.ndarray, *baselines: np.ndarray) -> float:
    """(log mean gwg - b) / (log mean block - b) - 1/2, b = mean of the baselines' log mean ESS."""
    b = float(np.mean([math.log(np.mean(x)) for x in baselines]))
    return (math.log(np.mean(gwg)) - b) / (math.log(np.mean(block)) - b) - 0.5


def claims(df: pd.DataFrame, config: dict | None = None) -> list[Claim]:
    """GWG's ESS above the baselines' and their final log MMD above GWG's; GWG matching block Gibbs in MMD and
    its ESS halfway to block Gibbs's (NOT RUN without the BlockGibbs sampler); GWG-3/5's ESS above GWG's and
    final log MMD below; the later samplers' headline comparisons with GWG (:data:`LATER`, origin "other")."""
    present = set(df["sampler"]) - {"Target"}
    out: list[Claim] = []
    if "GWG" not in present:
        return out
    steps = int(df[df["metric"] == "log_mmd"]["step"].max())
    note = f"{steps} steps (paper {PAPER_STEPS:,})" if steps < PAPER_STEPS else ""
    need_steps = at_least(config, "rbm_sampling.num_steps", PAPER_STEPS, "sampler steps",
                          why="the paper's Fig. 3 and Fig. 9 are after 10,000 steps")
    need_ref = at_least(config, "rbm_sampling.reference.num_steps", PAPER_REFERENCE_STEPS,
                        "block-Gibbs steps of the ground truth",
                        why="the paper's ground truth is block Gibbs run for 10,000 steps (App. E.1)")
    ess_kw = dict(origin="GWG", test="superiority", needs=(need_steps,))
    mmd_kw = dict(origin="GWG", test="superiority", needs=(need_steps, need_ref))
    gwg = _chain_ess(df, "GWG")
    missing = "{} did not run: it is not in rbm_sampling.samplers (config/paper.yaml runs it)"
    for other in BASELINES:
        if other not in present:
            out.append(_not_run("GWG Fig. 3", f"GWG ESS > {other} ESS on the MNIST RBM",
                                f"log(mean per-chain ESS GWG / {other}); > 0: GWG larger", +1, missing.format(other),
                                quote=QUOTES["caption"], **ess_kw))
            continue
        ess = _chain_ess(df, other)
        if len(gwg) and len(ess):
            out.append(_ess_claim(gwg, ess, ("GWG", other), "GWG Fig. 3", note, quote=QUOTES["caption"], **ess_kw))
    for other in BASELINES:
        claim = f"GWG's final log MMD is lower than {other}'s"
        if other not in present:
            out.append(_not_run("GWG Fig. 3", claim, f"final log10 MMD^2 GWG - {other}; < 0: GWG closer", -1,
                                missing.format(other), quote=QUOTES["mmd_match"], **mmd_kw))
            continue
        c = _mmd_claim(df, "GWG", other, "GWG Fig. 3", claim, note, quote=QUOTES["mmd_match"], **mmd_kw)
        if c is not None:
            out.append(c)
    out += _block_gibbs_claims(df, present, gwg, note, need_steps, need_ref)
    for name, (source, test_ess, test_mmd) in LATER.items():
        if name not in present:
            continue
        later_note = "; ".join(p for p in (note, f"our reading of the {name} paper's RBM comparison (its text is not "
                                                 "stored here)") if p)
        ess = _chain_ess(df, name)
        if test_ess and len(gwg) and len(ess):
            out.append(_ess_claim(ess, gwg, (name, "GWG"), source, later_note, origin="other", test="superiority"))
        if test_mmd:
            c = _mmd_claim(df, name, "GWG", source, f"{name}'s final log MMD is lower than GWG's", later_note,
                           origin="other", test="superiority")
            if c is not None:
                out.append(c)
    for multi in MULTI:
        faster = f"{multi} converges faster than GWG (lower log MMD over the run)"
        if multi not in present:
            why = missing.format(multi)
            out.append(_not_run("GWG Fig. 9", f"{multi} ESS > GWG ESS on the MNIST RBM",
                                f"log(mean per-chain ESS {multi} / GWG); > 0: {multi} larger", +1, why,
                                quote=QUOTES["multi"], **ess_kw))
            out.append(_not_run("GWG Fig. 9", faster, f"log10 MMD^2 averaged over the run's recorded steps {multi} - "
                                f"GWG; < 0: {multi} converges faster", -1, why, quote=QUOTES["multi"], **mmd_kw))
            continue
        ess = _chain_ess(df, multi)
        if len(gwg) and len(ess):
            out.append(_ess_claim(ess, gwg, (multi, "GWG"), "GWG Fig. 9", note, quote=QUOTES["multi"], **ess_kw))
        c = _mmd_claim(df, multi, "GWG", "GWG Fig. 9", faster, note, "curve", quote=QUOTES["multi"], **mmd_kw)
        if c is not None:
            out.append(c)
    return out


def _block_gibbs_claims(df: pd.DataFrame, present: set, gwg: np.ndarray, note: str, need_steps, need_ref
                        ) -> list[Claim]:
    """GWG matches block Gibbs in final log MMD (equivalence); GWG's ESS is about halfway between the baselines'
    and block Gibbs's in log-space (equivalence). NOT RUN without the BlockGibbs sampler's rows."""
    match = "GWG's final log MMD matches block Gibbs's"
    match_effect = f"final log10 MMD^2 GWG - {BLOCK} (mean over seeds, paired by seed number); 0: matches"
    halfway = "GWG's ESS lies about halfway between the baselines' and block Gibbs's (log-space)"
    halfway_effect = (f"(log mean ESS GWG - b) / (log mean ESS {BLOCK} - b) - 1/2, b the mean of the baselines' "
                      "log mean ESS; 0: halfway")
    kw = dict(origin="GWG", test="equivalence")
    if BLOCK not in present:
        why = (f"needs the block-Gibbs sampler run like the others ('{BLOCK}' is not in rbm_sampling.samplers): "
               "its chains give the floor a set of num_chains samples reaches, with a spread over "
               "seeds, and its ESS; the recorded Target compares two 500-sample sets (a biased-MMD floor about 3x "
               "lower than a 100-sample set's) and is one value")
        final = _final_mmd(df, "GWG")
        measured = f"final log10 MMD^2 GWG {float(final.mean()):.3f}{_target(df)}" if len(final) else ""
        return [Claim(EXPERIMENT, "GWG Fig. 3", match, match_effect, _NAN, 0, measured, tolerance=MMD_MARGIN,
                      margin_why=MMD_MARGIN_WHY, quote=QUOTES["mmd_match"], needs=(need_steps, need_ref),
                      not_run=why, **kw),
                Claim(EXPERIMENT, "GWG Fig. 3", halfway, halfway_effect, _NAN, 0, tolerance=HALFWAY_MARGIN,
                      margin_why=HALFWAY_MARGIN_WHY, quote=QUOTES["ess_halfway"], needs=(need_steps,),
                      not_run=why, **kw)]
    out = []
    c = _mmd_claim(df, "GWG", BLOCK, "GWG Fig. 3", match, note)
    if c is not None:
        out.append(Claim(EXPERIMENT, c.paper, c.claim, match_effect, c.interval, 0, c.measured, note,
                         tolerance=MMD_MARGIN, margin_why=MMD_MARGIN_WHY, quote=QUOTES["mmd_match"],
                         needs=(need_steps, need_ref), **kw))
    block = _chain_ess(df, BLOCK)
    bases = [b for b in BASELINES if b in present and len(_chain_ess(df, b))]
    if len(gwg) and len(block) and bases:
        samples = [gwg, block] + [_chain_ess(df, b) for b in bases]
        iv = bootstrap_interval(_halfway, samples, "chains")
        out.append(Claim(EXPERIMENT, "GWG Fig. 3", halfway, halfway_effect, iv, 0,
                         f"mean ESS: GWG {gwg.mean():.3g}, {BLOCK} {block.mean():.3g}, "
                         + ", ".join(f"{b} {x.mean():.3g}" for b, x in zip(bases, samples[2:], strict=True))
                         + f"; GWG at {iv.effect + 0.5:.2f} of the log-space way", note,
                         tolerance=HALFWAY_MARGIN, margin_why=HALFWAY_MARGIN_WHY, quote=QUOTES["ess_halfway"],
                         needs=(need_steps,), **kw))
    return out
