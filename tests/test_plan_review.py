"""gradmc plan and gradmc run from a new user's attempts to break them: an empty --slurm-profile, options of the
other mode, a budget too small for a probe, the site's lines and the file itself kept when the profile is
rewritten, plan.json values that would write nonsense, empty --out and --config, undecodable config files."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest
import yaml

from gradmc.cli import main
from gradmc.config import ConfigError, load_config
from gradmc.distributed.memory_split import resolve_budget_with_source
from gradmc.errors import InputError
from gradmc.plan.slurm import read_plan, write_profile


def _plan(**job_fields) -> dict:
    task = {"label": "t", "units": 1, "key": "k", "seconds": 600.0, "peak_rss_mb": 500.0}
    job = {"name": "kmc_abc", "gpu": False, "gpu_request": True, "tasks": [task], **job_fields}
    return {"config": "config/paper.yaml", "config_device": "cuda", "partial": False, "gpu_speedup_assumed": 20.0,
            "jobs": [job]}


def _profile(path: Path, lines: list[str]) -> Path:
    path.write_text(yaml.safe_dump({"executor": "slurm", "set-resources": lines}), encoding="utf-8")
    return path


def _exit_2(capsys, argv) -> str:
    with pytest.raises(SystemExit) as exit_:
        main(argv)
    err = capsys.readouterr().err
    assert exit_.value.code == 2 and "Traceback" not in err, err
    return err


def test_empty_slurm_profile_is_refused_before_any_probe(tmp_path, capsys):
    assert main(["plan", "--out", str(tmp_path), "--slurm-profile", ""]) == 2
    err = capsys.readouterr().err
    assert "--slurm-profile is empty" in err and not (tmp_path / "slice").exists()


@pytest.mark.parametrize("argv, named", [
    (["--slurm-profile", "p.yaml", "--budget", "60"], "--budget"),
    (["--slurm-profile", "p.yaml", "--jobs", "kmc_abc", "--config", "c.yaml"], "--config, --jobs"),
    (["--safety", "3"], "--safety"),
    (["--cpus-per-task", "4"], "--cpus-per-task"),
])
def test_an_option_of_the_other_mode_is_refused(tmp_path, capsys, argv, named):
    assert main(["plan", "--out", str(tmp_path), *argv]) == 2
    err = capsys.readouterr().err
    assert f"{named} not used" in err, err
    assert not (tmp_path / "slice").exists()


def test_a_budget_below_a_probes_start_up_is_refused(capsys):
    err = _exit_2(capsys, ["plan", "--budget", "1"])
    assert "--budget" in err and "at least 30 seconds" in err


def test_rewriting_keeps_the_sites_partition_and_other_resources(tmp_path):
    profile = _profile(tmp_path / "config.yaml", ["kmc_abc:slurm_partition=a100", "kmc_abc:slurm_account=lab",
                                                  "kmc_abc:runtime=1", "kmc_abc:gpu=1"])
    write_profile(_plan(), profile, cpus_per_task=2, safety=2.0, out=tmp_path)
    lines = yaml.safe_load(profile.read_text())["set-resources"]
    assert sorted(lines) == sorted(["kmc_abc:runtime=20", "kmc_abc:mem_mb=2000", "kmc_abc:cpus_per_task=2",
                                    "kmc_abc:gpu=1", "kmc_abc:slurm_partition=a100", "kmc_abc:slurm_account=lab"])
    bare = _profile(tmp_path / "bare.yaml", [])
    write_profile(_plan(), bare, cpus_per_task=2, safety=2.0, out=tmp_path)
    assert "kmc_abc:slurm_partition=gpu" in yaml.safe_load(bare.read_text())["set-resources"]


def test_a_linked_profile_is_written_through_and_keeps_its_mode(tmp_path):
    target = _profile(tmp_path / "target.yaml", [])
    os.chmod(target, 0o640)
    link = tmp_path / "link.yaml"
    link.symlink_to(target)
    write_profile(_plan(), link, cpus_per_task=2, safety=2.0, out=tmp_path)
    assert link.is_symlink() and "kmc_abc:gpu=1" in target.read_text()
    assert stat.S_IMODE(target.stat().st_mode) == 0o640


def test_a_read_only_profile_is_refused_and_left_as_it_was(tmp_path):
    profile = _profile(tmp_path / "config.yaml", ["kmc_abc:runtime=1"])
    before = profile.read_bytes()
    os.chmod(profile, 0o444)
    with pytest.raises(InputError, match="read-only"):
        write_profile(_plan(), profile, cpus_per_task=2, safety=2.0, out=tmp_path)
    assert profile.read_bytes() == before and stat.S_IMODE(profile.stat().st_mode) == 0o444


@pytest.mark.parametrize("change, message", [
    (lambda p: p["jobs"][0]["tasks"][0].update(peak_rss_mb=-5000), "finite numbers >= 0"),
    (lambda p: p["jobs"][0].update(gpu_request="false"), "'gpu_request' is not true/false"),
    (lambda p: p["jobs"].append(dict(p["jobs"][0])), "lists job 'kmc_abc' twice"),
    (lambda p: p.update(jobs_requested="kmc_abc"), "'jobs_requested' that is not a list"),
    (lambda p: p.update(config="c.yaml\nexecutor: local"), "not a one-line path"),
    (lambda p: p.update(partial="yes"), "'partial' that is not true/false"),
])
def test_plan_values_that_would_write_nonsense_are_refused(tmp_path, change, message):
    plan = _plan()
    change(plan)
    path = tmp_path / "plan.json"
    path.write_text(json.dumps(plan), encoding="utf-8")
    with pytest.raises(InputError, match=message):
        read_plan(path)


def test_a_time_too_large_to_write_is_an_input_error_and_the_profile_stays(tmp_path):
    plan = _plan()
    plan["jobs"][0]["tasks"][0]["seconds"] = 1e308
    profile = _profile(tmp_path / "config.yaml", [])
    before = profile.read_bytes()
    with pytest.raises(InputError, match="not a finite number"):
        write_profile(plan, profile, cpus_per_task=2, safety=2.0, out=tmp_path)
    assert profile.read_bytes() == before


def test_empty_or_undecodable_configs_are_config_errors(tmp_path):
    with pytest.raises(ConfigError, match="config path is empty"):
        load_config("")
    binary = tmp_path / "bin.yaml"
    binary.write_bytes(b"\x00\xff\xfe")
    with pytest.raises(ConfigError, match="not UTF-8 text"):
        load_config(binary)


def test_gradmc_run_refuses_an_empty_out_before_any_work(capsys):
    assert main(["run", "ising_sampling", "--config", "config/smoke.yaml", "--out", ""]) == 2
    assert "--out is empty" in capsys.readouterr().err


def test_a_memory_budget_under_one_byte_is_refused():
    with pytest.raises(InputError, match="at least one byte"):
        resolve_budget_with_source(1e-300, 1)


def test_a_rule_that_stops_holding_a_gpu_loses_its_gpu_partition(tmp_path):
    profile = _profile(tmp_path / "config.yaml", ["kmc_abc:slurm_partition=a100", "kmc_abc:gpu=1",
                                                  "kmc_abc:slurm_account=lab"])
    write_profile(_plan(gpu_request=False), profile, cpus_per_task=2, safety=2.0, out=tmp_path)
    lines = yaml.safe_load(profile.read_text())["set-resources"]
    assert sorted(lines) == sorted(["kmc_abc:runtime=20", "kmc_abc:mem_mb=2000", "kmc_abc:cpus_per_task=2",
                                    "kmc_abc:slurm_account=lab"])


def test_the_sites_lines_stay_in_their_rules_block_and_the_header_names_the_path_given(tmp_path, monkeypatch):
    """The site's partition and account lines of a measured rule sit with that rule's lines, not at the end of the
    list; the header's commands name the profile as the user gave it (relative), not its resolved path."""
    rbm = {"name": "rbm_sampling", "gpu": True, "gpu_request": True,
           "tasks": [{"label": "t", "units": 1, "key": "k", "seconds": 600.0, "peak_rss_mb": 500.0}]}
    plan = _plan()
    plan["jobs"].append(rbm)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "site").mkdir()
    _profile(tmp_path / "site" / "config.yaml", ["kmc_abc:slurm_partition=a100", "kmc_abc:slurm_account=lab"])
    write_profile(plan, "site/config.yaml", cpus_per_task=2, safety=2.0, out="results/paper")
    text = (tmp_path / "site" / "config.yaml").read_text()
    rules = [line.split(":", 1)[0] for line in yaml.safe_load(text)["set-resources"]]
    assert rules == ["kmc_abc"] * 6 + ["rbm_sampling"] * 5, rules
    assert "--slurm-profile site/config.yaml\n" in text and str(tmp_path) not in text


