"""`make gpu-check` (gradmc.bench.gpu_check) on the CPU: the CPU-vs-CUDA comparison of result folders on
synthetic tidy tables (passes for one distribution, fails for means many standard errors apart, ignores
timings and pooled rows, needs the same shards), the table, the derived configs, and the clean refusal
without CUDA (exit status 2, one line, no traceback)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from scipy import stats

from gradmc.bench import gpu_check
from gradmc.bench.gpu_check import cli as gpu_check_cli
from gradmc.config import validate_config
from gradmc.results import PROVENANCE_COLUMNS, SCHEMA_VERSION, read_parquet, write_parquet

REPO = Path(__file__).resolve().parents[1]


def _frame(seed: int, *, shift: float = 0.0, chains: int = 8, samplers=("Gibbs-1", "GWG"),
           timing_scale: float = 1.0) -> pd.DataFrame:
    """A tidy table like rbm_sampling's: per-chain ess, acceptance_rate, ess_per_second, plus pooled rows."""
    rng = np.random.default_rng(seed)
    rows = []
    for sampler in samplers:
        for chain in range(chains):
            ess = rng.normal(30.0, 5.0) + (shift if sampler == "GWG" else 0.0)
            accept = 1.0 if sampler == "Gibbs-1" else rng.normal(0.9, 0.02)
            rows += [(sampler, 0, chain, 40, "ess", ess), (sampler, 0, chain, 40, "acceptance_rate", accept),
                     (sampler, 0, chain, 40, "ess_per_second", ess * 100.0 * timing_scale)]
        rows.append((sampler, 0, -1, 40, "ess_all_chains", rng.normal(200.0, 30.0) * timing_scale))
    df = pd.DataFrame(rows, columns=["sampler", "seed", "chain", "step", "metric", "value"])
    df.insert(0, "target", "rbm")
    df.insert(0, "experiment", "rbm_sampling")
    return df.assign(energy_evals=40, grad_evals=40, wall_time_s=0.5 * timing_scale)


def test_same_distribution_passes_and_timings_and_pooled_rows_are_ignored():
    cpu = {"rbm_sampling/metrics.parquet": _frame(1)}
    cuda = {"rbm_sampling/metrics.parquet": _frame(2, timing_scale=20.0)}  # 20x faster: timings differ
    result = gpu_check.compare_frames(cpu, cuda)
    assert result["passed"].all(), result
    assert set(result["metric"]) == {"ess", "acceptance_rate"}  # not ess_per_second, not the chain -1 rows
    assert result.attrs["m"] == 4 == len(result)  # 2 samplers x 2 metrics
    assert set(result["n_cpu"]) == {8}
    gibbs = result[(result["metric"] == "acceptance_rate") & result["group"].str.contains("Gibbs-1")].iloc[0]
    assert gibbs["se_diff"] == 0 and gibbs["passed"]  # every chain 1.0 on both devices: exact agreement


def test_means_many_standard_errors_apart_fail():
    cpu = {"rbm_sampling/metrics.parquet": _frame(1)}
    cuda = {"rbm_sampling/metrics.parquet": _frame(2, shift=30.0)}  # GWG ess: 30 / (5 * sqrt(2/8)) = 12 se apart
    result = gpu_check.compare_frames(cpu, cuda)
    failed = result[~result["passed"]]
    assert len(failed) == 1
    row = failed.iloc[0]
    assert row["metric"] == "ess" and "sampler=GWG" in row["group"]
    assert row["t"] > row["critical"] > 3.0 and "Monte Carlo error" in row["note"]
    assert result[result["passed"]].shape[0] == 3


def test_critical_value_is_student_t_with_bonferroni():
    cpu = {"a.parquet": _frame(1, chains=200)}
    cuda = {"a.parquet": _frame(2, chains=200)}
    result = gpu_check.compare_frames(cpu, cuda)
    row = result[(result["metric"] == "ess") & result["group"].str.contains("GWG")].iloc[0]
    m = result.attrs["m"]
    assert row["df"] == 398
    assert row["critical"] == pytest.approx(stats.t.ppf(1 - gpu_check.FAMILY_ALPHA / (2 * m), 398))
    assert row["critical"] == pytest.approx(stats.norm.ppf(1 - 0.01 / 8), abs=0.05)  # large n: Bonferroni z
    assert row["se_diff"] == pytest.approx((row["se_cpu"] ** 2 + row["se_cuda"] ** 2) ** 0.5)  # equal n
    assert row["t"] == pytest.approx(abs(row["mean_cuda"] - row["mean_cpu"]) / row["se_diff"])
    small = gpu_check.compare_frames({"a": _frame(1, chains=4)}, {"a": _frame(2, chains=4)})
    assert small["critical"].dropna().round(2).unique().tolist() == [round(stats.t.ppf(1 - 0.01 / 8, 6), 2)]


