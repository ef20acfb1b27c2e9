"""GWG Fig. 3 experiment module (EXPERIMENTS.md A1) as a standard experiment: shards from the config part the
registry selects and the stage inputs, run(), and finalize() adding the Target row (exact: the reference's
stored log MMD)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch
import yaml
from _t_bounds import t_bounds

from gradmc.claims.base import NOT_DECIDABLE_SCALE, NOT_RUN
from gradmc.config import fill_defaults
from gradmc.experiments import rbm_sampling as exp
from gradmc.experiments.rbm_model import save_rbm
from gradmc.experiments.rbm_reference import reference_stage
from gradmc.experiments.rbm_sampling.claims import HALFWAY_MARGIN, MMD_MARGIN, QUOTES, claims
from gradmc.experiments.standard import collect, job_config
from gradmc.registry import standard
from gradmc.results import validate_metrics
from gradmc.targets import RBM

SPEC = {"num_hidden": 4, "train": {"epochs": 1, "batch_size": 10, "lr": 1e-3, "cd_steps": 1},
        "reference": {"num_samples": 20, "num_steps": 5}, "samplers": ["Gibbs-1", "GWG"], "seeds": [0, 1],
        "num_chains": 6, "num_steps": 12, "mmd_every": 4, "burn_in_fraction": 0.1}


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    folder = tmp_path_factory.mktemp("rbm_sampling")
    g = torch.Generator().manual_seed(0)
    rbm = RBM(16, 4, weight_std=0.5, generator=g)
    save_rbm(rbm, folder / "rbm.pt", {})
    train = torch.bernoulli(torch.full((40, 16), 0.4), generator=g).numpy().astype(np.uint8)
    np.savez(folder / "mnist.npz", train=train)
    paths = {"model": str(folder / "rbm.pt"), "reference": str(folder / "reference.npz"),
             "data": str(folder / "mnist.npz")}
    reference_stage(fill_defaults({"device": "cpu", "rbm_sampling": SPEC}), paths["model"], paths["data"],
                    paths["reference"], progress=None)
    return paths


def test_the_job_reads_only_its_declared_keys():
    entry = standard("rbm_sampling")
    assert set(entry.inputs) == {"model", "reference", "data"}
    config = fill_defaults({"name": "t", "device": "cpu", "rbm_sampling": SPEC})
    part = job_config("rbm_sampling", config)
    assert set(part["rbm_sampling"]) == {"samplers", "seeds", "num_chains", "num_steps", "mmd_every",
                                         "burn_in_fraction"}  # not train, reference or num_hidden
    assert entry.message.format(**part["rbm_sampling"]) == "Sampling the RBM: ['Gibbs-1', 'GWG'] x seeds [0, 1] on Ray"


def test_shards_run_and_finalize(inputs):
    config = job_config("rbm_sampling", fill_defaults({"name": "t", "device": "cpu", "rbm_sampling": SPEC}))
    shards = exp.shards(config, inputs)
    assert [(s.sampler, s.seed) for s in shards] == [("Gibbs-1", 0), ("Gibbs-1", 1), ("GWG", 0), ("GWG", 1)]
    assert all(s.model_path == inputs["model"] and s.num_chains == 6 for s in shards)
    df = collect("rbm_sampling", [exp.run(s) for s in shards], inputs)
    validate_metrics(df)
    target = df[df["sampler"] == "Target"]
    with np.load(inputs["reference"]) as npz:
        stored = float(npz["target_log_mmd"])
    assert target["metric"].tolist() == ["log_mmd_target"] and target["value"].iloc[0] == stored
    mmd = df[(df["metric"] == "log_mmd") & (df["sampler"] == "GWG") & (df["seed"] == 0)]
    assert mmd["step"].tolist() == [0, 4, 8, 12]
    assert list(df.index) == list(df.sort_values(list(standard("rbm_sampling").sort_by), kind="stable").index)


def test_smoke_config_gives_the_shards():
    with open(Path(__file__).resolve().parents[1] / "config" / "smoke.yaml") as fh:
        smoke = yaml.safe_load(fh)
    part = job_config("rbm_sampling", fill_defaults(smoke))
    shards = exp.shards(part, {"model": "m.pt", "reference": "r.npz", "data": "d.npz"})
    assert len(shards) == len(smoke["rbm_sampling"]["samplers"]) * len(smoke["rbm_sampling"]["seeds"])


# ---- claims (gradmc.experiments.rbm_sampling.claims) on synthetic metrics ----

#: Per-chain ESS of every seed's chains (4 chains); GWG > Gibbs-1, GWG < Gibbs-2, GWG ~ HB-10-1 (noisy).
CHAIN_ESS = {"GWG": [20.0, 22.0, 18.0, 20.0], "Gibbs-1": [5.0, 6.0, 4.0, 5.0], "Gibbs-2": [40.0, 44.0, 36.0, 40.0],
             "HB-10-1": [2.0, 40.0, 10.0, 30.0], "GWG-3": [30.0, 30.0, 30.0, 30.0]}
#: Final log10 MMD^2 per seed (5 seeds).
FINAL_MMD = {"GWG": [-3.0, -3.1, -2.9, -3.0, -3.05], "Gibbs-1": [-2.0, -2.1, -2.2, -2.05, -1.9],
             "Gibbs-2": [-3.5, -3.62, -3.44, -3.57, -3.45], "HB-10-1": [-2.5, -3.6, -2.8, -3.4, -2.9],
             "GWG-3": [-3.2, -3.3, -3.1, -3.3, -3.2]}


def _claims_frame(num_steps: int = 10_000, ess=CHAIN_ESS, mmd=FINAL_MMD) -> pd.DataFrame:
    rows = []
    for sampler, finals in mmd.items():
        for seed, final in enumerate(finals):
            rows.append((sampler, seed, -1, 0, "log_mmd", -2.0))
            rows.append((sampler, seed, -1, num_steps, "log_mmd", final))
            for chain, value in enumerate(ess[sampler]):
                rows.append((sampler, seed, chain, num_steps, "ess", value * (1.0 + 0.01 * seed)))
            rows.append((sampler, seed, -1, num_steps, "ess_all_chains", 99.0))
    rows.append(("Target", -1, -1, 0, "log_mmd_target", -3.3))
    df = pd.DataFrame(rows, columns=["sampler", "seed", "chain", "step", "metric", "value"])
    df.insert(0, "experiment", "rbm_sampling")
    return df


def test_claims_pass_fail_and_inconclusive():
    out = {c.claim: c for c in claims(_claims_frame())}
    assert {k: c.status for k, c in out.items()} == {
        "GWG ESS > Gibbs-1 ESS on the MNIST RBM": "PASS", "GWG ESS > Gibbs-2 ESS on the MNIST RBM": "FAIL",
        "GWG ESS > HB-10-1 ESS on the MNIST RBM": "INCONCLUSIVE",
        "GWG's final log MMD is lower than Gibbs-1's": "PASS", "GWG's final log MMD is lower than Gibbs-2's": "FAIL",
        "GWG's final log MMD is lower than HB-10-1's": "INCONCLUSIVE",
        "GWG's final log MMD matches block Gibbs's": NOT_RUN,
        "GWG's ESS lies about halfway between the baselines' and block Gibbs's (log-space)": NOT_RUN,
        "GWG-3 ESS > GWG ESS on the MNIST RBM": "PASS",
        "GWG-3 converges faster than GWG (lower log MMD over the run)": "PASS",
        "GWG-5 ESS > GWG ESS on the MNIST RBM": NOT_RUN,
        "GWG-5 converges faster than GWG (lower log MMD over the run)": NOT_RUN}
    ess = out["GWG ESS > Gibbs-1 ESS on the MNIST RBM"]
    assert ess.interval.unit == "chains" and ess.interval.replicates == 20  # 5 seeds x 4 chains, pooled
    assert np.isclose(ess.interval.effect, np.log(20.0 / 5.0)) and ess.note == ""
    # by hand: the t interval (t union bootstrap-t, tests/_t_bounds.py) over 5 seeds of final log MMD GWG - Gibbs-1
    d = np.array(FINAL_MMD["GWG"]) - np.array(FINAL_MMD["Gibbs-1"])
    mmd = out["GWG's final log MMD is lower than Gibbs-1's"]
    assert mmd.direction == -1 and mmd.interval.unit == "seeds"
    assert np.allclose([mmd.interval.effect, mmd.interval.low, mmd.interval.high], [d.mean(), *t_bounds(d)])
    assert "target (two reference sets) -3.300" in mmd.measured
    assert "BlockGibbs" in out["GWG's final log MMD matches block Gibbs's"].row()["note"]
    assert "rbm_sampling.samplers" in out["GWG-5 ESS > GWG ESS on the MNIST RBM"].row()["note"]


def test_faster_convergence_reads_the_whole_curve():
    """Fig. 9's "faster convergence": GWG-3 ends where GWG ends, but gets there sooner (lower at the middle step)."""
    rows = []
    for seed in range(5):
        for step, gwg, multi in ((0, -1.0, -1.0), (500, -2.0, -2.8 - 0.02 * seed), (1000, -3.0, -3.0)):
            rows += [("GWG", seed, -1, step, "log_mmd", gwg), ("GWG-3", seed, -1, step, "log_mmd", multi)]
    df = pd.DataFrame(rows, columns=["sampler", "seed", "chain", "step", "metric", "value"])
    df.insert(0, "experiment", "rbm_sampling")
    (faster,) = [c for c in claims(df) if c.claim == "GWG-3 converges faster than GWG (lower log MMD over the run)"]
    assert faster.status == "PASS" and faster.interval.effect == pytest.approx(-(0.8 + 0.04) / 3)
    assert "averaged over the run's recorded steps" in faster.effect_name


