"""Claims of GWG Table 2 (gradmc.experiments.ebm.claims) on synthetic ebm metrics: PASS, FAIL, INCONCLUSIVE and
the numbers."""

from __future__ import annotations

import math

import pandas as pd
import pytest
from scipy import stats

from gradmc.claims.base import NOT_DECIDABLE_SCALE
from gradmc.experiments.ebm.claims import CONVERGENCE_NATS, QUOTES, TOLERANCE_NATS, claims

Z = stats.norm.ppf(0.975)


def _frame(values: dict, dataset: str = "static_mnist", se_metric: str = "log_z_se", base: float | None = None,
           iterations: int = 50_000) -> pd.DataFrame:
    """values: sampler -> (test log-likelihood, its SE)."""
    rows = []
    for sampler, (ll, se) in values.items():
        rows += [(sampler, "test_log_likelihood", ll), (sampler, se_metric, se), (sampler, "ais_weights_ess", 50.0),
                 (sampler, "train_iterations", iterations)]
        if base is not None:
            rows.append((sampler, "base_test_log_likelihood", base))
    return pd.DataFrame(rows, columns=["sampler", "metric", "value"]).assign(
        experiment="ebm", target=dataset, seed=0, chain=0, step=300)


def _by_claim(out):
    return {c.claim: c for c in out}


def test_gwg_vs_gibbs_interval_is_normal_from_the_two_ses():
    out = _by_claim(claims(_frame({"GWG": (-81.0, 0.3), "Gibbs-1": (-118.0, 0.4)})))
    c = out["EBM trained with GWG beats Gibbs at equal wall-clock (static_mnist)"]
    assert c.status == "PASS" and c.interval.effect == pytest.approx(37.0)
    half = Z * math.sqrt(0.3 ** 2 + 0.4 ** 2)  # 0.5 * 1.96
    assert c.interval.low == pytest.approx(37.0 - half) and c.interval.high == pytest.approx(37.0 + half)
    assert "log_z_se only" in c.note and "not training-seed variation" in c.note
    assert "ESS" not in c.note and "reduced sizes" not in c.note
    # agreement with Table 2: -81.0 +- 0.59 vs -80.01 +- 5 nats: inside; Gibbs -118.0 vs -117.17: inside
    agree = [c for c in out.values() if c.direction == 0]
    assert [a.status for a in agree] == ["PASS", "PASS"] and agree[0].tolerance == TOLERANCE_NATS
    assert agree[0].interval.effect == pytest.approx(-81.0 + 80.01) and agree[0].paper_value == -80.01


def test_fail_and_inconclusive():
    out = _by_claim(claims(_frame({"GWG": (-320.0, 1.0), "Gibbs-1": (-300.0, 1.0)}, iterations=150)))
    c = out["EBM trained with GWG beats Gibbs at equal wall-clock (static_mnist)"]
    assert c.status == "FAIL" and "reduced sizes" in c.note
    assert all(a.status == "FAIL" for a in out.values() if a.direction == 0)  # 200+ nats off the paper
    close = {"GWG": (-100.0, 2.0), "Gibbs-1": (-101.0, 2.0)}
    out = _by_claim(claims(_frame(close, se_metric="test_log_likelihood_se")))
    c = out["EBM trained with GWG beats Gibbs at equal wall-clock (static_mnist)"]
    assert c.status == "INCONCLUSIVE" and "test_log_likelihood_se" in c.note
    # agreement: -80.01 - 5 = -85.01; GWG -100 +- 3.9 lies wholly below: FAIL; an edge-straddling one is INCONCLUSIVE
    edge = [a for a in claims(_frame({"GWG": (-85.0, 2.0)})) if a.direction == 0]
    assert [a.status for a in edge] == ["INCONCLUSIVE"]


def test_base_claim_only_with_its_row_and_no_agreement_without_a_paper_number():
    assert not any("base" in c.claim for c in claims(_frame({"GWG": (-90.0, 0.5)})))
    (c,) = [c for c in claims(_frame({"GWG": (-90.0, 0.5)}, base=-200.0)) if "base" in c.claim]
    assert c.status == "PASS" and c.interval.effect == pytest.approx(110.0)
    assert c.interval.high - c.interval.low == pytest.approx(2 * Z * 0.5)
    frey = claims(_frame({"GWG": (-2700.0, 1.0)}, dataset="frey"))
    assert frey == []  # GWG only, no Table 2 number in nats, no base row