def test_constant_values_must_agree_exactly():
    low = _frame(2)
    low.loc[(low["sampler"] == "Gibbs-1") & (low["metric"] == "acceptance_rate"), "value"] = 0.5
    result = gpu_check.compare_frames({"f": _frame(1)}, {"f": low})
    failed = result[~result["passed"]]
    assert list(failed["metric"]) == ["acceptance_rate"] and "round-off" in failed.iloc[0]["note"]


def test_other_shards_or_files_fail():
    cuda = _frame(2)
    cuda = cuda[~((cuda["sampler"] == "GWG") & (cuda["metric"] == "ess"))]
    result = gpu_check.compare_frames({"f": _frame(1), "only_cpu.parquet": _frame(3)}, {"f": cuda})
    failed = result[~result["passed"]]
    notes = dict(zip(failed["file"] + ":" + failed["metric"], failed["note"], strict=True))
    assert "same shards" in notes["f:ess"] and "only in the cpu" in notes["only_cpu.parquet:<file>"]
    assert result.attrs["m"] == 3


def test_single_chain_groups_and_extra_key_columns():
    """kmc-style shards of one chain carry no standard error; extra columns such as theta keep shards apart,
    the chunk column (first chain of a shard) does not."""
    df = _frame(1, samplers=("GWG",))
    one_chain = df[df["chain"] == 0].assign(experiment="kmc_banana")
    two_thetas = pd.concat([df.assign(theta=0.3, chunk=df["chain"] // 4 * 4), df.assign(theta=-0.1, chunk=0)])
    result = gpu_check.compare_frames({"kmc": one_chain, "ising": two_thetas},
                                      {"kmc": one_chain, "ising": two_thetas})
    assert set(result["file"]) == {"ising"}
    assert len(result) == 4 and set(result["n_cpu"]) == {8}
    assert result["passed"].all() and (result["t"] == 0).all()


def _write(folder: Path, name: str, df: pd.DataFrame) -> None:
    prov = {"schema_version": SCHEMA_VERSION, **{key: "test" for key in PROVENANCE_COLUMNS}, "git_dirty": False}
    write_parquet(df, folder / name / "metrics.parquet", prov)


def test_compare_folders_reads_every_metrics_file(tmp_path):
    for dev, seed in (("cpu", 1), ("cuda", 2)):
        _write(tmp_path / dev, "rbm_sampling", _frame(seed))
        _write(tmp_path / dev, "ising_sampling", _frame(seed + 10).assign(experiment="ising_sampling"))
        (tmp_path / dev / "notes.txt").write_text("not a table")
    assert set(gpu_check.load_results(tmp_path / "cpu")) == {"rbm_sampling/metrics.parquet",
                                                             "ising_sampling/metrics.parquet"}
    result = gpu_check.compare_folders(tmp_path / "cpu", tmp_path / "cuda")
    assert result.attrs["m"] == 8 and result["passed"].all()
    assert read_parquet(tmp_path / "cpu" / "rbm_sampling" / "metrics.parquet")[0].shape[0] == 50


def _report(comparison: pd.DataFrame) -> dict:
    rows = [{k: gpu_check._plain(v) for k, v in r.items()} for r in comparison.to_dict("records")]
    run = {"returncode": 0, "timed_out": False, "seconds": 95.0, "log": "results/gpu-check/logs/x.log"}
    return {"time_limit_s": 300.0, "elapsed_s": 212.0, "gpu": "NVIDIA H200", "torch": "2.13.0+cu126",
            "passed": bool(comparison["passed"].all()),
            "smoke": {"skipped": False, "folder": "results/gpu-check", "runs": {"cpu": run, "cuda": dict(run)},
                      "comparison": {"m": comparison.attrs["m"], "family_alpha": 0.01,
                                     "files": gpu_check._summarise(comparison), "rows": rows,
                                     "passed": bool(comparison["passed"].all())}},
            "bench": [{"device": "cpu", "chains": 100, "threads": 2, "steps_per_s": 540.0, "chain_steps_per_s": 5.4e4},
                      {"device": "cuda", "chains": 100, "threads": None, "steps_per_s": 3100.0,
                       "chain_steps_per_s": 3.1e5},
                      {"device": "cuda", "chains": 10_000, "threads": None, "steps_per_s": 2000.0,
                       "chain_steps_per_s": 2.0e7}],
            "bench_errors": []}


def test_table_has_every_check_in_one_markdown_table():
    result = gpu_check.compare_frames({"rbm_sampling/metrics.parquet": _frame(1)},
                                      {"rbm_sampling/metrics.parquet": _frame(2, shift=30.0)})
    report = _report(result)
    table = gpu_check.format_table(report)
    lines = table.strip().splitlines()
    assert all(line.startswith("| ") and line.endswith(" |") for line in lines)
    assert {len(re.split(r"(?<!\\)\|", line)) for line in lines} == {7}  # 5 columns on every line
    text = "\n".join(lines)
    assert "| GWG steps/s | RBM 784x500, W ~ N(0, 0.1^2), 100 chains | 540 (2 threads) | 3,100 | CUDA/CPU 5.7x" in text
    assert "10,000 chains | - | 2,000 |" in text
    assert "FAIL (1 of 4)" in text and "| FAILED | rbm_sampling/metrics.parquet ess" in text
    assert "Bonferroni over m = 4, family-wise alpha 0.01" in text and "212 s, FAIL" in text
    details = gpu_check.format_details(report)
    assert len(details.strip().splitlines()) == 2 + 4 and "NO: means differ" in details
    json.dumps(gpu_check._json_safe(report), allow_nan=False)  # the report is strict JSON


def test_table_when_smoke_skipped():
    table = gpu_check.format_table({"smoke": {"skipped": True, "reason": "skipped (--skip-smoke)"}, "bench": [],
                                    "bench_errors": ["cuda, 10000 chains: out of memory"],
                                    "time_limit_s": 300.0, "elapsed_s": 10.0, "passed": False})
    assert "| smoke DAG | skipped (--skip-smoke) | - | - | skipped |" in table and "out of memory" in table


def test_derived_configs_differ_from_smoke_only_in_name_and_device():
    base = yaml.safe_load((REPO / "config" / "smoke.yaml").read_text())
    cpu = gpu_check.derived_config(base, name="gpu-check/cpu", device="cpu")
    cuda = gpu_check.derived_config(base, name="gpu-check/cuda", device="cuda", gpus_per_shard=0.25)
    assert cuda["gpus_per_shard"] == 0.25 and "gpus_per_shard" not in cpu
    strip = ("name", "device", "gpus_per_shard")
    assert {k: v for k, v in cpu.items() if k not in strip} == {k: v for k, v in base.items() if k not in strip}
    assert {k: v for k, v in cuda.items() if k not in strip} == {k: v for k, v in base.items() if k not in strip}
    validate_config(cpu)
    validate_config(cuda)  # gpus_per_shard > 0, as device: cuda requires
    with pytest.raises(ValueError, match="device"):
        gpu_check.derived_config(base, name="x", device="mps")


def test_refuses_without_cuda_in_a_subprocess():
    env = dict(os.environ, CUDA_VISIBLE_DEVICES="")  # no GPU visible even on a GPU machine
    out = subprocess.run([sys.executable, "-m", "gradmc.bench.gpu_check", "--out", "results/gpu-check-test"],
                         capture_output=True, text=True, env=env, cwd=REPO, timeout=60)
    assert out.returncode == 2, out.stderr
    assert out.stdout == ""
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1, out.stderr
    assert "Traceback" not in out.stderr
    assert lines[0].startswith("gpu-check: CUDA is not available: torch.cuda.is_available() is False")
    assert not (REPO / "results" / "gpu-check-test").exists()


@pytest.mark.parametrize("build", [None, "12.6"])
def test_refusal_names_the_build_and_the_fix(monkeypatch, capsys, build):
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 0)
    monkeypatch.setattr(torch.version, "cuda", build)
    assert gpu_check.main(["--skip-smoke"]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err.count("\n") == 1
    if build is None:
        assert "CPU-only build (torch.version.cuda is None)" in captured.err
        assert "make TORCH=cu126 venv" in captured.err and "rm -rf .venv" in captured.err
    else:
        assert "built for CUDA 12.6 but sees no GPU" in captured.err and "nvidia-smi" in captured.err


def test_out_must_be_under_results(monkeypatch, capsys, tmp_path):
    monkeypatch.setattr(gpu_check_cli, "cuda_problem", lambda: None)  # main looks it up in gpu_check.cli
    assert gpu_check.main(["--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "must be a folder under" in err


def test_groups_of_fewer_than_min_chains_are_not_compared():
    small = _frame(1, chains=gpu_check.MIN_CHAINS - 1)
    assert gpu_check.compare_frames({"f": small}, {"f": _frame(2, chains=gpu_check.MIN_CHAINS - 1)}).empty


def test_run_dags_reports_progress_and_stops_a_run_at_the_deadline(tmp_path):
    import time

    quick = gpu_check.DagRun("cpu", tmp_path / "cpu.yaml", tmp_path / "cpu", tmp_path / "logs" / "cpu.log", 1,
                             command=[sys.executable, "-c", "print('3 of 5 steps (60%) done', flush=True)"])
    slow = gpu_check.DagRun("cuda", tmp_path / "cuda.yaml", tmp_path / "cuda", tmp_path / "logs" / "cuda.log", 1,
                            command=[sys.executable, "-c", "import time; print('1 of 5 steps (20%) done', "
                                     "flush=True); time.sleep(60)"])
    seen = []
    start = time.monotonic()
    gpu_check.run_dags([quick, slow], deadline=start + 3.0, repo=REPO, progress=seen.append, every=1.0)
    assert time.monotonic() - start < 30
    assert quick.ok and quick.returncode == 0 and not quick.timed_out
    assert slow.timed_out and not slow.ok and 2.5 < slow.seconds < 30
    assert any("cpu DAG: done" in line and "cuda DAG: 1 of 5 steps (20%) done" in line for line in seen), seen
    assert "3 of 5 steps" in quick.log_path.read_text()
