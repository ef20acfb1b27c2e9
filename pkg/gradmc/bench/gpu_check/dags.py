"""The two smoke DAGs: a copy of the smoke config per device, and the two Snakemake runs at the same time, with
their progress and a deadline (plus the data fetch before them)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from gradmc.bench.gpu_check._shared import _DEVICES, REPO

__all__ = ["derived_config", "DagRun", "run_dags"]


def derived_config(base: dict, *, name: str, device: str, gpus_per_shard: float = 0.25) -> dict:
    """A copy of the config ``base`` with ``name`` (its results folder is ``results/<name>``) and ``device``;
    ``gpus_per_shard`` is set for cuda and dropped for cpu. Nothing else changes, so both DAGs run the same
    shards with the same seeds."""
    if device not in _DEVICES:
        raise ValueError(f"device must be one of {_DEVICES}, got {device!r}")
    config = {key: value for key, value in base.items() if key != "gpus_per_shard"}
    config["name"] = name
    config["device"] = device
    if device == "cuda":
        config["gpus_per_shard"] = float(gpus_per_shard)
    return config


@dataclass
class DagRun:
    """One Snakemake run of the smoke DAG: its config file, log, cores, and (after :func:`run_dags`) its
    exit status (None: killed at the deadline) and wall time."""

    device: str
    config_path: Path
    results: Path
    log_path: Path
    cores: int
    returncode: int | None = None
    seconds: float = 0.0
    timed_out: bool = False
    command: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """The DAG finished with status 0 within the deadline."""
        return self.returncode == 0 and not self.timed_out


def run_dags(runs: list[DagRun], *, deadline: float, repo: Path = REPO, env: dict | None = None,
             progress=print, every: float = 20.0) -> list[DagRun]:
    """Run the Snakemake DAGs of ``runs`` at the same time (output to each run's log), from ``repo``, printing
    their progress ("12 of 35 steps") through ``progress`` every ``every`` seconds. A run still going at
    ``deadline`` (a ``time.monotonic()`` value) is stopped (its process group gets SIGTERM, then SIGKILL) and
    marked ``timed_out``; so is every run on KeyboardInterrupt, which is re-raised. A run whose ``command`` is
    set runs that command instead of Snakemake (the tests' stand-in). Returns ``runs`` with their status."""
    env = dict(os.environ if env is None else env, PYTHONUNBUFFERED="1")
    active = []
    try:
        for run in runs:
            run.command = run.command or [sys.executable, "-m", "snakemake", "--workflow-profile",
                                          str(repo / "workflow" / "profiles" / "default"), "--cores",
                                          str(run.cores), "--configfile", str(run.config_path)]
            run.log_path.parent.mkdir(parents=True, exist_ok=True)
            with open(run.log_path, "w") as log:  # the child keeps its own copy of the descriptor
                proc = subprocess.Popen(run.command, cwd=repo, env=env, stdout=log, stderr=subprocess.STDOUT,
                                        start_new_session=True)  # its own process group, stopped as one
            active.append((run, proc, time.monotonic()))
        last = time.monotonic()
        while any(run.returncode is None and not run.timed_out for run, _, _ in active):
            time.sleep(0.5)
            now = time.monotonic()
            for run, proc, started in active:
                if run.returncode is None and not run.timed_out:
                    run.returncode = proc.poll()
                    if run.returncode is None and now >= deadline:
                        run.timed_out = True
                        _stop(proc)
                    run.seconds = time.monotonic() - started
            if progress is not None and now - last >= every:
                last = now
                progress("[gpu-check] " + ", ".join(f"{run.device} DAG: {_dag_progress(run)}" for run in runs))
    except BaseException:
        for run, proc, _ in active:
            if proc.poll() is None:
                run.timed_out = True
                _stop(proc)
        raise
    return runs


def _dag_progress(run: DagRun) -> str:
    """The last "N of M steps (x%) done" of a run's Snakemake log, or its state."""
    if run.timed_out:
        return "stopped"
    if run.returncode is not None:
        return "done" if run.returncode == 0 else f"failed (exit {run.returncode})"
    try:
        text = run.log_path.read_text(errors="replace")
    except OSError:
        return "starting"
    done = [line.strip() for line in text.splitlines() if " steps (" in line and line.strip().endswith("done")]
    return done[-1] if done else "starting"


def _stop(proc: subprocess.Popen) -> None:
    """SIGTERM to the process group we started (Snakemake and its jobs), SIGKILL after 20 s."""
    for sig, wait in ((signal.SIGTERM, 20), (signal.SIGKILL, 10)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(timeout=wait)
            return
        except subprocess.TimeoutExpired:
            continue


def _prefetch(config_path: Path, log_path: Path, *, deadline: float, repo: Path) -> tuple[bool, str]:
    """Fetch the data files the smoke config reads before the two DAGs start (both DAGs would otherwise
    schedule the same fetch jobs, and the second Snakemake would find their outputs locked). Returns
    (ok, last line of the output)."""
    cmd = [sys.executable, "-m", "gradmc.cli", "data", "fetch", "--config", str(config_path)]
    try:
        out = subprocess.run(cmd, cwd=repo, capture_output=True, text=True,
                             timeout=max(deadline - time.monotonic(), 1.0))
    except subprocess.TimeoutExpired:
        return False, "data fetch ran past the time limit"
    log_path.parent.mkdir(parents=True, exist_ok=True)
    log_path.write_text(out.stdout + out.stderr)
    lines = (out.stderr or out.stdout).strip().splitlines()
    return out.returncode == 0, lines[-1] if lines else ""
