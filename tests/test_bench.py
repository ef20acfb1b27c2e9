"""``make bench``: samplers.json layout (median + spread per sampler), the Potts suites' sizes, suite
selection (``--suite``), the ESS suite (skipped without data; finite, positive ESS/s on a tiny run).

Every test runs tiny sizes (``suite_params``) or few steps; the defaults are checked without running them."""

from __future__ import annotations

import inspect
import json
import math

import pytest
import torch

from gradmc.bench import catalog
from gradmc.bench.catalog import (
    GPC_SUITE,
    ISING_SUITE,
    KMC_SUITE,
    LATTICE_POTTS_SUITE,
    POTTS_SUITE,
    RBM_ESS_SUITE,
    RBM_SUITE,
    SCALING,
    TEXT_EBM_SUITE,
    select_suites,
)
from gradmc.bench.rbm_ess import rbm_ess_suite
from gradmc.bench.samplers import SUITES, build_lattice_potts, build_potts, run_benchmark
from gradmc.cli import main
from gradmc.cli.parser import build_parser
from gradmc.errors import InputError, UserError
from gradmc.evaluation.timing import spread
from gradmc.samplers.discrete.registry import make_sampler
from gradmc.seeding import make_generator

TINY = {
    RBM_SUITE: {"num_visible": 12, "num_hidden": 6, "num_chains": 4},
    ISING_SUITE: {"side": 4, "num_chains": 3},
    POTTS_SUITE: {"num_sites": 5, "num_states": 3, "num_chains": 4},
    LATTICE_POTTS_SUITE: {"side": 4, "num_chains": 4},
    TEXT_EBM_SUITE: {"vocab_size": 7, "max_length": 3, "embed_dim": 2, "hidden": 3, "proj": 4, "num_chains": 2},
}


def _check_row(row: dict, repeats: int) -> None:
    assert row["steps_per_s"] > 0 and math.isfinite(row["steps_per_s"])
    assert len(row["steps_per_s_runs"]) == row["repeats"] == repeats
    assert row["steps_per_s_min"] == min(row["steps_per_s_runs"])
    assert row["steps_per_s_max"] == max(row["steps_per_s_runs"])
    assert row["steps_per_s_min"] <= row["steps_per_s"] <= row["steps_per_s_max"]
    rel = (row["steps_per_s_max"] - row["steps_per_s_min"]) / row["steps_per_s"]
    assert row["steps_per_s_rel_spread"] == pytest.approx(rel)


def test_default_repeats_at_least_five():
    assert catalog.DEFAULT_REPEATS >= 5 and catalog.MIN_REPEATS >= 5
    assert inspect.signature(run_benchmark).parameters["repeats"].default >= 5
    assert build_parser().parse_args(["bench"]).repeats >= 5


def test_spread():
    row = spread([2.0, 4.0, 3.0])
    assert row == {"steps_per_s": 3.0, "steps_per_s_runs": [2.0, 4.0, 3.0], "steps_per_s_min": 2.0,
                   "steps_per_s_max": 4.0, "steps_per_s_rel_spread": pytest.approx(2 / 3), "repeats": 3}
    with pytest.raises(ValueError):
        spread([])


def test_time_sampler_runs_on_the_benchmark_timer_and_keeps_threads():
    """Each run is torch.utils.benchmark's Timer.timeit(steps): the chains go on from run to run (at least
    warmup + repeats * steps steps), the row has the median and the IQR of the runs, and torch's thread count
    is what it was (the Timer's default would be 1 thread)."""
    import torch

    from gradmc.evaluation.timing import time_sampler

    class Counting:
        steps = 0

        def init(self, x, log_prob):
            return x

        def step(self, state, log_prob, generator):
            Counting.steps += 1
            return state, type("Info", (), {"acceptance_prob": torch.ones(2), "energy_evals": 1, "grad_evals": 0})

    threads = torch.get_num_threads()
    row = time_sampler(Counting(), None, torch.zeros(2, 3), torch.Generator(), steps=4, repeats=3, warmup=2)
    assert Counting.steps >= 2 + 3 * 4 and torch.get_num_threads() == threads
    assert row["repeats"] == 3 and len(row["steps_per_s_runs"]) == 3 and row["ms_per_step_iqr"] >= 0
    assert row["ms_per_step"] == pytest.approx(1000 / row["steps_per_s"]) and row["acceptance_rate"] == 1.0