def _with_convergence(frame: pd.DataFrame, points: dict, sampler: str = "GWG") -> pd.DataFrame:
    """points: AIS levels -> (log-likelihood, log_z_se) of the ``sampler`` run."""
    rows = [(sampler, m, v, k) for k, (ll, se) in points.items()
            for m, v in (("convergence_log_likelihood", ll), ("convergence_log_z_se", se))]
    extra = pd.DataFrame(rows, columns=["sampler", "metric", "value", "step"]).assign(
        experiment="ebm", target="static_mnist", seed=0, chain=0)
    return pd.concat([frame, extra], ignore_index=True)


@pytest.mark.parametrize("points, span, status, literal", [
    ({1000: (-90.0, 0.2), 2000: (-89.8, 0.2), 4000: (-89.9, 0.1)}, (1000, 4000), "PASS", "yes"),  # +0.1: no decade,
    ({1000: (-95.0, 0.5), 2000: (-93.0, 0.2), 4000: (-90.0, 0.1)}, (1000, 4000), "FAIL", "no"),   # the widest span
    ({2000: (-90.0, 0.5), 4000: (-89.2, 0.5)}, (2000, 4000), "INCONCLUSIVE", "no"),               # +0.8 +- 1.39
    ({1000: (-99.0, 0.5), 3000: (-90.0, 0.2), 30_000: (-89.5, 0.1), 300_000: (-89.4, 0.1)},      # the paper's decade
     (30_000, 300_000), "PASS", "yes"),
])
def test_ais_convergence_claim_spans_the_papers_decade(points, span, status, literal):
    """Fig. 14: the estimate at the most levels K against the largest K' <= K / 10 (the paper's 30,000 -> 300,000),
    or the fewest levels; an equivalence test with the stated 1-nat band; without a config the needs are
    unchecked."""
    frame = _with_convergence(_frame({"GWG": (-90.0, 0.3)}), points)
    c = [c for c in claims(frame) if c.paper == "GWG Fig. 14"]
    assert len(c) == 1 and c[0].status == status
    (k_prev, k), (a, se_a), (b, se_b) = span, points[span[0]], points[span[1]]
    assert c[0].interval.effect == pytest.approx(b - a)
    assert c[0].interval.high - c[0].interval.effect == pytest.approx(Z * math.hypot(se_a, se_b))
    assert f"({k_prev} -> {k} levels)" in c[0].claim and c[0].tolerance == CONVERGENCE_NATS == 1.0
    assert c[0].measured.endswith(literal) and c[0].quote == QUOTES["fig14"] and c[0].kind == "equivalence"
    assert "2.40 nats" in c[0].margin_why and c[0].source == "GWG"


def test_no_convergence_claim_with_one_level():
    frame = _with_convergence(_frame({"GWG": (-90.0, 0.3)}), {2000: (-90.0, 0.2)})
    assert not [c for c in claims(frame) if c.paper == "GWG Fig. 14"]


GIBBS_FALLING = {4000: (-15.7, 1.0), 8000: (-23.1, 1.0)}  # -7.4 +- 2.8 nats on doubling: convergence FAILs
GWG_STEADY = {4000: (-102.9, 0.9), 8000: (-103.5, 1.0)}    # -0.6 +- 2.6: INCONCLUSIVE, not demonstrably off


