"""Driver interruption: Ctrl-C on a running pipeline, then a rerun finishes only what was unfinished.

The smoke workflow is copied to a temporary folder and asked for the RBM reference samples (three chained jobs:
prepare_mnist -> train_rbm -> rbm_reference). Snakemake is interrupted with SIGINT (what Ctrl-C on
`make reproduce` sends) as soon as the first job's output exists; then
- no output of an unfinished job is left behind (Snakemake removes incomplete outputs, and gradmc writes
  every output through a temporary file and an atomic rename, so there is never a half-written file);
- a dry run of the same target schedules the unfinished jobs only (the finished data stage is kept);
- the rerun (with --rerun-incomplete, as in the profiles) completes and its outputs load.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

REPO = Path(__file__).resolve().parents[1]
TARGET = "results/smoke/rbm_sampling/reference.npz"


def _copy_workflow(dest: Path) -> None:
    for name in ("Snakefile", "environment.yml"):
        shutil.copy(REPO / name, dest / name)
    for name in ("workflow", "config"):
        shutil.copytree(REPO / name, dest / name)
    shutil.copytree(REPO / "pkg", dest / "pkg", ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))


def _cmd(work: Path, *args: str) -> list[str]:
    return [sys.executable, "-m", "snakemake", "-s", str(work / "Snakefile"), "--directory", str(work),
            "--configfile", str(work / "config" / "smoke.yaml"), "--cores", "2", "--rerun-incomplete", *args]


@pytest.mark.slow
def test_interrupted_run_resumes_only_unfinished_jobs(tmp_path):
    _copy_workflow(tmp_path)
    first_output = tmp_path / "results/smoke/data/mnist.npz"
    second_log = tmp_path / "results/smoke/logs/train_rbm.log"  # created when the second job starts
    # a terminal's default SIGINT disposition (an earlier test in this process may have set it to "ignore",
    # which children would inherit, and Python then never raises KeyboardInterrupt)
    proc = subprocess.Popen(_cmd(tmp_path, TARGET), cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True, start_new_session=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    deadline = time.monotonic() + 240
    while not second_log.exists() and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.1)
    if proc.poll() is not None:
        pytest.fail("the pipeline ended before it could be interrupted:\n" + proc.stdout.read()[-3000:])
    assert second_log.exists(), "the second job did not start within 240 s"
    os.killpg(proc.pid, signal.SIGINT)  # Ctrl-C in a terminal signals the whole foreground process group
    try:
        log = proc.communicate(timeout=120)[0]
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        pytest.fail("snakemake did not stop within 120 s of SIGINT")
    assert proc.returncode != 0, log[-2000:]
    assert not (tmp_path / TARGET).exists()
    leftovers = [p.name for p in (tmp_path / "results/smoke").rglob("*") if ".tmp" in p.name]
    assert leftovers == [], leftovers  # no half-written temporary files
    np.load(first_output)  # the finished output is complete

    dry = subprocess.run(_cmd(tmp_path, TARGET, "--dry-run"), cwd=tmp_path, capture_output=True, text=True,
                         timeout=120)
    assert dry.returncode == 0, dry.stdout[-2000:] + dry.stderr[-2000:]
    scheduled = dry.stdout.split("Job stats:", 1)[1].split("total", 1)[0]
    assert "prepare_mnist" not in scheduled and "rbm_reference" in scheduled

    rerun = subprocess.run(_cmd(tmp_path, TARGET), cwd=tmp_path, capture_output=True, text=True, timeout=400)
    assert rerun.returncode == 0, rerun.stdout[-3000:] + rerun.stderr[-3000:]
    with np.load(tmp_path / TARGET) as ref:
        assert len(ref.files) > 0