def test_layout_every_sampler_has_median_and_spread(tmp_path):
    out = tmp_path / "samplers.json"
    res = run_benchmark(out, steps=2, repeats=5, warmup=1, suites=list(TINY), suite_params=TINY, progress=None)
    assert json.loads(out.read_text()) == json.loads(json.dumps(res))
    assert res["repeats"] == 5 and res["steps_per_run"] == 2
    assert list(res["suites"]) == list(TINY)
    for suite, rows in res["suites"].items():
        assert list(rows) == list(SUITES[suite].samplers)
        for row in rows.values():
            _check_row(row, 5)
        settings = res["suite_settings"][suite]
        assert settings["repeats"] == 5 and settings["params"]["num_chains"] == TINY[suite]["num_chains"]
    categorical = {"GWG", "Gibbs-1", "DMALA", "DULA", "DLMC"}
    assert set(res["suites"][POTTS_SUITE]) == categorical == set(res["suites"][LATTICE_POTTS_SUITE])
    for later in ("PAS-3", "DMALA", "DULA", "DLMC", "DLMC-Euler", "ACS"):  # every later sampler is timed
        assert later in res["suites"][RBM_SUITE] and later in res["suites"][ISING_SUITE]
    # the authors' numbers sit outside `suites`, where a reader expects only samplers
    assert res["authors_reference"][POTTS_SUITE] == {"GWG": 64.0, "Gibbs-1": 26.0}
    assert res["authors_reference"][LATTICE_POTTS_SUITE] == {"GWG": 68.0}
    assert res["targets"][POTTS_SUITE]["GWG"] == 640.0


def test_text_ebm_suite_caps_its_steps_and_times_the_energy_alone(tmp_path):
    """The paper-size text suite takes about a second a step: at most 5 timed steps per run and 2 warm-up
    steps, whatever the global settings; its settings add the energy's own forward + backward time."""
    res = run_benchmark(tmp_path / "s.json", steps=50, repeats=5, warmup=20, suites=[TEXT_EBM_SUITE],
                        suite_params={TEXT_EBM_SUITE: TINY[TEXT_EBM_SUITE]}, progress=None)
    row, settings = res["suites"][TEXT_EBM_SUITE]["GWG"], res["suite_settings"][TEXT_EBM_SUITE]
    _check_row(row, 5)
    assert row["steps_per_run"] == settings["steps_per_run"] == 5 and settings["warmup"] == 2
    assert settings["params"]["x0_shape"] == [2, 3, 7] and settings["state"] == "categorical"
    assert 0 < settings["energy_grad_ms"] < math.inf
    defaults = inspect.signature(SUITES[TEXT_EBM_SUITE].build).parameters
    assert [defaults[k].default for k in ("vocab_size", "max_length", "embed_dim", "hidden", "proj")] == \
        [10000, 20, 256, 512, 512]  # the paper's sizes (GWG App. J)


def test_subset_run_keeps_the_other_suites(tmp_path):
    out = tmp_path / "samplers.json"
    run_benchmark(out, steps=1, repeats=5, warmup=0, suites=[ISING_SUITE],
                  suite_params={ISING_SUITE: TINY[ISING_SUITE]}, progress=None)
    first = json.loads(out.read_text())["suites"][ISING_SUITE]
    res = run_benchmark(out, steps=1, repeats=6, warmup=0, suites=[LATTICE_POTTS_SUITE],
                        suite_params={LATTICE_POTTS_SUITE: TINY[LATTICE_POTTS_SUITE]}, progress=None)
    assert res["suites"][ISING_SUITE] == first  # untouched
    settings = res["suite_settings"]
    assert settings[ISING_SUITE]["repeats"] == 5 and settings[LATTICE_POTTS_SUITE]["repeats"] == 6
    assert list(res["suites"]) == [ISING_SUITE, LATTICE_POTTS_SUITE]  # catalogue order