def test_an_unconverged_estimate_is_only_an_upper_bound():
    """The setting of the quick run with energy_l2 = 0.005: Gibbs-1's AIS estimate still falls by 7 nats per
    doubling, so Gibbs-1 above GWG cannot FAIL claim 1 (INCONCLUSIVE); GWG above an unconverged Gibbs still
    PASSes; an unconverged GWG estimate can no longer PASS against the base or Gibbs, but can still FAIL."""
    frame = _frame({"GWG": (-103.5, 1.0), "Gibbs-1": (-23.1, 1.0)}, base=-205.8)
    frame = _with_convergence(_with_convergence(frame, GWG_STEADY), GIBBS_FALLING, "Gibbs-1")
    out = _by_claim(claims(frame))
    conv = {c.claim: c.status for c in out.values() if c.paper == "GWG Fig. 14"}
    assert sorted(conv.values()) == ["FAIL", "INCONCLUSIVE"]
    c = out["EBM trained with GWG beats Gibbs at equal wall-clock (static_mnist)"]
    half = Z * math.sqrt(2.0)
    assert c.status == "INCONCLUSIVE" and c.interval.high == math.inf  # the two-sided interval would FAIL
    assert c.interval.low == pytest.approx(-103.5 + 23.1 - half)
    assert "Gibbs-1's AIS estimate did not converge" in c.measured and "one-sided" in c.interval.method
    gibbs_agree = [a for a in out.values() if a.direction == 0 and "Gibbs-1" in a.claim and "Fig. 14" not in a.paper]
    assert [a.status for a in gibbs_agree] == ["INCONCLUSIVE"] and gibbs_agree[0].interval.low == -math.inf
    base = [a for a in out.values() if "base" in a.claim]
    assert base[0].status == "PASS" and math.isfinite(base[0].interval.low)  # GWG converged: two-sided

    # GWG above an unconverged Gibbs-1: the lower bound stands, PASS
    frame = _frame({"GWG": (-103.5, 1.0), "Gibbs-1": (-123.1, 1.0)})
    frame = _with_convergence(frame, {4000: (-115.7, 1.0), 8000: (-123.1, 1.0)}, "Gibbs-1")
    c = _by_claim(claims(frame))["EBM trained with GWG beats Gibbs at equal wall-clock (static_mnist)"]
    assert c.status == "PASS" and c.interval.high == math.inf

    # GWG's own estimate unconverged: its PASSes become INCONCLUSIVE, a FAIL (its upper bound too low) stays
    frame = _frame({"GWG": (-103.5, 1.0), "Gibbs-1": (-110.0, 1.0)}, base=-205.8)
    frame = _with_convergence(frame, {4000: (-96.0, 1.0), 8000: (-103.5, 1.0)})
    out = _by_claim(claims(frame))
    assert out["EBM trained with GWG beats Gibbs at equal wall-clock (static_mnist)"].status == "INCONCLUSIVE"
    assert [a.status for a in out.values() if "base" in a.claim] == ["INCONCLUSIVE"]
    gwg_agree = [a for a in out.values() if a.direction == 0 and "EBM(GWG) test" in a.claim]
    assert [a.status for a in gwg_agree] == ["FAIL"]  # upper bound -101.5 < -80.01 - 5: FAIL regardless


def test_an_estimate_above_the_hard_bound_is_only_an_upper_bound():
    """No convergence rows, but Gibbs-1's estimate (-23) lies above its hard bound (-77): claim 1 loses its
    upper bound and is INCONCLUSIVE; a row below the bound changes nothing."""
    frame = _frame({"GWG": (-103.5, 1.0), "Gibbs-1": (-23.1, 1.0)})
    hard = pd.DataFrame([("Gibbs-1", "test_log_likelihood_upper_bound", -77.0)], columns=["sampler", "metric", "value"]
                        ).assign(experiment="ebm", target="static_mnist", seed=0, chain=0, step=300)
    c = _by_claim(claims(pd.concat([frame, hard], ignore_index=True)))[
        "EBM trained with GWG beats Gibbs at equal wall-clock (static_mnist)"]
    assert c.status == "INCONCLUSIVE" and c.interval.high == math.inf and "exceeds the hard bound -77.00" in c.measured
    conv = [c for c in claims(_with_convergence(pd.concat([frame, hard], ignore_index=True),
                                                {4000: (-23.0, 0.1), 8000: (-23.1, 0.1)}, "Gibbs-1"))
            if c.paper == "GWG Fig. 14"]
    assert conv[0].status == "PASS" and "above its hard upper bound -77.00" in conv[0].note
    fine = hard.assign(value=-10.0)
    c = _by_claim(claims(pd.concat([frame, fine], ignore_index=True)))[
        "EBM trained with GWG beats Gibbs at equal wall-clock (static_mnist)"]
    assert c.status == "FAIL" and math.isfinite(c.interval.high)


