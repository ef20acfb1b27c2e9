"""An experiment is one folder: adding ``pkg/gradmc/experiments/<name>/`` (run code with its META, figure, claims,
config schema, caption) to a checkout, and nothing else, gives the registry, the config loader, the claims, the CLI
and the Snakemake DAG the new experiment; a config sets its sizes in one line."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]

TOY = '''"""A toy experiment: one shard per seed, each a loop of num_steps steps."""

from dataclasses import dataclass

import pandas as pd

META = {
    "title": "A toy experiment",
    "message": "Toy: {num_steps} steps",
    "sort_by": ["seed"],
    "figure": "toy_figure",
    "category": "GWG paper",
    "cpu_only": True,
}


@dataclass(frozen=True)
class Shard:
    seed: int
    num_steps: int


def shards(config, inputs):
    return [Shard(seed, config["toy"]["num_steps"]) for seed in config["toy"]["seeds"]]


def run(shard):
    return pd.DataFrame({"seed": [shard.seed], "metric": ["steps"], "value": [float(shard.num_steps)]})
'''

SCHEMA = """type: object
default: {}
additionalProperties: false
description: A toy experiment.
properties:
  num_steps: {type: integer, minimum: 1, default: 100, description: steps per shard}
  seeds: {type: array, items: {type: integer}, default: [0, 1], description: one shard per seed}
"""

FIGURE = '''"""The toy figure (not drawn here)."""


def figure(*args, **kwargs):
    raise NotImplementedError
'''

CLAIMS = '''"""The toy claims (none)."""


def claims(df, config=None):
    return []
'''


@pytest.fixture(scope="module")
def checkout(tmp_path_factory) -> Path:
    """A checkout of this repository whose package has one more experiment folder, ``toy``, and no other edit."""
    root = tmp_path_factory.mktemp("checkout")
    shutil.copytree(REPO / "pkg" / "gradmc", root / "pkg" / "gradmc", ignore=shutil.ignore_patterns("__pycache__"))
    toy = root / "pkg" / "gradmc" / "experiments" / "toy"
    toy.mkdir()
    for name, text in (("__init__.py", TOY), ("schema.yaml", SCHEMA), ("figure.py", FIGURE),
                       ("claims.py", CLAIMS), ("caption.rst", "A toy figure.\n")):
        (toy / name).write_text(text, encoding="utf-8")
    for folder in ("workflow", "config"):
        (root / folder).symlink_to(REPO / folder)
    shutil.copy(REPO / "Snakefile", root / "Snakefile")
    # the one config line: the toy's sizes in the smoke config
    (root / "toy.yaml").write_text(f"extends: {REPO / 'config' / 'smoke.yaml'}\ntoy: {{num_steps: 5}}\n")
    return root


def _env(root: Path) -> dict:
    return {**os.environ, "PYTHONPATH": str(root / "pkg"), "GRADMC_DATA_DIR": str(root / "data"),
            "OMP_NUM_THREADS": "1"}


def _python(root: Path, code: str):
    done = subprocess.run([sys.executable, "-c", code], cwd=root, env=_env(root), capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_the_registry_the_config_and_the_claims_find_the_folder(checkout):
    found = _python(checkout, """
import json
from gradmc import registry
from gradmc.claims.base import claims_modules
from gradmc.config import load_config, schema_parts
toy = registry.standard("toy")
config = load_config("toy.yaml")
print(json.dumps({"module": toy.module, "figure": toy.figure_module, "caption": str(toy.caption_path),
                  "schema": str(schema_parts()["toy"]), "claims": claims_modules()["toy"],
                  "section": config["toy"], "part": toy.job_config(config)}))
""")
    toy = checkout / "pkg" / "gradmc" / "experiments" / "toy"
    assert (found["module"], found["figure"], found["claims"]) == (
        "gradmc.experiments.toy", "gradmc.experiments.toy.figure", "gradmc.experiments.toy.claims")
    assert (found["caption"], found["schema"]) == (str(toy / "caption.rst"), str(toy / "schema.yaml"))
    assert found["section"] == {"num_steps": 5, "seeds": [0, 1]}  # the config's line over the schema's defaults
    assert found["part"] == {"toy": {"num_steps": 5, "seeds": [0, 1]}, "device": "cpu", "gpus_per_shard": 0}


def test_the_schema_checks_the_new_section(checkout, tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text(f"extends: {REPO / 'config' / 'smoke.yaml'}\ntoy: {{num_steps: 0}}\n")
    done = subprocess.run([sys.executable, "-m", "gradmc.cli", "run", "toy", "--config", str(bad), "--out",
                           str(tmp_path / "m.parquet")], cwd=checkout, env=_env(checkout), capture_output=True,
                          text=True, timeout=300)
    assert done.returncode != 0 and "toy.num_steps" in done.stderr, done.stderr


def test_the_cli_offers_its_run_and_figure(checkout):
    for command in (["run", "toy", "--help"], ["figure", "toy", "--help"]):
        done = subprocess.run([sys.executable, "-m", "gradmc.cli", *command], cwd=checkout, env=_env(checkout),
                              capture_output=True, text=True, timeout=300)
        assert done.returncode == 0 and "A toy experiment" in done.stdout, done.stderr


def test_the_pipeline_runs_it_its_figure_and_its_claims(checkout):
    done = subprocess.run([sys.executable, "-m", "snakemake", "-n", "-p", "--configfile", "toy.yaml", "--cores", "2"],
                          cwd=checkout, env=_env(checkout), capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr + done.stdout
    out = done.stdout + done.stderr
    stats = out[out.index("Job stats:"):]
    jobs = {line.split()[0] for line in stats.splitlines()[3:] if line.strip() and not line.startswith("total")}
    assert {"toy", "figure_toy"} <= jobs
    assert "Toy: 5 steps" in out  # the job message, formatted with the config's section
    assert "gradmc run toy --config" in out and "results/smoke/toy/metrics.parquet" in out
    assert "results/smoke/figures/toy_figure.png" in out
    assert "toy=results/smoke/toy/metrics.parquet" in out  # the claims read its metrics