def test_claims_quote_the_paper_and_name_their_tests():
    out = claims(_claims_frame())
    assert all(c.source == "GWG" and c.quote in QUOTES.values() for c in out)
    by = {c.claim: c for c in out}
    assert by["GWG ESS > Gibbs-1 ESS on the MNIST RBM"].quote == QUOTES["caption"]
    assert by["GWG's final log MMD is lower than Gibbs-2's"].quote == QUOTES["mmd_match"]
    assert by["GWG-3 ESS > GWG ESS on the MNIST RBM"].quote == QUOTES["multi"]  # "greater ESS", Fig. 9
    assert by["GWG-3 ESS > GWG ESS on the MNIST RBM"].paper == "GWG Fig. 9"
    match = by["GWG's final log MMD matches block Gibbs's"]
    assert match.kind == "equivalence" and match.tolerance == MMD_MARGIN and "run-to-run" in match.margin_why
    assert {c.kind for c in out if "block Gibbs" not in c.claim} == {"superiority"}


def test_block_gibbs_claims_when_it_ran():
    """With the BlockGibbs sampler's rows: GWG's final log MMD vs block Gibbs's (equivalence, +-0.2) and GWG's
    log ESS halfway from the baselines' to block Gibbs's (equivalence, +-0.25 of the way)."""
    base = [5.0, 5.5, 4.5, 5.0]
    ess = {"GWG": [4 * x for x in base], "Gibbs-1": base, "Gibbs-2": base, "HB-10-1": base,
           "BlockGibbs": [16 * x for x in base]}
    mmd = {"GWG": [-3.0, -3.1, -2.9, -3.0, -3.05], "Gibbs-1": FINAL_MMD["Gibbs-1"], "Gibbs-2": FINAL_MMD["Gibbs-2"],
           "HB-10-1": FINAL_MMD["HB-10-1"], "BlockGibbs": [-3.05, -3.0, -2.95, -3.1, -3.0]}
    out = {c.claim: c for c in claims(_claims_frame(ess=ess, mmd=mmd))}
    match = out["GWG's final log MMD matches block Gibbs's"]
    d = np.array(mmd["GWG"]) - np.array(mmd["BlockGibbs"])
    assert match.status == "PASS" and np.isclose(match.interval.effect, d.mean()) and match.direction == 0
    halfway = out["GWG's ESS lies about halfway between the baselines' and block Gibbs's (log-space)"]
    assert halfway.status == "PASS" and np.isclose(halfway.interval.effect, 0.0, atol=1e-9)
    assert halfway.tolerance == HALFWAY_MARGIN and "at 0.50 of the log-space way" in halfway.measured
    near = {**ess, "BlockGibbs": [4.2 * x for x in base]}  # block Gibbs barely above GWG: GWG near the top
    far = {c.claim: c for c in claims(_claims_frame(ess=near, mmd={**mmd, "BlockGibbs": [-3.6] * 5}))}
    assert far["GWG's ESS lies about halfway between the baselines' and block Gibbs's (log-space)"].status == "FAIL"
    assert far["GWG's final log MMD matches block Gibbs's"].status == "FAIL"


