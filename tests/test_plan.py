"""gradmc plan: the slice on the smoke config, the extrapolation and makespan arithmetic against hand-computed
numbers, missing data reported as missing, a failing probe reported with its error, the SLURM resources."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import pytest
import yaml

from gradmc.plan.extrapolate import gpu_hours, makespan, summarise, task_dependencies, task_seconds, unit_cost
from gradmc.plan.jobs import JOBS, ebm_evals, ebm_levels
from gradmc.plan.probe import at_level, run_probe
from gradmc.plan.report import render_markdown, write_plan
from gradmc.plan.report import status_label as render_status
from gradmc.plan.schedule import TEXT_JOBS, finish, new_job, probe_key
from gradmc.plan.slice import make_plan, missing_data, progress_line
from gradmc.plan.slurm import rule_resources, write_profile

REPO = Path(__file__).resolve().parents[1]
SMOKE = REPO / "config" / "smoke.yaml"


# --- arithmetic -------------------------------------------------------------------------------------------------

def test_unit_cost_subtracts_start_up():
    # warm: 10 units 3 s, 20 units 5 s -> 0.2 s/unit; cold 10 units 5 s -> fixed 5 - 10 * 0.2 = 3 s
    per, fixed = unit_cost(5.0, 3.0, 5.0, 10, 20)
    assert per == pytest.approx(0.2)
    assert fixed == pytest.approx(3.0)
    assert task_seconds(per, fixed, 1000) == pytest.approx(3.0 + 200.0)


def test_unit_cost_noise_falls_back_to_an_upper_bound():
    per, fixed = unit_cost(1.0, 4.0, 3.0, 10, 20)  # t2 < t1: slope negative -> t2 / u2
    assert per == pytest.approx(0.15)
    assert fixed == 0.0  # 1.0 - 10 * 0.15 < 0 -> 0
    with pytest.raises(ValueError):
        unit_cost(1.0, 1.0, 2.0, 20, 20)
    with pytest.raises(ValueError):
        unit_cost(-1.0, 1.0, 2.0, 10, 20)


def test_gpu_hours_is_the_stated_speedup():
    assert gpu_hours(10.0, 20.0) == pytest.approx(0.5)
    with pytest.raises(ValueError):
        gpu_hours(1.0, 0.0)


def test_makespan_hand_computed():
    # job A: tasks 4, 3, 3; job B (after A): 2.
    tasks = [("A", 4.0), ("A", 3.0), ("A", 3.0), ("B", 2.0)]
    after = {"B": ("A",)}
    assert makespan(tasks, after, 1) == pytest.approx(12.0)
    # 2 workers, longest first: A4 and A3 at 0; A3 at 3 (ends 6); A done at 6; B 6 -> 8
    assert makespan(tasks, after, 2) == pytest.approx(8.0)
    # unlimited: A done at 4 (its longest task), B 4 -> 6: the critical path
    assert makespan(tasks, after, math.inf) == pytest.approx(6.0)
    # a dependency on a job with no tasks is already met
    assert makespan([("B", 2.0)], after, 1) == pytest.approx(2.0)
    with pytest.raises(ValueError, match="cycle"):
        makespan([("A", 1.0), ("B", 1.0)], {"A": ("B",), "B": ("A",)}, 2)
    with pytest.raises(ValueError):
        makespan(tasks, after, 0)


def _ebm_like_jobs() -> list[dict]:
    """Two data sets: a (train 10 h, AIS 1 h) and b (train 1 h, AIS 10 h), each after its own 1-h preparation,
    plus a sweep (one job of two shards, rbm_sampling) after rbm_reference; ``after`` as the DAG gives it."""
    def task(key, hours, after=None):
        t = {"label": key, "units": 1, "key": key, "seconds": hours * 3600.0, "peak_rss_mb": None}
        return t if after is None else {**t, "after": after}

    def job(name, *tasks):
        return {"name": name, "gpu": False, "tasks": list(tasks)}

    return [job("prepare_image_dataset", task("prep[a]", 1, []), task("prep[b]", 1, [])),
            job("train_ebm", task("train[a]", 10, ["prep[a]"]), task("train[b]", 1, ["prep[b]"])),
            job("ais_ebm", task("ais[a]", 1, ["train[a]"]), task("ais[b]", 10, ["train[b]"])),
            job("rbm_reference", task("rbm_reference", 2, [])),
            job("rbm_sampling", task("rbm_sampling", 3, ["rbm_reference"]), task("rbm_sampling", 4, ["rbm_reference"]))]


def test_critical_path_follows_each_data_sets_own_jobs():
    jobs = _ebm_like_jobs()
    deps = task_dependencies(jobs)
    assert deps["ais[b]"] == {"train[b]"} and deps["train[a]"] == {"prep[a]"}
    assert deps["rbm_sampling"] == {"rbm_reference"}  # no wildcards: one job of every shard
    plan = summarise(jobs, 1.0, (1, 2))
    # per data set: a = 1 + 10 + 1, b = 1 + 1 + 10 -> 12 h; rule level would give 1 + 10 + 10 = 21 h
    assert plan["makespan_hours"]["unlimited"]["cpu_hours"] == pytest.approx(12.0)
    tasks = [(t["key"], t["seconds"]) for j in jobs for t in j["tasks"]]
    rule_level = {"train[a]": {"prep[a]", "prep[b]"}, "train[b]": {"prep[a]", "prep[b]"},
                  "ais[a]": {"train[a]", "train[b]"}, "ais[b]": {"train[a]", "train[b]"}}
    assert makespan(tasks, rule_level, math.inf) / 3600 == pytest.approx(21.0)
    assert plan["makespan_hours"]["1"]["cpu_hours"] == pytest.approx(33.0)  # one worker: the sum of every task


@pytest.fixture(scope="module")
def planned(tmp_path_factory):
    """``planned(config name)``: the records of the EBM and text EBM jobs of ``config/<name>.yaml`` as
    :func:`probe_jobs` makes them from Snakemake's DAG, with every data file missing (no probe runs)."""
    from gradmc.config import load_config
    from gradmc.plan.schedule import probe_jobs
    from gradmc.plan.slice import Planner

    cache: dict[str, dict] = {}

    def get(name: str) -> dict:
        if name not in cache:
            with pytest.MonkeyPatch.context() as mp:
                mp.setenv("GRADMC_DATA_DIR", str(tmp_path_factory.mktemp(f"{name}_data")))
                p = Planner(load_config(REPO / "config" / f"{name}.yaml"), tmp_path_factory.mktemp(name), 60, 60, None,
                            only=("ais_ebm", "eval_text_ebm"))
                cache[name] = {j["name"]: j for j in probe_jobs(p)}
                assert p.count == 0
        return cache[name]

    return get