def test_a_hard_bound_below_gwg_decides_the_equal_time_claim():
    """Gibbs-1's AIS estimate (-23) is provably too high, and its hard bound (-125) lies below GWG's estimate
    (-103.5 +- 1.96 sqrt 2): the bound stands in for the estimate, effect 21.5 with a lower end above 0: PASS;
    the Gibbs-1 agreement claim (upper bound -125 < -117.17 - 5) FAILs; a bound of -104 decides nothing."""
    frame = _frame({"GWG": (-103.5, 1.0), "Gibbs-1": (-23.1, 1.0)})
    hard = pd.DataFrame([("Gibbs-1", "test_log_likelihood_upper_bound", -125.0)],
                        columns=["sampler", "metric", "value"]).assign(
        experiment="ebm", target="static_mnist", seed=0, chain=0, step=300)
    out = _by_claim(claims(pd.concat([frame, hard], ignore_index=True)))
    c = out["EBM trained with GWG beats Gibbs at equal wall-clock (static_mnist)"]
    assert c.status == "PASS" and c.interval.effect == pytest.approx(21.5)
    assert c.interval.low == pytest.approx(21.5 - Z * math.sqrt(2.0)) and c.interval.high == math.inf
    assert "the bound stands in for it" in c.measured
    gibbs = [a for a in out.values() if a.direction == 0 and "EBM(Gibbs-1) test" in a.claim]
    assert [a.status for a in gibbs] == ["FAIL"] and gibbs[0].interval.effect == pytest.approx(-125.0 + 117.17)
    close = hard.assign(value=-104.0)
    c = _by_claim(claims(pd.concat([frame, close], ignore_index=True)))[
        "EBM trained with GWG beats Gibbs at equal wall-clock (static_mnist)"]
    assert c.status == "INCONCLUSIVE" and c.interval.effect == pytest.approx(0.5)


def _config(num_steps: int = 800, iterations: int = 50_000, levels: int = 300_000, frey: dict | None = None) -> dict:
    """The paper's sizes (Gibbs-1 with the 800 steps the paper's numbers imply), with the given changes."""
    train = {"iterations": iterations, "num_steps": num_steps}
    if frey:
        train["overrides"] = {"frey": frey}
    return {"ebm": {"equal_time": True, "model": {"channels": 64, "num_blocks": 8}, "train": train,
                    "ais": {"num_intermediate": levels, "num_chains": 32, "convergence": [30_000, 300_000],
                            "overrides": {}}}}


def test_claims_quote_the_paper_and_name_their_test():
    frame = _with_convergence(_frame({"GWG": (-81.0, 0.3), "Gibbs-1": (-118.0, 0.4)}, base=-200.0),
                              {30_000: (-81.0, 0.1), 300_000: (-81.0, 0.1)})
    out = _by_claim(claims(frame))
    c = out["EBM trained with GWG beats Gibbs at equal wall-clock (static_mnist)"]
    assert c.kind == "superiority" and QUOTES["equal_time"] in c.quote and "-80.01 -117.17" in c.quote
    agree = [a for a in out.values() if a.kind == "agreement"]
    assert len(agree) == 2 and all(a.quote == QUOTES["table2_static_mnist"] and a.source == "GWG" for a in agree)
    assert all("stated allowance" in a.margin_why and "2.40 nats" in a.margin_why for a in agree)
    base = out["EBM trained with GWG beats its data-fitted base distribution (static_mnist)"]
    assert base.source == "other" and base.kind == "superiority" and "sanity" in base.paper
    assert [n.key for n in base.needs] == ["ebm.ais.num_chains"]
    baselines = {k: v for k, v in out.items() if "of Table 2" in k}
    assert set(baselines) == {f"EBM trained with GWG beats the {b} of Table 2 (static_mnist)"
                              for b in ("VAE (MLP)", "VAE (Conv)", "RBM", "DBN")}
    vae = baselines["EBM trained with GWG beats the VAE (Conv) of Table 2 (static_mnist)"]
    assert vae.status == "PASS" and vae.interval.effect == pytest.approx(-81.0 + 82.41) and vae.paper_value == -82.41
    assert vae.quote.startswith(QUOTES["outperforms"]) and vae.kind == "superiority"
    # dynamic MNIST: the paper's own table has the conv VAE (-80.40) ahead of EBM(GWG) (-80.51): no claim
    dyn = _by_claim(claims(_frame({"GWG": (-81.0, 0.3)}, dataset="dynamic_mnist")))
    assert [k for k in dyn if "of Table 2" in k] == ["EBM trained with GWG beats the VAE (MLP) of Table 2 "
                                                      "(dynamic_mnist)"]


