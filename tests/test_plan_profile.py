"""gradmc plan: GPU jobs follow the planned config's device, the SLURM profile from a partial plan keeps the
other rules' lines and names the plan's config, and the profile says which GRADMC_SHARD_MEMORY_MB to export."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml

from gradmc.cli import main
from gradmc.config import load_config
from gradmc.experiments.standard import job_config
from gradmc.plan.jobs import JOBS, holds_gpu, on_gpu
from gradmc.plan.schedule import new_job
from gradmc.plan.slurm import rule_resources, shard_memory_mb, write_profile
from gradmc.registry import experiments

REPO = Path(__file__).resolve().parents[1]
PROFILE = REPO / "workflow" / "profiles" / "slurm" / "config.yaml"


def test_gpu_jobs_follow_the_planned_configs_device():
    paper, quick = load_config(REPO / "config" / "paper.yaml"), load_config(REPO / "config" / "quick.yaml")
    assert paper["device"] == "cuda" and quick["device"] == "cpu"
    # paper.yaml (cuda): the GPU jobs of the job table, as before
    assert {n for n in JOBS if on_gpu(n, paper)} == {n for n, spec in JOBS.items() if spec.gpu}
    # quick.yaml (cpu): no job computes on, or holds, a GPU
    assert not any(on_gpu(n, quick) or holds_gpu(n, quick) for n in JOBS)
    # every sweep asks Ray for gpus_per_shard GPUs under cuda, except the registry's cpu_only ones (Kernel HMC),
    # which run with device: cpu and hold no GPU
    cpu_only = {n for n, e in experiments().items() if e.cpu_only}
    assert cpu_only == {"kmc_trajectories", "kmc_banana", "kmc_abc", "kmc_gpc_benchmark", "kmc_gpc"}
    for name in cpu_only:
        assert not holds_gpu(name, paper) and not on_gpu(name, paper)
        assert job_config(name, paper)["device"] == "cpu" and job_config(name, paper)["gpus_per_shard"] == 0
    assert holds_gpu("ising_sampling", paper) and job_config("ising_sampling", paper)["device"] == "cuda"
    assert not holds_gpu("prepare_mnist", paper)  # a hand-written CPU rule asks for no GPU
    job = new_job("rbm_sampling", quick)
    assert (job["gpu"], job["gpu_request"]) == (False, False)
    job = new_job("kmc_banana", paper)
    assert (job["gpu"], job["gpu_request"]) == (False, False)
    job = new_job("rbm_sampling", paper)
    assert (job["gpu"], job["gpu_request"]) == (True, True)


def test_rule_resources_request_a_gpu_where_the_job_holds_one():
    task = {"label": "t", "units": 1, "key": "k", "seconds": 600.0, "peak_rss_mb": 500.0}
    plan = {"gpu_speedup_assumed": 2.0, "jobs": [
        {"name": "kmc_abc", "gpu": False, "gpu_request": True, "tasks": [task]},
        {"name": "rbm_sampling", "gpu": False, "gpu_request": False, "tasks": [task]}]}
    res = rule_resources(plan, cpus_per_task=2, safety=2.0)
    # kmc_abc: costed on the CPU (no speed-up: 2 x 600 s = 20 min) but on the gpu partition with one GPU
    assert res["kmc_abc"] == {"runtime": 20, "mem_mb": 2000, "cpus_per_task": 2, "slurm_partition": "gpu", "gpu": 1}
    assert res["rbm_sampling"] == {"runtime": 20, "mem_mb": 2000, "cpus_per_task": 2}  # device: cpu


def _task(seconds, rss):
    return {"label": "t", "units": 1, "key": "k", "seconds": seconds, "peak_rss_mb": rss}


def _partial_plan() -> dict:
    return {"config": "config/quick.yaml", "config_device": "cpu", "partial": True,
            "jobs_requested": ["kmc_abc"], "gpu_speedup_assumed": 20.0,
            "jobs": [{"name": "kmc_abc", "gpu": False, "gpu_request": False, "tasks": [_task(1200.0, 300.0)] * 4}]}


def test_partial_plan_keeps_the_other_rules_lines(tmp_path, capsys):
    profile = tmp_path / "config.yaml"
    shutil.copy(PROFILE, profile)
    before = yaml.safe_load(profile.read_text())["set-resources"]
    (tmp_path / "plan.json").write_text(json.dumps(_partial_plan()))
    code = main(["plan", "--out", str(tmp_path), "--slurm-profile", str(profile), "--cpus-per-task", "2"])
    out = capsys.readouterr().out
    assert code == 0
    lines = yaml.safe_load(profile.read_text())["set-resources"]
    # kmc_abc: 4 tasks of 1200 s on 2 workers = 2400 s, x2 = 80 min; memory 2 x 300 x 2 + 1000
    assert [x for x in lines if x.startswith("kmc_abc:")] == \
        ["kmc_abc:runtime=80", "kmc_abc:mem_mb=2200", "kmc_abc:cpus_per_task=2"]
    others = [x for x in before if not x.startswith("kmc_abc:")]
    assert [x for x in lines if not x.startswith("kmc_abc:")] == others  # every other rule's lines kept
    assert "train_ebm:gpu=1" in lines and any(x.startswith("kmc_trajectories:mem_mb=") for x in lines)
    assert "a partial plan" in out and f"{len(others)} of them kept" in out
    text = profile.read_text()
    assert "--configfile config/quick.yaml" in text
    assert "sliced every job of config/quick.yaml" in text.replace("\n# ", " ")
    assert "PARTIAL plan (jobs kmc_abc)" in text.replace("\n# ", " ")
    assert f"--out {tmp_path} --slurm-profile {profile}" in text
    # the budget per shard of the kept ising_sampling lines: (mem_mb - 1000) / cpus_per_task
    kept = {x.split(":", 1)[1].split("=")[0]: int(x.split("=")[1]) for x in before if x.startswith("ising_sampling:")
            and x.split(":", 1)[1].split("=")[0] in ("mem_mb", "cpus_per_task")}
    mb = (kept["mem_mb"] - 1000) // kept["cpus_per_task"]
    assert f"#   export GRADMC_SHARD_MEMORY_MB={mb}\n" in text and f"GRADMC_SHARD_MEMORY_MB={mb}" in out


def test_full_plan_replaces_every_line(tmp_path):
    profile = tmp_path / "config.yaml"
    shutil.copy(PROFILE, profile)
    plan = {**_partial_plan(), "partial": False, "jobs_requested": None}
    done = write_profile(plan, profile, cpus_per_task=2, safety=2.0, out="results/quick")
    assert done.kept == [] and yaml.safe_load(profile.read_text())["set-resources"] == done.lines
    assert all(x.startswith("kmc_abc:") for x in done.lines)
    assert "Full plan" in profile.read_text()


def test_old_plan_without_partial_flag_is_partial_when_jobs_are_missing(tmp_path):
    profile = tmp_path / "config.yaml"
    shutil.copy(PROFILE, profile)
    plan = {k: v for k, v in _partial_plan().items() if k not in ("partial", "jobs_requested")}
    done = write_profile(plan, profile, cpus_per_task=2, safety=2.0)
    assert done.kept and not any(x.startswith("kmc_abc:") for x in done.kept)


def test_profile_says_which_shard_memory_budget_to_export(tmp_path):
    plan = {"config": "config/paper.yaml", "config_device": "cuda", "partial": False, "gpu_speedup_assumed": 20.0,
            "jobs": [{"name": "ising_sampling", "gpu": True, "gpu_request": True,
                      "tasks": [_task(100.0, 400.4), _task(100.0, 350.0)]},
                     {"name": "kmc_abc", "gpu": False, "gpu_request": True, "tasks": [_task(100.0, 100.0)]}]}
    # ising_sampling splits shards by GRADMC_SHARD_MEMORY_MB: safety x its largest peak per shard; kmc_abc does not
    assert shard_memory_mb(plan, safety=2.0) == 800
    assert shard_memory_mb({**plan, "jobs": plan["jobs"][1:]}, safety=2.0) is None
    profile = tmp_path / "config.yaml"
    shutil.copy(PROFILE, profile)
    done = write_profile(plan, profile, cpus_per_task=8, safety=2.0, out="results/paper")
    assert done.shard_memory_mb == 800
    assert "#   export GRADMC_SHARD_MEMORY_MB=800\n" in profile.read_text()
    assert "ising_sampling:mem_mb=2602" in done.lines  # 2 x 400.4 x 2 shards at once + 1000, rounded up


@pytest.mark.parametrize("value", [{"rbm_sampling": {"runtime": 5}}, ["rbm_sampling:runtime=5"]])
def test_partial_plan_reads_both_set_resources_forms(tmp_path, value):
    profile = tmp_path / "config.yaml"
    profile.write_text(yaml.safe_dump({"executor": "slurm", "set-resources": value}))
    done = write_profile(_partial_plan(), profile, cpus_per_task=2, safety=2.0)
    assert done.kept == ["rbm_sampling:runtime=5"]