def test_ebm_tasks_wait_for_their_own_data_set(planned):
    jobs = planned("paper")
    from gradmc.config import load_config

    assert load_config(REPO / "config" / "paper.yaml")["ebm"]["equal_time"]
    prep, train, ais = (jobs[n] for n in ("prepare_image_dataset", "train_ebm", "ais_ebm"))
    after = {t["key"]: set(t["after"]) for job in (prep, train, ais) for t in job["tasks"]}
    assert after["train_ebm[static_mnist/GWG]"] == {"prepare_image_dataset[static_mnist]"}
    assert after["train_ebm[static_mnist/Gibbs-1]"] == {"prepare_image_dataset[static_mnist]",
                                                       "train_ebm[static_mnist/GWG]"}  # equal_time
    assert after["train_ebm[frey/DMALA]"] == {"prepare_image_dataset[frey]", "train_ebm[frey/GWG]"}  # equal_time
    assert "train_ebm[frey/Gibbs-1]" not in after  # categorical Gibbs: infeasible
    assert after["ais_ebm[frey/GWG]"] == {"prepare_image_dataset[frey]", "train_ebm[frey/GWG]"}
    assert after["train_ebm[static_mnist/ACS]"] == {"prepare_image_dataset[static_mnist]",
                                                   "train_ebm[static_mnist/GWG]"}  # equal_time
    assert "train_ebm[frey/ACS]" not in after  # ACS: binary only
    assert len([k for k in after if k.startswith("ais_ebm[")]) == 20
    assert (train["gpu"], prep["gpu"]) == (True, False)
    assert all(job["status"] == "missing data" or job["missing"] for job in (prep, train, ais))