def test_quick_sizes_make_the_table2_claims_not_decidable_but_keep_our_value():
    """The quick config's 1,000 iterations of a 16-channel net and 4,000 AIS levels decide none of the paper's
    numbers or comparisons; the sanity check against the base is still decided."""
    from gradmc.config import load_config
    quick = load_config("config/quick.yaml")
    frame = _with_convergence(_frame({"GWG": (-107.2, 0.9), "Gibbs-1": (-26.1, 1.0)}, base=-205.8),
                              {4000: (-104.6, 0.9), 8000: (-107.2, 0.9)})
    out = claims(frame, quick)
    by = _by_claim(out)
    assert by["EBM trained with GWG beats its data-fitted base distribution (static_mnist)"].status == "PASS"
    rest = [c for c in out if c.source == "GWG"]
    assert rest and all(c.status == NOT_DECIDABLE_SCALE for c in rest)
    gwg = next(c for c in rest if c.claim.startswith("our EBM(GWG)"))
    assert gwg.interval.effect == pytest.approx(-107.2 + 80.01) and gwg.paper_value == -80.01
    note = gwg.row()["note"]
    assert "training iterations >= 50,000 (config ebm.train.iterations = 1,000: unmet" in note
    assert "feature maps of the ResNet energy >= 64 (config ebm.model.channels = 16: unmet" in note
    assert "AIS intermediate distributions >= 300,000 (config ebm.ais.num_intermediate = 4,000: unmet" in note


def test_gibbs_claims_need_the_papers_stable_gibbs_protocol():
    """With 40 steps per iteration (GWG's count, shared by every sampler) Gibbs-1 is trained below the 800 steps
    the paper needed: its claims are not decidable, while GWG's claims at the paper's sizes are decided (a FAIL
    stays a FAIL). With 800 steps they are decided."""
    frame = _frame({"GWG": (-100.0, 0.5), "Gibbs-1": (-118.0, 0.4)})
    out = _by_claim(claims(frame, _config(num_steps=40)))
    gibbs = [c for k, c in out.items() if "Gibbs" in k]
    assert len(gibbs) == 2 and all(c.status == NOT_DECIDABLE_SCALE for c in gibbs)
    assert "Gibbs-1 steps per training iteration >= 800 (config ebm.train.num_steps = 40: unmet" in \
        gibbs[0].row()["note"]
    assert out["our EBM(GWG) test log-likelihood on static_mnist agrees with the paper's -80.01 nats"].status == "FAIL"
    decided = _by_claim(claims(frame, _config(num_steps=800)))
    assert decided["EBM trained with GWG beats Gibbs at equal wall-clock (static_mnist)"].status == "PASS"
    off = _config()
    off["ebm"]["equal_time"] = False
    assert _by_claim(claims(frame, off))["EBM trained with GWG beats Gibbs at equal wall-clock (static_mnist)"] \
        .status == NOT_DECIDABLE_SCALE


def test_fewer_than_32_ais_chains_make_every_ais_claim_not_decidable():
    """Below 32 AIS chains no run gives an interval (min_ais_weights_ess is infinite): the config alone makes every
    claim from AIS, the sanity check included, NOT DECIDABLE; 32 chains decide it."""
    frame = _with_convergence(_frame({"GWG": (-81.0, 0.3), "Gibbs-1": (-118.0, 0.4)}, base=-200.0),
                              {30_000: (-81.0, 0.1), 300_000: (-81.0, 0.1)})
    few = _config()
    few["ebm"]["ais"]["num_chains"] = 4
    out = claims(frame, few)
    assert out and all(c.status == NOT_DECIDABLE_SCALE for c in out)
    assert all("AIS chains (fewer give no calibrated interval) >= 32 (config ebm.ais.num_chains = 4: unmet"
               in c.row()["note"] for c in out)
    enough = _config()
    enough["ebm"]["ais"]["num_chains"] = 32
    out = _by_claim(claims(frame, enough))
    assert out["EBM trained with GWG beats its data-fitted base distribution (static_mnist)"].status == "PASS"