def test_kmc_rows_have_steps_per_s_and_spread(tmp_path, monkeypatch):
    """kmc_finite_suite renames time_sampler's median to chain-iterations/s; the bench puts steps_per_s back. (The
    real suite takes ~10 s: its rows are made here the way it makes them, from a tiny time_sampler run.)"""
    import gradmc.bench.samplers as samplers_mod
    from gradmc.bench.samplers import build_ising
    from gradmc.evaluation.timing import time_sampler

    def tiny_kmc(*, steps, repeats):
        target, x0 = build_ising(make_generator(0), side=3, num_chains=2)
        row = time_sampler(make_sampler("GWG"), target, x0, make_generator(1), steps=steps, repeats=repeats, warmup=0)
        row["iterations_per_s"] = row.pop("steps_per_s") * 2
        row["ms_per_iteration"] = row.pop("ms_per_step")
        return {"2_chains": row}

    monkeypatch.setattr(samplers_mod, "kmc_finite_suite", tiny_kmc)
    res = run_benchmark(tmp_path / "s.json", steps=1, repeats=5, suites=[KMC_SUITE], progress=None)
    for row in res["suites"][KMC_SUITE].values():
        _check_row(row, 5)
        assert row["iterations_per_s"] == pytest.approx(2 * row["steps_per_s"])


def test_potts_suites_default_sizes():
    potts, x0 = build_potts(make_generator(0))
    assert (potts.num_sites, potts.num_states) == (48, 21) and x0.shape == (100, 48, 21)
    J = potts.J
    assert torch.equal(J, J.permute(1, 0, 3, 2)) and not J[torch.arange(48), torch.arange(48)].any()
    assert 0.07 < float(J[0, 1].std()) < 0.13 and 0.8 < float(potts.h.std()) < 1.2
    lattice, y0 = build_lattice_potts(make_generator(0))
    assert (lattice.side, lattice.num_states, lattice.theta) == (20, 3, 1.0) and y0.shape == (100, 400, 3)
    for target, x in ((potts, x0), (lattice, y0)):
        assert torch.equal(x.sum(-1), torch.ones(x.shape[:2]))  # one-hot
        sampler = make_sampler("GWG", state="categorical")
        state, info = sampler.step(sampler.init(x, target), target, make_generator(1))
        assert state.x.shape == x.shape
    for suite in (POTTS_SUITE, LATTICE_POTTS_SUITE):
        assert SUITES[suite].samplers == ("GWG", "Gibbs-1", "DMALA", "DULA", "DLMC")
        assert SUITES[suite].state == "categorical"