def test_ebm_units_follow_each_data_sets_overrides(planned):
    """A data set's ``overrides`` entry (quick: frey trains 120 iterations, 200 + 100 + 50 AIS levels) sets its
    tasks' units, not the base section's 1,000 iterations and 6,000 levels."""
    from gradmc.config import for_dataset, load_config

    quick = load_config(REPO / "config" / "quick.yaml")
    spec = quick["ebm"]
    jobs = planned("quick")
    units = {t["key"]: t["units"] for n in ("train_ebm", "ais_ebm") for t in jobs[n]["tasks"]}
    frey_train, frey_ais = for_dataset(spec["train"], "frey"), for_dataset(spec["ais"], "frey")
    assert frey_train["iterations"] != spec["train"]["iterations"]  # the case this test is about
    assert units["train_ebm[frey/GWG]"] == frey_train["iterations"] == 120
    assert units["ais_ebm[frey/GWG]"] == ebm_levels(frey_ais) == 200 + 50 + 100
    assert units["train_ebm[static_mnist/GWG]"] == spec["train"]["iterations"]
    assert units["ais_ebm[static_mnist/GWG]"] == ebm_levels(spec["ais"])


def test_progress_and_error_labels_have_no_empty_parts():
    assert probe_key("kmc_gpc_benchmark", []) == "kmc_gpc_benchmark"
    assert probe_key("ising_sampling", [40, "GWG"]) == "ising_sampling 40/GWG"
    line = progress_line(3, "kmc_abc RW", {"status": "not run", "error": "time budget of the slice spent"})
    assert line == "[plan] probe 3 kmc_abc RW: not run: time budget of the slice spent"
    line = progress_line(4, "kmc_abc", {"status": "ok", "wall_s": 2.0, "peak_rss_mb": 300.0})
    assert line == "[plan] probe 4 kmc_abc: ok 2.0 s, peak 300 MiB"
    job = new_job("kmc_gpc_benchmark", {"device": "cpu"})
    job["probes"] = [{"class": [], "status": "error", "error": "boom"}, {"class": ["RW"], "status": "timeout",
                                                                          "error": "killed"}]
    assert finish(job)["errors"] == ["boom", "RW: killed"] and job["status"] == "error"


def test_ebm_counts_match_the_paper_config(planned):
    from gradmc.config import load_config

    paper = load_config(REPO / "config" / "paper.yaml")
    # 300000 + 1000 + 3000 + 10000 + 30000 + 100000 (the 300000 convergence run is the estimate's own)
    assert ebm_levels(paper["ebm"]["ais"]) == 444_000
    assert ebm_evals(paper["ebm"]["train"]) == 10  # every 5000 of 50000 iterations, the last one included
    assert ebm_evals({"iterations": 120, "eval_every": 50}) == 3  # 50, 100 and the end
    # 6 data sets x 4 samplers (GWG, Gibbs-1, DMALA, ACS), less Gibbs-1 and ACS on the two 256-level sets
    assert len(planned("paper")["train_ebm"]["tasks"]) == 20  # Snakemake's train_ebm jobs


def test_text_ebm_jobs_units_and_dependencies_of_the_paper_config(planned):
    from gradmc.config import load_config

    paper = load_config(REPO / "config" / "paper.yaml")
    # 50000 PCD iterations; 20000 Adam steps; AIS 30000 + 7500 + 15000 (the 30000 convergence run is the estimate's)
    units = {n: JOBS[n].units(paper) if JOBS[n].units else 1 for n in TEXT_JOBS}
    assert units == {"prepare_ptb": 1, "train_text_ebm": 50_000, "train_text_lm": 20_000, "eval_text_ebm": 52_500}
    files = ["ptb/ptb.train.txt", "ptb/ptb.valid.txt", "ptb/ptb.test.txt"]
    jobs = {n: planned("paper")[n] for n in TEXT_JOBS}  # every PTB file missing: no probe runs
    for name, job in jobs.items():
        assert job["status"] == "missing data" and job["missing"] == files
        assert [(t["key"], t["units"], t["seconds"]) for t in job["tasks"]] == [(name, units[name], None)]
    assert (jobs["prepare_ptb"]["gpu"], jobs["train_text_ebm"]["gpu"]) == (False, True)  # paper: device cuda
    deps = task_dependencies(list(jobs.values()))  # the DAG's edges: eval reads the data and both models
    assert deps == {"prepare_ptb": set(), "train_text_ebm": {"prepare_ptb"}, "train_text_lm": {"prepare_ptb"},
                    "eval_text_ebm": {"prepare_ptb", "train_text_ebm", "train_text_lm"}}
    # hand-made costs: prepare 1 h, EBM 10 h, LM 2 h, eval 3 h -> critical path 1 + 10 + 3 = 14 h, one worker 16 h
    for name, hours in zip(TEXT_JOBS, (1, 10, 2, 3), strict=True):
        jobs[name]["tasks"][0]["seconds"] = hours * 3600.0
    plan = summarise(list(jobs.values()), 1.0, (1,))
    assert plan["makespan_hours"]["unlimited"]["cpu_hours"] == pytest.approx(14.0)
    assert plan["makespan_hours"]["1"]["cpu_hours"] == pytest.approx(16.0)