def test_needs_read_a_data_sets_override_and_fig14_needs_the_papers_levels():
    frey = _with_convergence(_frame({"GWG": (-2470.0, 1.0)}, dataset="frey"),
                             {30_000: (-2470.0, 0.1), 300_000: (-2470.1, 0.1)}).assign(target="frey")
    (c,) = claims(frey, _config(frey={"iterations": 120}))
    assert c.paper == "GWG Fig. 14" and c.status == NOT_DECIDABLE_SCALE
    assert "config ebm.train.overrides.frey.iterations = 120: unmet" in c.row()["note"]
    (c,) = claims(frey, _config())
    assert c.status == "PASS" and "(30000 -> 300000 levels)" in c.claim
    few = _config()
    few["ebm"]["ais"]["convergence"] = [4000, 8000]
    (c,) = claims(frey, few)
    assert c.status == NOT_DECIDABLE_SCALE and "span of the convergence check" in c.row()["note"]


def test_an_unconverged_estimate_stays_an_upper_bound_when_its_check_is_not_decidable():
    """The convergence check's interval marks an estimate as an upper bound even where the Fig. 14 claim itself
    is not decidable at the config's scale."""
    frame = _with_convergence(_frame({"GWG": (-103.5, 1.0), "Gibbs-1": (-23.1, 1.0)}), GIBBS_FALLING, "Gibbs-1")
    out = _by_claim(claims(frame, _config(num_steps=40)))
    conv = [c for c in out.values() if c.paper == "GWG Fig. 14"]
    assert [c.status for c in conv] == [NOT_DECIDABLE_SCALE]
    gibbs = out["our EBM(Gibbs-1) test log-likelihood on static_mnist agrees with the paper's -117.17 nats"]
    assert gibbs.interval.low == -math.inf and "did not converge" in gibbs.interval.method


def _with_ess(frame: pd.DataFrame, ess: dict) -> pd.DataFrame:
    """``frame`` with each sampler's ``ais_weights_ess`` row set to ``ess[sampler]``."""
    out = frame.copy()
    for sampler, value in ess.items():
        out.loc[(out["sampler"] == sampler) & (out["metric"] == "ais_weights_ess"), "value"] = value
    return out


def test_too_few_effective_ais_chains_give_no_interval():
    """Below MIN_AIS_WEIGHTS_ESS (25 = 25/32 of the 32 chains its coverage was measured with) the normal interval
    from the AIS standard error covers under 93%: every interval that rests on that run is unbounded and its verdict
    INCONCLUSIVE, however far the estimate lies from the null; at the threshold the interval is the normal one."""
    from gradmc.experiments.ebm.claims import AIS_REFERENCE_CHAINS, MIN_AIS_ESS_FRACTION, MIN_AIS_WEIGHTS_ESS

    assert MIN_AIS_WEIGHTS_ESS == MIN_AIS_ESS_FRACTION * AIS_REFERENCE_CHAINS == 25.0
    clear = {"GWG": (-81.0, 0.3), "Gibbs-1": (-118.0, 0.4)}  # 37 nats apart, SE 0.5: PASS with enough chains
    base = _frame(clear, base=-150.0)
    at = _by_claim(claims(_with_ess(base, {"GWG": 25.0, "Gibbs-1": 25.0})))
    ok = at["EBM trained with GWG beats Gibbs at equal wall-clock (static_mnist)"]
    assert ok.status == "PASS" and ok.interval.high - ok.interval.effect == pytest.approx(Z * 0.5)
    low = _by_claim(claims(_with_ess(base, {"GWG": 50.0, "Gibbs-1": 19.0})))
    c = low["EBM trained with GWG beats Gibbs at equal wall-clock (static_mnist)"]
    assert c.status == "INCONCLUSIVE" and c.interval.effect == pytest.approx(37.0)
    assert (c.interval.low, c.interval.high) == (-math.inf, math.inf)
    assert "AIS weights ESS Gibbs-1 19 < 25" in c.interval.method and "GWG" not in c.interval.method.split(";")[0]
    assert "the chain count is not known" in c.interval.method  # no config here
    # with the config's chain count: 100 chains need an ESS of 50, so GWG's 50 passes and Gibbs-1's 19 does not
    from gradmc.config import load_config

    config = load_config("config/paper.yaml")  # 100 AIS chains
    hundred = _by_claim(claims(_with_ess(base, {"GWG": 50.0, "Gibbs-1": 19.0}), config))
    assert "ESS Gibbs-1 19 < 50 of 100 AIS chains" in hundred[c.claim].interval.method
    gate = _by_claim(claims(_with_ess(base, {"GWG": 40.0, "Gibbs-1": 60.0}), config))
    assert "ESS GWG 40 < 50 of 100 AIS chains" in gate[c.claim].interval.method  # 40 passes at 32 chains, not 100
    assert "interval_method column says why" in c.row()["note"] and "AIS evaluations" not in c.row()["note"]
    # Gibbs-1's own agreement claim is unbounded; GWG's claims (ESS 50) keep their normal intervals
    gibbs = [x for x in low.values() if x.direction == 0 and "Gibbs-1" in x.claim]
    assert [x.status for x in gibbs] == ["INCONCLUSIVE"] and math.isinf(gibbs[0].interval.low)
    gwg = [x for x in low.values() if "Gibbs" not in x.claim]  # agreement, baselines, base: all rest on GWG's run
    assert gwg and all(math.isfinite(x.interval.low) and math.isfinite(x.interval.high) for x in gwg)
    assert low["EBM trained with GWG beats its data-fitted base distribution (static_mnist)"].status == "PASS"
    few = _by_claim(claims(_with_ess(base, {"GWG": 9.0, "Gibbs-1": 50.0})))
    assert {x.status for x in few.values() if "Gibbs-1)" not in x.claim and "Gibbs-1 test" not in x.claim} == {
        "INCONCLUSIVE"}
    # no ais_weights_ess row: unchecked, the normal interval
    none = _by_claim(claims(base[base["metric"] != "ais_weights_ess"]))
    assert none["EBM trained with GWG beats Gibbs at equal wall-clock (static_mnist)"].status == "PASS"


