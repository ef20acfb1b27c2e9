"""workflow/stage_times.py: per-stage wall times from a Snakemake log (a known synthetic log)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

_SPEC = importlib.util.spec_from_file_location("stage_times", Path(__file__).parents[1] / "workflow" / "stage_times.py")
stage_times = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(stage_times)

LOG = """Building DAG of jobs...
[Wed Dec  2 04:01:50 2026]
Job 4: Preparing binarized MNIST
Shell command: gradmc data prepare mnist
[Wed Dec  2 04:01:50 2026]
Job 7: Sampling
[Wed Dec  2 04:01:52 2026]
Finished jobid: 4 (Rule: prepare_mnist)
1 of 3 steps (33%) done
[Wed Dec  2 04:01:53 2026]
Job 9: Preparing again
[Wed Dec  2 04:02:10 2026]
Finished jobid: 7 (Rule: rbm_sampling)
[Wed Dec  2 04:02:13 2026]
Finished jobid: 9 (Rule: prepare_mnist)
[Wed Dec  2 04:02:14 2026]
Job 11: never ends
"""


def test_stage_times_of_a_known_log(tmp_path):
    stages, total, unfinished = stage_times.stage_times(LOG)
    assert stages == {"prepare_mnist": (2, 22.0), "rbm_sampling": (1, 20.0)}
    assert total == 23.0 and unfinished == ["job 11"]
    out = tmp_path / "times.md"
    (tmp_path / "run.log").write_text(LOG)
    assert stage_times.main([str(tmp_path / "run.log"), "--out", str(out)]) == 0
    text = out.read_text()
    assert text.index("prepare_mnist | 2 | 22") < text.index("rbm_sampling | 1 | 20")
    assert "Run wall time: 23 s" in text and "Unfinished jobs: job 11" in text


def test_not_a_snakemake_log(tmp_path, capsys):
    with pytest.raises(ValueError, match="no finished job"):
        stage_times.stage_times("hello\n")
    (tmp_path / "x.log").write_text("hello\n")
    assert stage_times.main([str(tmp_path / "x.log")]) == 2
    assert "no finished job" in capsys.readouterr().err


def test_default_log_skips_a_newer_no_op_rerun(tmp_path, monkeypatch, capsys):
    import os

    logs = tmp_path / ".snakemake" / "log"
    logs.mkdir(parents=True)
    (logs / "2026-01-01T000000.snakemake.log").write_text(LOG)
    noop = logs / "2026-01-02T000000.snakemake.log"
    noop.write_text("Building DAG of jobs...\nNothing to be done (all requested files are present and up to date).\n")
    os.utime(noop, (2e9, 2e9))  # newer
    monkeypatch.chdir(tmp_path)
    assert stage_times.main([]) == 0
    out = capsys.readouterr().out
    assert "2026-01-01T000000" in out and "prepare_mnist | 2 | 22" in out
    (logs / "2026-01-01T000000.snakemake.log").write_text("hello\n")
    assert stage_times.main([]) == 2 and "nor any of the 2 logs" in capsys.readouterr().err