def test_text_ebm_slice_lengths_are_hand_computable():
    smoke = yaml.safe_load(SMOKE.read_text())
    spec = JOBS["eval_text_ebm"]
    one, two = at_level(smoke, spec, 1), at_level(smoke, spec, 2)
    assert [spec.units(c) for c in (smoke, one, two)] == [15, 6, 12]  # smoke 10 + 5; slice 4 + 2 and 8 + 4
    assert one["text_ebm"]["ais"]["num_chains"] == smoke["text_ebm"]["ais"]["num_chains"]  # a size: kept
    lm = JOBS["train_text_lm"]
    assert [lm.units(at_level(smoke, lm, k)) for k in (1, 2)] == [5, 10]


def test_missing_ptb_train_file_is_missing_and_the_slice_stands_in_the_valid_file(tmp_path, monkeypatch):
    from gradmc.config import load_config
    from gradmc.plan.slice import Planner

    folder = tmp_path / "data"
    (folder / "ptb").mkdir(parents=True)
    paper = load_config(REPO / "config" / "paper.yaml")
    monkeypatch.setenv("GRADMC_DATA_DIR", str(folder))
    assert missing_data(paper, folder)["ptb"] == ["ptb/ptb.train.txt", "ptb/ptb.valid.txt", "ptb/ptb.test.txt"]
    planner = Planner(paper, tmp_path / "none", 60, 60, None)
    assert planner.ptb_stand_in is None  # nothing to stand in with: the jobs are missing data
    for split in ("valid", "test"):
        (folder / "ptb" / f"ptb.{split}.txt").write_text("a b\n")
    planner = Planner(paper, tmp_path / "out", 60, 60, None)
    assert planner.missing["ptb"] == ["ptb/ptb.train.txt"]
    assert planner.ptb_stand_in == "ptb/ptb.valid.txt for ptb/ptb.train.txt"
    sliced = yaml.safe_load(planner.config_path.read_text())["text_ebm"]
    assert sliced["data"] == {**paper["text_ebm"]["data"], "train_split": "valid"}  # the slice only
    assert sliced["model"] == paper["text_ebm"]["model"] and paper["text_ebm"]["data"]["train_split"] == "train"
    job = {**new_job("train_text_ebm", paper), "missing": ["ptb/ptb.train.txt"], "stand_in": planner.ptb_stand_in}
    job.update(num_tasks=1, tasks_costed=1)
    assert render_status(job) == "ok: STAND-IN data (ptb/ptb.valid.txt for ptb/ptb.train.txt; see Notes)"


def test_at_level_changes_only_the_length_keys():
    config = {"ising_sampling": {"num_steps": 100000, "num_chains": 32, "sides": [10, 40]}}
    spec = JOBS["ising_sampling"]
    one, two = at_level(config, spec, 1), at_level(config, spec, 2)
    assert (one["ising_sampling"]["num_steps"], two["ising_sampling"]["num_steps"]) == (200, 400)
    assert one["ising_sampling"]["num_chains"] == 32 and one["ising_sampling"]["sides"] == [10, 40]
    assert config["ising_sampling"]["num_steps"] == 100000  # a copy
    with pytest.raises(KeyError, match="num_steps"):
        at_level({"ising_sampling": {}}, spec, 1)


# --- the slice on the smoke config ----------------------------------------------------------------------------