def test_the_convergence_claim_checks_the_ess_of_its_recorded_run():
    """The ais_weights_ess row is the final estimate's run (its step: that run's levels); the convergence claim
    checks it when that run is one of its two, and says when a run's ESS is not in the metrics."""
    points = {2000: (-90.0, 0.1), 4000: (-90.1, 0.1)}
    frame = _with_convergence(_frame({"GWG": (-90.0, 0.3)}), points)
    frame.loc[frame["metric"] == "ais_weights_ess", "step"] = 4000
    (ok,) = [c for c in claims(frame) if c.paper == "GWG Fig. 14"]
    assert ok.status == "PASS" and "weights ESS of the 2000 levels run is not in the metrics" in ok.interval.method
    frame.loc[frame["metric"] == "ais_weights_ess", "value"] = 12.0
    (few,) = [c for c in claims(frame) if c.paper == "GWG Fig. 14"]
    assert few.status == "INCONCLUSIVE" and math.isinf(few.interval.low) and math.isinf(few.interval.high)
    assert "AIS weights ESS 4000 levels 12 < 25" in few.interval.method


def test_gibbs_steps_need_reads_the_samplers_own_step_count():
    """Gibbs-1's steps come from ebm.train.steps_by_sampler where set (a data set's override replaces the whole
    mapping), else from num_steps; GWG's from num_steps unless it has an entry of its own."""
    from gradmc.experiments.ebm.claims import protocol_needs

    def gibbs(config, dataset="static_mnist", sampler="Gibbs-1"):
        (need,) = [n for n in protocol_needs(config, dataset, sampler) if "steps per training iteration" in n.what]
        return need.key, need.have

    train = {"iterations": 10, "num_steps": 10, "steps_by_sampler": {"Gibbs-1": 800}}
    config = {"ebm": {"equal_time": True, "model": {"channels": 64, "num_blocks": 8}, "train": train}}
    assert gibbs(config) == ("ebm.train.steps_by_sampler.Gibbs-1", 800.0)
    assert gibbs(config, sampler="GWG") == ("ebm.train.num_steps", 10.0)
    train["overrides"] = {"frey": {"steps_by_sampler": {"GWG": 40}}}
    assert gibbs(config, "frey") == ("ebm.train.num_steps", 10.0)
    assert gibbs(config, "frey", "GWG") == ("ebm.train.overrides.frey.steps_by_sampler.GWG", 40.0)
    del train["steps_by_sampler"]
    assert gibbs(config) == ("ebm.train.num_steps", 10.0)
