"""workflow/rerun.py: one line per job with the reason in words (code files, config keys, inputs), from Snakemake's
dry-run text and the recorded per-file code digests; the shard summary of a finished run from its logs."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

from gradmc.codedigest import record_manifest

_SPEC = importlib.util.spec_from_file_location("rerun", Path(__file__).parents[1] / "workflow" / "rerun.py")
rerun = importlib.util.module_from_spec(_SPEC)
sys.modules["rerun"] = rerun  # its dataclass looks its module up
_SPEC.loader.exec_module(rerun)

OLD = {"experiments/ising_sampling.py": "1111111111111111", "samplers/discrete/gwg.py": "2222222222222222",
       "samplers/base.py": "3333333333333333"}
NEW = {**OLD, "samplers/discrete/gwg.py": "4444444444444444", "samplers/discrete/pas.py": "5555555555555555"}


def _dry_run(records: Path) -> str:
    old, new = record_manifest(records, OLD), record_manifest(records, NEW)
    config_old = {"device": "cpu", "ising_sampling": {"samplers": ["GWG"], "num_steps": 10}}
    config_new = {"device": "cpu", "ising_sampling": {"samplers": ["GWG", "DMALA"], "num_steps": 10}}
    return f"""Building DAG of jobs...
Job stats:
job   count
----  -----
all   1

[Sun Dec  6 02:22:41 2026]
Job 30: Sampling lattice Ising models: sides [4] x thetas [0.1] on Ray
Reason: Params have changed since last execution: Union of exclusive params before and now across all output: \
before: '{old}',{config_old!r} now: '{new}',{config_new!r}
Shell command: gradmc run ising_sampling --out results/smoke/ising_sampling/metrics.parquet 2>&1 | joblog \
results/smoke/logs/ising_sampling.log ising_sampling

[Sun Dec  6 02:22:41 2026]
Job 31: Drawing GWG Fig. 4
Reason: Input files updated by another job: results/smoke/ising_sampling/metrics.parquet
Shell command: gradmc figure ising_sampling --metrics results/smoke/ising_sampling/metrics.parquet 2>&1 | joblog \
results/smoke/logs/figure_ising_sampling.log figure_ising_sampling

[Sun Dec  6 02:22:41 2026]
Job 4: Preparing binarized MNIST
Reason: Missing output files: results/smoke/data/mnist.npz
Shell command: gradmc data prepare mnist 2>&1 | joblog results/smoke/logs/prepare_mnist.log prepare_mnist

[Sun Dec  6 02:22:41 2026]
rule claims:
Job 5: Measuring the claims
Reason: Missing output files: results/smoke/claims.md
Shell command: gradmc claims --out results/smoke/claims.md

[Sun Dec  6 02:22:41 2026]
Job 0: All figures and tables of the 'smoke' config are up to date
Reason: Input files updated by another job: results/smoke/claims.md
Shell command: None

[Sun Dec  6 02:22:41 2026]
localrule all:
    input: results/smoke/claims.md
Job 0: All figures and tables of the 'smoke' config are up to date
Reason: Input files updated by another job: results/smoke/claims.md
This was a dry-run (flag -n). The order of jobs does not reflect the order of execution.
"""


def test_dry_run_jobs_are_parsed_by_their_log_names(tmp_path):
    jobs = rerun.parse_dry_run(_dry_run(tmp_path))
    assert [job.name for job in jobs] == ["ising_sampling", "figure_ising_sampling", "prepare_mnist", "claims"]
    assert jobs[2].reason == "Missing output files: results/smoke/data/mnist.npz"


def test_reasons_name_the_changed_files_and_config_keys(tmp_path):
    jobs = rerun.parse_dry_run(_dry_run(tmp_path))
    lines = [rerun.explain(job.reason, records=tmp_path) for job in jobs]
    assert lines[0] == ("code of pkg/gradmc/samplers/discrete/gwg.py, pkg/gradmc/samplers/discrete/pas.py (newly used) "
                        "changed; config key ising_sampling.samplers changed")
    assert lines[1] == "input rebuilt first (metrics.parquet)"
    assert lines[2] == "output missing (mnist.npz)"


def test_code_change_without_records_says_so(tmp_path):
    reason = ("Params have changed since last execution: Union of exclusive params before and now across all "
              "output: before: 'code:aaaaaaaaaaaaaaaa' now: 'code:bbbbbbbbbbbbbbbb' ")
    assert rerun.explain(reason, records=tmp_path) == "code changed (no record of the earlier code's files)"
    older = ("Params have changed since last execution: Union of exclusive params before and now across all "
             "output: before: 'aaaaaaaaaaaaaaaa' now: 'code:bbbbbbbbbbbbbbbb' ")
    assert "older gradmc" in rerun.explain(older, records=tmp_path)


def test_changed_keys_walks_nested_sections():
    old = {"a": {"b": 1, "c": [1, 2]}, "d": 0}
    new = {"a": {"b": 1, "c": [1, 3], "e": 5}, "d": 0}
    assert rerun.changed_keys(old, new) == ["a.c", "a.e"]
    assert rerun.changed_keys(old, old) == []


def test_report_sums_the_shard_lines_of_jobs_that_ran(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    config = tmp_path / "smoke.yaml"
    config.write_text((Path(__file__).parents[1] / "config" / "smoke.yaml").read_text())
    logs = tmp_path / "results" / "smoke" / "logs"
    logs.mkdir(parents=True)
    (logs / "ising_sampling.log").write_text("[ising_sampling] 12 shards\n"
                                             "[ising_sampling] shards: 4 computed, 8 from the cache (of 12 shards)\n")
    (logs / "fhmm_sampling.log").write_text("[fhmm_sampling] shards: 9 computed, 0 from the cache (of 9 shards)\n")
    log = tmp_path / "run.snakemake.log"
    log.write_text("Finished jobid: 3 (Rule: ising_sampling)\nFinished jobid: 4 (Rule: figure_ising_sampling)\n")
    out = []
    monkeypatch.setattr("builtins.print", lambda *a, **k: out.append(" ".join(map(str, a))))
    assert rerun.report(config, log) == 0
    assert "2 jobs ran" in out[0] and "4 computed, 8 from the cache" in out[0]  # fhmm_sampling did not run
    assert "ising_sampling" in out[1]


def test_report_of_a_run_that_executed_nothing_names_no_earlier_run(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    config = tmp_path / "smoke.yaml"
    config.write_text((Path(__file__).parents[1] / "config" / "smoke.yaml").read_text())
    folder = tmp_path / ".snakemake" / "log"
    folder.mkdir(parents=True)
    earlier = folder / "2026-01-01T000000.snakemake.log"
    earlier.write_text("Finished jobid: 3 (Rule: ising_sampling)\n")
    import os
    import time

    os.utime(earlier, (time.time() - 100, time.time() - 100))
    out = []
    monkeypatch.setattr("builtins.print", lambda *a, **k: out.append(" ".join(map(str, a))))
    assert rerun.report(config, None, since=time.time() - 10) == 0
    assert out == ["[rerun] no job ran"]