def test_a_full_plan_keeps_the_sites_lines_of_rules_it_does_not_measure(tmp_path):
    """A full plan once dropped a site's account line of a rule it does not measure and of the pseudo-rule
    ``all``; their measured keys (and a GPU rule's partition) fall back to default-resources."""
    profile = _profile(tmp_path / "config.yaml", [
        "my_rule:slurm_account=lab", "all:constraint=skylake", "my_rule:runtime=5",
        "gpu_rule:gpu=1", "gpu_rule:slurm_partition=gpu", "gpu_rule:slurm_account=lab"])
    done = write_profile(_plan(), profile, cpus_per_task=2, safety=2.0, out=tmp_path)
    lines = yaml.safe_load(profile.read_text())["set-resources"]
    assert lines == done.lines
    assert [x for x in lines if not x.startswith("kmc_abc:")] == [
        "my_rule:slurm_account=lab", "all:constraint=skylake", "gpu_rule:slurm_account=lab"]


def test_gpu_requests_by_gres_count_and_go_with_the_gpu(tmp_path, capsys):
    """A site that asks for its GPU with gres (no gpu= line) keeps its partition while the rule still holds a GPU;
    a rule that stops holding one loses its gres GPU line, and the command says so."""
    profile = _profile(tmp_path / "config.yaml", ["kmc_abc:slurm_partition=a100", "kmc_abc:gres=gpu:1"])
    write_profile(_plan(), profile, cpus_per_task=2, safety=2.0, out=tmp_path)  # the plan: kmc_abc holds a GPU
    lines = yaml.safe_load(profile.read_text())["set-resources"]
    assert "kmc_abc:slurm_partition=a100" in lines and "kmc_abc:slurm_partition=gpu" not in lines
    (tmp_path / "plan.json").write_text(json.dumps(_plan(gpu_request=False)))
    assert main(["plan", "--out", str(tmp_path), "--slurm-profile", str(profile)]) == 0
    lines = yaml.safe_load(profile.read_text())["set-resources"]
    assert not any("gpu" in x or "partition" in x for x in lines), lines
    assert "dropped the site's GPU lines of rules that no longer hold a GPU: kmc_abc:gres=gpu:1" in \
        capsys.readouterr().out


def test_a_resource_line_without_a_value_is_refused(tmp_path, capsys):
    profile = _profile(tmp_path / "config.yaml", ["train_rbm:constraint"])
    (tmp_path / "plan.json").write_text(json.dumps(_plan()))
    assert main(["plan", "--out", str(tmp_path), "--slurm-profile", str(profile)]) == 2
    assert "set-resources lines without a value: ['train_rbm:constraint']" in capsys.readouterr().err


def test_partly_costed_rules_a_profile_not_named_config_yaml_and_a_trailing_slash_are_reported(tmp_path, capsys):
    task = {"label": "t", "units": 1, "key": "k", "seconds": 600.0, "peak_rss_mb": 500.0}
    plan = _plan(tasks=[task, {**task, "seconds": None, "peak_rss_mb": None}])
    (tmp_path / "plan.json").write_text(json.dumps(plan))
    profile = _profile(tmp_path / "site.yaml", [])
    assert main(["plan", "--out", f"{tmp_path}/", "--slurm-profile", str(profile)]) == 0
    out = capsys.readouterr().out
    assert "could not cost every task of kmc_abc" in out and "lower bounds" in out
    assert "is used only once it is named config.yaml" in out
    assert f"{tmp_path}//" not in profile.read_text()