def test_plan_on_the_smoke_config(tmp_path, monkeypatch):
    monkeypatch.setenv("GRADMC_DATA_DIR", str(tmp_path))  # kmc_trajectories reads no data
    plan = make_plan(SMOKE, tmp_path, only=("kmc_trajectories",), budget_s=120, timeout_s=60, progress=None)
    (job,) = plan["jobs"]
    assert job["name"] == "kmc_trajectories" and job["status"] == "ok", job
    assert plan["partial"] is True and plan["jobs_requested"] == ["kmc_trajectories"]
    assert plan["config"] == str(SMOKE) and plan["config_device"] == "cpu"
    assert [t["label"] for t in job["tasks"]] == [f"kmc_trajectories {d}/{n}" for d in (2, 4) for n in (50, 100)]
    # smoke: dims [2, 4] x n [50, 100], 2 trials per shard -> 4 shards of 2 trials; one probe per (d, n)
    assert job["num_tasks"] == 4 and job["tasks_costed"] == 4 and job["units_total"] == 8
    assert [p["class"] for p in job["probes"]] == [[2, 50], [2, 100], [4, 50], [4, 100]]
    for probe in job["probes"]:
        assert probe["status"] == "ok" and (probe["u1"], probe["u2"]) == (1, 2)
        assert probe["peak_rss_mb"] > 50  # a Python process with torch
    for task in job["tasks"]:
        assert task["seconds"] == pytest.approx(task["fixed_s"] + task["units"] * task["per_unit_s"])
    assert job["core_hours"] == pytest.approx(sum(t["seconds"] for t in job["tasks"]) / 3600)
    assert job["gpu_hours"] is None  # KMC runs on the CPU
    assert plan["totals"]["core_hours"] == pytest.approx(job["core_hours"])
    js, md = write_plan(plan, tmp_path)
    assert json.loads(js.read_text())["jobs"][0]["name"] == "kmc_trajectories"
    text = md.read_text()
    assert "| kmc_trajectories | ok |" in text and "ASSUMPTION" in text
    assert not list(tmp_path.glob(".plan.*.tmp"))  # atomic writes leave no temporary file


@pytest.mark.slow
def test_text_ebm_chain_on_the_smoke_config(tmp_path, monkeypatch, real_data):
    monkeypatch.setenv("GRADMC_DATA_DIR", str(real_data("ptb_heldout")))  # smoke: train_split valid
    plan = make_plan(SMOKE, tmp_path, only=("eval_text_ebm",), budget_s=120, timeout_s=60, progress=None)
    jobs = {j["name"]: j for j in plan["jobs"]}
    assert list(jobs) == list(TEXT_JOBS) and plan["probes"] == 4  # eval's upstream probes made its inputs
    for job in jobs.values():
        assert job["status"] == "ok" and not job["missing"] and job["tasks_costed"] == 1, job
    # smoke: 3 PCD iterations, 5 Adam steps, AIS 10 + 5 levels (the 10-level convergence run is the estimate's)
    assert {n: j["units_total"] for n, j in jobs.items()} == {"prepare_ptb": 1, "train_text_ebm": 3,
                                                               "train_text_lm": 5, "eval_text_ebm": 15}
    assert (jobs["train_text_lm"]["probes"][0]["u1"], jobs["eval_text_ebm"]["probes"][0]["u2"]) == (5, 12)
    s = {n: j["tasks"][0]["seconds"] for n, j in jobs.items()}
    critical = s["prepare_ptb"] + max(s["train_text_ebm"], s["train_text_lm"]) + s["eval_text_ebm"]
    assert plan["totals"]["makespan_hours"]["unlimited"]["cpu_hours"] * 3600 == pytest.approx(critical)


def test_missing_data_is_reported_as_missing(tmp_path, monkeypatch):
    empty = tmp_path / "data"
    empty.mkdir()
    monkeypatch.setenv("GRADMC_DATA_DIR", str(empty))
    config = yaml.safe_load(SMOKE.read_text())
    missing = missing_data(config, empty)
    assert missing["glass"] == ["glass/glass.data"]
    assert missing["ptb"] == ["ptb/ptb.valid.txt", "ptb/ptb.test.txt"]  # smoke trains on valid: no train file
    assert any("original_dataset.mat" in f for f in missing["protein:synthetic"])
    plan = make_plan(SMOKE, tmp_path / "out", only=("potts_proteins", "kmc_gpc"), budget_s=60, progress=None)
    jobs = {j["name"]: j for j in plan["jobs"]}
    assert set(jobs) == {"potts_proteins", "kmc_gpc_benchmark", "kmc_gpc"}
    for job in jobs.values():
        assert job["status"] == "missing data" and job["missing"], job
        assert job["core_hours"] is None
    assert jobs["kmc_gpc"]["missing"] == ["glass/glass.data"]
    assert plan["probes"] == 0
    text = render_markdown(plan)
    assert "| kmc_gpc | missing data |" in text and "`glass/glass.data`" in text


