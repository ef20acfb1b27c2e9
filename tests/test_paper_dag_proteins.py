"""The paper config's potts_proteins job runs without the inputs nobody can download.

OPSD_BOVIN and CADH1_HUMAN (GWG Sec. 5.4) are EVcouplings files the GWG authors share on request; the paper DAG's
``potts_proteins`` job must run the other proteins, name the missing files and how to obtain them, and leave those
proteins' claims NOT RUN. Run here through Snakemake on the paper config at reduced size (copied workflow, CPU)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from gradmc.claims.base import NOT_RUN, claims_frame
from gradmc.config import load_config
from gradmc.results import read_parquet

REPO = Path(__file__).resolve().parents[1]

#: The paper config's potts_proteins section at a size that runs in seconds: every protein the paper names, two
#: methods, one seed, a 200-sequence subsample, a few PCD iterations.
SMALL = {"methods": ["PLM", "PCD-GWG"], "seeds": [0], "num_sequences": 200, "num_k": 10,
         "plm": {"max_iterations": 3}, "pcd": {"num_iterations": 4, "num_steps": 2, "batch_size": 16,
                                               "buffer_size": 32, "log_every": 2, "checkpoint_every": 2}}


def _paper_config(work: Path) -> Path:
    config = load_config(REPO / "config" / "paper.yaml")  # the overlay with the papers' defaults filled in
    config.update(device="cpu", gpus_per_shard=0)
    spec = config["potts_proteins"]
    assert {"OPSD_BOVIN", "CADH1_HUMAN"} <= set(spec["proteins"])  # the paper's proteins stay asked for
    for key, value in SMALL.items():
        spec[key] = {**spec[key], **value} if isinstance(value, dict) else value
    path = work / "config" / "paper.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    return path


@pytest.mark.slow
def test_paper_dag_runs_potts_proteins_without_the_private_inputs(tmp_path, real_data):
    data = real_data("pf00018", "potts_synthetic")
    assert not (data / "protein" / "OPSD_BOVIN").exists()
    for name in ("Snakefile", "environment.yml"):
        shutil.copy(REPO / name, tmp_path / name)
    for name in ("workflow", "config"):
        shutil.copytree(REPO / name, tmp_path / name)
    shutil.copytree(REPO / "pkg", tmp_path / "pkg", ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    config = _paper_config(tmp_path)
    target = "results/paper/potts_proteins/metrics.parquet"
    env = dict(os.environ, GRADMC_DATA_DIR=str(data),
               PYTHONPATH=os.pathsep.join(filter(None, [str(tmp_path / "pkg"), os.environ.get("PYTHONPATH")])))
    out = subprocess.run([sys.executable, "-m", "snakemake", "-s", str(tmp_path / "Snakefile"), "--directory",
                          str(tmp_path), "--configfile", str(config), "--cores", "2", target],
                         capture_output=True, text=True, timeout=900, cwd=tmp_path, env=env)
    log = tmp_path / "results" / "paper" / "logs" / "potts_proteins.log"
    text = log.read_text() if log.exists() else ""
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:] + text[-3000:]
    df, _ = read_parquet(tmp_path / target)
    assert set(df["target"]) == {"PF00018", "synthetic"}
    for name in ("OPSD_BOVIN_full_b03.a2m", "CADH1_HUMAN_full_b02.a2m", "EVcouplings", "NOT RUN"):
        assert name in text, name
    frame, _ = claims_frame({"potts_proteins": tmp_path / target}, yaml.safe_load(config.read_text()))
    private = frame[frame["claim"].str.contains("OPSD_BOVIN|CADH1_HUMAN")]
    assert len(private) and (private["status"] == NOT_RUN).all(), frame[["claim", "status"]]