def test_needs_come_from_the_config():
    """The paper's 10,000 sampler steps (and 10,000 block-Gibbs steps for the ground truth of the MMD claims);
    the later samplers' claims need nothing; a FAIL the paper's sizes decide is kept."""
    df = _claims_frame()
    quick = {"rbm_sampling": {"num_steps": 5000, "reference": {"num_steps": 10_000}}}
    out = {c.claim: c for c in claims(df, quick)}
    assert out["GWG ESS > Gibbs-2 ESS on the MNIST RBM"].status == NOT_DECIDABLE_SCALE
    assert "sampler steps >= 10,000 (config rbm_sampling.num_steps = 5,000: unmet" in out[
        "GWG ESS > Gibbs-2 ESS on the MNIST RBM"].row()["note"]
    short_ref = {"rbm_sampling": {"num_steps": 10_000, "reference": {"num_steps": 2000}}}
    out = {c.claim: c.status for c in claims(df, short_ref)}
    assert out["GWG ESS > Gibbs-2 ESS on the MNIST RBM"] == "FAIL"  # ESS does not use the ground truth
    assert out["GWG's final log MMD is lower than Gibbs-2's"] == NOT_DECIDABLE_SCALE
    paper = {"rbm_sampling": {"num_steps": 10_000, "reference": {"num_steps": 10_000}}}
    assert {c.claim: c.status for c in claims(df, paper)} == {c.claim: c.status for c in claims(df)}


def test_claims_closed_form_bootstrap_and_small_runs():
    flat = {k: [v[0]] * 5 for k, v in CHAIN_ESS.items()}
    df = _claims_frame(num_steps=500, ess=flat, mmd={k: v[:2] for k, v in FINAL_MMD.items()})
    df = df[~((df["metric"] == "ess") & (df["seed"] > 0))]  # one seed's chains: identical values, no spread
    out = {c.claim: c for c in claims(df)}
    ess = out["GWG ESS > Gibbs-1 ESS on the MNIST RBM"]
    assert np.allclose([ess.interval.effect, ess.interval.low, ess.interval.high], np.log(4.0))
    assert out["GWG's final log MMD is lower than Gibbs-1's"].status == "INCONCLUSIVE"  # 2 seeds: unbounded
    assert "500 steps (paper 10,000)" in ess.note
    assert claims(df[df["sampler"] != "GWG"]) == []