def test_a_failing_probe_is_reported_with_its_error(tmp_path):
    res = run_probe({"job": "no_such_job", "cls": [], "config_path": str(SMOKE), "workdir": str(tmp_path)},
                    tmp_path, timeout_s=60, name="bad")
    assert res["status"] == "error"
    assert "KeyError" in res["error"] and "no_such_job" in res["error"]
    assert res["peak_rss_mb"] > 0


# --- SLURM resources from a plan --------------------------------------------------------------------------------

def _plan() -> dict:
    def task(seconds, rss):
        return {"label": "t", "units": 1, "key": "k", "seconds": seconds, "peak_rss_mb": rss}

    return {"gpu_speedup_assumed": 2.0, "jobs": [
        {"name": "rbm_sampling", "gpu": True, "tasks": [task(600.0, 500.0)] * 3},
        {"name": "prepare_mnist", "gpu": False, "tasks": [task(120.0, 300.0)]},
        {"name": "train_ebm", "gpu": True, "tasks": [task(None, None)]},
    ]}


def test_rule_resources_hand_computed():
    res = rule_resources(_plan(), cpus_per_task=2, safety=2.0)
    # 3 shards of 600 s / speed-up 2 = 300 s on 2 workers -> 600 s; x2 -> 20 min; memory 2 x 500 x 2 + 1000
    assert res["rbm_sampling"] == {"runtime": 20, "mem_mb": 3000, "cpus_per_task": 2, "slurm_partition": "gpu",
                                   "gpu": 1}
    # a rule job: 2 x 120 s = 4 min -> the 10-minute floor; memory 2 x 300
    assert res["prepare_mnist"] == {"runtime": 10, "mem_mb": 600, "cpus_per_task": 2}
    assert "train_ebm" not in res  # nothing measured: the profile's defaults stay
    with pytest.raises(ValueError):
        rule_resources(_plan(), cpus_per_task=0)


def test_write_profile_replaces_set_resources_only(tmp_path):
    profile = tmp_path / "config.yaml"
    shutil.copy(REPO / "workflow" / "profiles" / "slurm" / "config.yaml", profile)
    before = yaml.safe_load(profile.read_text())
    (tmp_path / "plan.json").write_text(json.dumps({**_plan(), "partial": False, "config": "config/paper.yaml"}))
    done = write_profile(tmp_path / "plan.json", profile, cpus_per_task=2, safety=2.0)
    after = yaml.safe_load(profile.read_text())
    assert after["set-resources"] == done.lines and done.kept == []  # a full plan: only its own lines
    assert "rbm_sampling:runtime=20" in done.lines and "rbm_sampling:gpu=1" in done.lines
    assert "prepare_mnist:mem_mb=600" in done.lines
    assert {k: v for k, v in after.items() if k != "set-resources"} == \
        {k: v for k, v in before.items() if k != "set-resources"}
    assert "GENERATED from a measured compute plan" in profile.read_text()


def test_warm_pair_keeps_each_levels_fastest_of_repeated_short_pairs():
    """A 0.2 s hiccup in the first level-2 run of a short pair would make the slope (t2 - t1) / (u2 - u1) about
    10x the real one; the repeats keep each level's minimum, so the slope is the undisturbed one."""
    from gradmc.plan.extrapolate import unit_cost
    from gradmc.plan.probe import warm_pair

    times = iter([0.05, 0.30, 0.052, 0.10, 0.051, 0.101])  # level 1, level 2, alternately; first level 2 disturbed
    calls = []

    def timer(fn):
        calls.append(fn)
        return next(times)

    t1, t2 = warm_pair(lambda: "level1", "level2", repeats=3, repeat_below_s=5.0, timer=timer)
    assert (t1, t2) == (0.05, 0.10) and calls == ["level1", "level2"] * 3
    per_unit, _ = unit_cost(1.0, t1, t2, 20, 40)
    assert per_unit == pytest.approx(0.0025)


def test_warm_pair_runs_a_long_pair_once():
    from gradmc.plan.probe import warm_pair

    times = iter([3.0, 6.0])
    t1, t2 = warm_pair(lambda: "level1", "level2", repeats=3, repeat_below_s=5.0, timer=lambda fn: next(times))
    assert (t1, t2) == (3.0, 6.0)
