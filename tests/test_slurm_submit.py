"""The slurm profile really submits: a non-dry run with the SLURM executor (no --cores, as on a cluster's login
node) parses the Snakefile and reaches sbatch with the profile's partition, memory and cores. Fake `sbatch` and
`sacct` on PATH refuse the job, so nothing runs and no cluster is needed. A dry run cannot show this: it sets
--cores 1, and the submitting process of a real run has none (a rule's `threads: workflow.cores` stopped it)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SNAKEMAKE = str(Path(sys.executable).with_name("snakemake"))


def test_the_slurm_profile_reaches_sbatch_with_the_plans_resources(tmp_path):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in ("sbatch", "sacct"):
        (bin_dir / tool).write_text('#!/bin/sh\necho "fake $(basename $0): no SLURM here" >&2\nexit 1\n')
        (bin_dir / tool).chmod(0o755)
    work = tmp_path / "work"
    work.mkdir()
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"}
    proc = subprocess.run(
        [SNAKEMAKE, "-s", str(ROOT / "Snakefile"), "--directory", str(work), "results/paper/kmc_abc/metrics.parquet",
         "--workflow-profile", str(ROOT / "workflow" / "profiles" / "slurm"),
         "--slurm-init-seconds-before-status-checks", "1", "--configfile", str(ROOT / "config" / "paper.yaml")],
        capture_output=True, text=True, env=env, timeout=600, cwd=work)
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0  # the fake sbatch refused it
    assert "Workflow requires a total number of cores" not in out, out[-3000:]
    assert "fake sbatch: no SLURM here" in out, out[-3000:]
    sbatch = next(line for line in out.splitlines() if line.strip().startswith("sbatch --"))
    # kmc_abc is cpu_only: the cpu partition, no GPU, the plan's memory; its own Snakemake takes the allocation's cores
    assert "-p cpu" in sbatch and "--gres" not in sbatch and "--gpu" not in sbatch
    assert "--cpus-per-task=8" in sbatch and "--cores 'all'" in sbatch
    mem = next(line for line in (ROOT / "workflow/profiles/slurm/config.yaml").read_text().splitlines()
               if "kmc_abc:mem_mb=" in line).split("=")[1]
    assert f"--mem {mem}" in sbatch
    assert not (work / "results" / "paper" / "kmc_abc" / "metrics.parquet").exists()
