"""gradmc plan: bad options and input files stop with exit status 2 and one line naming the option or file and
what was expected (no traceback, no work done)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from gradmc.cli import main
from gradmc.errors import InputError
from gradmc.plan.slice import make_plan

REPO = Path(__file__).resolve().parents[1]
PROFILE = REPO / "workflow" / "profiles" / "slurm" / "config.yaml"


def _argparse_error(capsys, argv) -> str:
    with pytest.raises(SystemExit) as exit_:
        main(argv)
    assert exit_.value.code == 2
    return capsys.readouterr().err


@pytest.mark.parametrize("option, value, expected", [
    ("--gpu-speedup", "nan", "expected a finite number > 0"),
    ("--gpu-speedup", "inf", "expected a finite number > 0"),
    ("--gpu-speedup", "0", "expected a finite number > 0"),
    ("--budget", "nan", "expected a finite number > 0"),
    ("--budget", "inf", "expected a finite number > 0"),
    ("--budget", "-5", "expected a finite number > 0"),
    ("--probe-timeout", "nan", "expected a finite number > 0"),
    ("--workers", "0", "expected a whole number >= 1"),
    ("--cpus-per-task", "0", "expected a whole number >= 1"),
    ("--cpus-per-task", "-3", "expected a whole number >= 1"),
    ("--safety", "-1", "expected a finite factor >= 1"),
    ("--safety", "nan", "expected a finite factor >= 1"),
    ("--safety", "0.5", "expected a finite factor >= 1"),
])
def test_each_bad_number_names_its_option_and_value(tmp_path, capsys, option, value, expected):
    err = _argparse_error(capsys, ["plan", "--out", str(tmp_path), option, value])
    assert f"argument {option}: {expected}" in err and repr(value) in err
    assert "Traceback" not in err and not list(tmp_path.iterdir())


def test_make_plan_refuses_non_finite_numbers(tmp_path):
    with pytest.raises(InputError, match=r"speedup must be a finite number > 0, got inf"):
        make_plan(REPO / "config" / "smoke.yaml", tmp_path, speedup=float("inf"), progress=None)
    with pytest.raises(InputError, match=r"workers must be whole numbers >= 1, got \[1, 0\]"):
        make_plan(REPO / "config" / "smoke.yaml", tmp_path, workers=(1, 0), progress=None)
    assert not list(tmp_path.iterdir())


def test_missing_config_says_the_config_is_missing(tmp_path, capsys):
    code = main(["plan", "--config", str(tmp_path / "missing.yaml"), "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert code == 2 and "--config" in err and "config file not found" in err
    assert "config/paper.yaml" in err and "config/quick.yaml" in err and "run the stage" not in err


def test_out_that_is_a_file_is_refused(tmp_path, capsys):
    out = tmp_path / "plan.txt"
    out.write_text("not a folder")
    for extra in (["--config", str(REPO / "config" / "smoke.yaml")], ["--slurm-profile", str(PROFILE)]):
        code = main(["plan", "--out", str(out), *extra])
        err = capsys.readouterr().err
        assert code == 2 and f"--out {out} is a file; --out must be a folder" in err, err
    assert out.read_text() == "not a folder"


def test_missing_plan_json_gives_one_hint(tmp_path, capsys):
    profile = tmp_path / "config.yaml"
    shutil.copy(PROFILE, profile)
    code = main(["plan", "--out", str(tmp_path / "nowhere"), "--slurm-profile", str(profile)])
    err = capsys.readouterr().err
    assert code == 2 and "plan.json not found" in err
    assert err.count("gradmc plan --config") == 1 and "make plan-paper" in err and "run the stage" not in err
    assert profile.read_text() == PROFILE.read_text()


@pytest.mark.parametrize("text, expected", [
    ("", "is empty"),
    ("# only a comment\n", "is empty"),
    ("- a\n- b\n", "holds a YAML list, not a mapping"),
    ("just a string\n", "holds a YAML str, not a mapping"),
    ("a: [1\n", "could not be read as YAML"),
])
def test_profile_that_is_not_a_mapping_is_refused(tmp_path, capsys, text, expected):
    (tmp_path / "plan.json").write_text(json.dumps({"gpu_speedup_assumed": 2.0, "jobs": []}))
    profile = tmp_path / "profile.yaml"
    profile.write_text(text)
    code = main(["plan", "--out", str(tmp_path), "--slurm-profile", str(profile)])
    err = capsys.readouterr().err
    assert code == 2 and f"--slurm-profile {profile} {expected}" in err, err
    assert "expected a Snakemake profile" in err and "Traceback" not in err
    assert profile.read_text() == text


@pytest.mark.parametrize("text, expected", [
    ("{not json", "could not be read as JSON"),
    ("[1, 2]", "holds a JSON list, not an object"),
    (json.dumps({"jobs": []}), "has no valid 'gpu_speedup_assumed'"),
    (json.dumps({"gpu_speedup_assumed": float("inf"), "jobs": []}), "has no valid 'gpu_speedup_assumed'"),
    (json.dumps({"gpu_speedup_assumed": 2.0}), "has no 'jobs' list"),
    (json.dumps({"gpu_speedup_assumed": 2.0, "jobs": [{"name": "nope"}]}), "without a known 'name'"),
    (json.dumps({"gpu_speedup_assumed": 2.0, "jobs": [{"name": "kmc_abc", "gpu": False}]}),
     "without 'gpu' (true/false) and 'tasks'"),
    (json.dumps({"gpu_speedup_assumed": 2.0, "jobs": [{"name": "kmc_abc", "gpu": False,
                                                        "tasks": [{"seconds": "x"}]}]}),
     "without 'seconds' and 'peak_rss_mb' as finite numbers >= 0"),
])
def test_corrupt_plan_json_is_refused(tmp_path, capsys, text, expected):
    (tmp_path / "plan.json").write_text(text)
    profile = tmp_path / "config.yaml"
    shutil.copy(PROFILE, profile)
    code = main(["plan", "--out", str(tmp_path), "--slurm-profile", str(profile)])
    err = capsys.readouterr().err
    assert code == 2 and f"plan {tmp_path / 'plan.json'}" in err and expected in err, err
    assert "gradmc plan --config" in err and "Traceback" not in err
    assert profile.read_text() == PROFILE.read_text()


@pytest.mark.parametrize("text, expected", [
    ("name: decide\n", "results/decide"),          # where the pipeline writes that config's results
    ("name: ''\n", "results/mine"),                # no usable name: the file's stem
    ("name: a/b\n", "results/mine"),
    ("[1, 2]\n", "results/mine"),                  # not a mapping: the plan's config check reports it later
    (": : :\n", "results/mine"),                   # not YAML
])
def test_default_out_is_the_configs_results_folder(tmp_path, text, expected):
    from gradmc.plan.cli import _default_out

    config = tmp_path / "mine.yaml"
    config.write_text(text)
    assert _default_out(str(config)) == expected


@pytest.mark.parametrize("history, chains, expected", [(0, 4, 100), (400, 4, 100), (1000, 4, 250), (1001, 4, 251)])
def test_slice_benchmark_holds_kmc_gpcs_history(history, chains, expected):
    from gradmc.plan.probe import benchmark_iterations

    config = {"kmc_gpc": {"num_history": history, "benchmark": {"num_chains": chains}}}
    assert benchmark_iterations(config) == expected
    assert benchmark_iterations(config) * chains >= history