def test_unknown_suite_refused(tmp_path, capsys):
    with pytest.raises(InputError, match="unknown bench suite 'nope'.*potts_48x21_100chains"):
        select_suites(["nope"])
    with pytest.raises(UserError):
        run_benchmark(tmp_path / "s.json", suites=[POTTS_SUITE, "nope"], progress=None)
    assert not (tmp_path / "s.json").exists()
    assert main(["bench", "--out", str(tmp_path), "--suite", "nope"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "unknown bench suite 'nope'" in err[0]
    assert select_suites(None)[-3:] == (SCALING, "threads", "peers")
    assert select_suites([GPC_SUITE, RBM_SUITE]) == (RBM_SUITE, GPC_SUITE)


def test_bad_sizes_refused(tmp_path):
    with pytest.raises(InputError, match="repeats"):
        run_benchmark(tmp_path / "s.json", repeats=0, suites=[ISING_SUITE], progress=None)
    with pytest.raises(InputError, match="ess_steps"):
        run_benchmark(tmp_path / "s.json", repeats=5, ess_steps=3, suites=[RBM_ESS_SUITE], progress=None)


def test_cli_passes_the_subset(tmp_path, monkeypatch):
    import gradmc.bench.peers as peers_mod
    import gradmc.bench.samplers as samplers_mod
    import gradmc.bench.scaling as scaling_mod
    import gradmc.bench.threads as threads_mod

    calls = []
    monkeypatch.delenv("DISCS_PYTHON", raising=False)
    monkeypatch.setattr(samplers_mod, "run_benchmark", lambda out, **kw: calls.append(("samplers", out, kw)))
    monkeypatch.setattr(threads_mod, "run_threads", lambda out, **kw: calls.append(("threads", out, kw)))
    monkeypatch.setattr(peers_mod, "run_peers", lambda out, **kw: calls.append(("peers", out, kw)))
    monkeypatch.setattr(scaling_mod, "run_scaling", lambda out, **kw: calls.append(("scaling", out, kw)))
    monkeypatch.setattr(scaling_mod, "run_executors", lambda out, **kw: calls.append(("executors", out, kw)))
    assert main(["bench", "--out", str(tmp_path), "--suite", POTTS_SUITE, "--repeats", "7", "--steps", "3"]) == 0
    assert len(calls) == 1
    kind, out, kw = calls[0]
    assert kind == "samplers" and out == tmp_path / "samplers.json"
    assert kw["suites"] == [POTTS_SUITE] and kw["repeats"] == 7 and kw["steps"] == 3
    calls.clear()
    assert main(["bench", "--out", str(tmp_path)]) == 0  # everything: a fresh samplers.json, scaling, threads
    assert [c[0] for c in calls] == ["samplers", "scaling", "executors", "threads"]  # peers: no JAX python
    assert calls[0][2]["suites"] is None and calls[2][1] == tmp_path / "executors.json"
    assert calls[3][1] == tmp_path / "threads.json"
    calls.clear()
    assert main(["bench", "--out", str(tmp_path), "--suite", "scaling"]) == 0
    assert [c[0] for c in calls] == ["scaling", "executors"]


def test_ess_suite_defaults():
    params = inspect.signature(rbm_ess_suite).parameters
    assert catalog.RBM_SAMPLERS == SUITES[RBM_SUITE].samplers
    assert (params["num_hidden"].default, params["num_chains"].default, params["epochs"].default,
            params["cd_steps"].default, params["num_train"].default) == (500, 100, 1, 10, None)
    assert catalog.DEFAULT_ESS_STEPS >= catalog.DEFAULT_REPEATS


def test_ess_suite_skips_without_data(tmp_path):
    out, settings = rbm_ess_suite(data_dir=tmp_path, steps=8, burn_in=0)
    assert isinstance(out, str) and out.startswith("skipped: ") and str(tmp_path) in out
    assert "training" not in settings
    res = run_benchmark(tmp_path / "s.json", suites=[RBM_ESS_SUITE], data_dir=tmp_path, progress=None)
    assert res["suites"][RBM_ESS_SUITE].startswith("skipped: ")


def test_ess_suite_tiny_run_is_finite_and_positive(real_data, tmp_path):
    folder = real_data("static_mnist")
    tiny = {"num_chains": 8, "num_hidden": 16, "num_train": 200, "cd_steps": 1}
    res = run_benchmark(tmp_path / "s.json", repeats=5, ess_steps=40, ess_burn_in=5, suites=[RBM_ESS_SUITE],
                        suite_params={RBM_ESS_SUITE: tiny}, data_dir=folder, progress=None)
    rows = res["suites"][RBM_ESS_SUITE]
    assert list(rows) == list(catalog.RBM_SAMPLERS)
    for name, row in rows.items():
        for key in ("ess_per_s", "ess", "ess_min", "ess_all_chains", "seconds"):
            assert row[key] is not None and math.isfinite(row[key]) and row[key] > 0, (name, key, row[key])
        assert row["steps"] == 40 and row["burn_in"] == 5 and row["num_chains"] == 8
        assert row["ess_per_s"] == pytest.approx(row["ess"] / row["seconds"])
        assert row["ess_min"] <= row["ess"]
        _check_row(row, 5)
    training = res["suite_settings"][RBM_ESS_SUITE]["training"]
    assert training["num_train"] == 200 and training["iterations"] == 2


def test_compile_suite_is_opt_in_and_skips_without_a_compiler(monkeypatch):
    """``--suite compile`` only when named; a failing torch.compile (no compiler) is recorded, not raised."""
    import gradmc.bench.samplers as samplers_mod
    from gradmc.bench.catalog import COMPILE_SUITE

    assert COMPILE_SUITE not in select_suites(None) and select_suites([COMPILE_SUITE]) == (COMPILE_SUITE,)

    def no_compiler(fn, **kwargs):
        def broken(*args, **kw):
            raise RuntimeError("InductorError: no working C++ compiler found")
        return broken

    monkeypatch.setattr(samplers_mod.torch, "compile", no_compiler)
    out = samplers_mod.compile_suite({"tiny": lambda g: samplers_mod.build_ising(g, side=4, num_chains=2)},
                                     steps=2, repeats=1, warmup=0)
    assert out.startswith("skipped: torch.compile failed (RuntimeError: InductorError")
