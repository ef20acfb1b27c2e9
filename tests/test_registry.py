"""The experiment registry (gradmc.registry): discovery, META validation, and the CLI and collect built on it."""

from __future__ import annotations

import ast
import sys
import textwrap
from pathlib import Path

import pandas as pd
import pytest

from gradmc import registry
from gradmc.cli import build_parser
from gradmc.experiments import standard

EXPERIMENTS = Path(registry.EXPERIMENTS_DIR)


def _defines(path: Path, name: str) -> bool:
    tree = ast.parse(path.read_text())
    return any(isinstance(n, ast.FunctionDef) and n.name == name for n in tree.body)


def test_every_module_with_shards_is_a_registered_experiment():
    with_shards = {p.parent.name for p in EXPERIMENTS.glob("*/__init__.py") if _defines(p, "shards")}
    assert with_shards == set(registry.experiments())
    assert [p.name for p in EXPERIMENTS.glob("*.py") if _defines(p, "shards")] == []  # no single-module experiment


def test_no_experiment_module_keeps_a_collect():
    assert [p.name for p in EXPERIMENTS.glob("**/*.py") if p.stem != "standard" and _defines(p, "collect")] == []


def test_registered_experiments_have_their_modules():
    for name, exp in registry.experiments().items():
        assert exp.folder == EXPERIMENTS / name
        assert _defines(EXPERIMENTS / name / "__init__.py", "run"), name
        if exp.figure:
            figure = EXPERIMENTS / name / "figure.py"
            assert figure.is_file() and _defines(figure, "figure"), name
            assert exp.caption_path == EXPERIMENTS / name / "caption.rst" and exp.caption_path.is_file(), name


def test_claims_live_in_the_experiment_folders():
    """Every experiment's claims, the hand-written stages' included, are its folder's claims.py, and its figure
    and schema sit beside them; gradmc.claims and gradmc.figures keep only what several experiments share."""
    from gradmc.claims.base import claims_modules
    from gradmc.config import schema_parts

    modules = claims_modules()
    assert set(registry.experiments()) <= {p.parent.name for p in EXPERIMENTS.glob("*/__init__.py")}
    assert modules == {p.parent.name: f"gradmc.experiments.{p.parent.name}.claims"
                       for p in EXPERIMENTS.glob("*/claims.py")}
    assert {"ebm", "sampler_cost", "text_ebm"} <= set(modules)
    assert {"ebm", "text_ebm"} <= set(schema_parts())
    package = EXPERIMENTS.parent
    assert {p.stem for p in (package / "claims").glob("*.py")} == {"__init__", "ais", "base", "stats"}
    assert {p.stem for p in (package / "figures").glob("*.py")} == {"__init__", "claims_dashboard", "leaderboard",
                                                                     "style"}


def test_hand_written_stages_declare_their_config_keys():
    from gradmc.cli.parser import HAND_WRITTEN_STAGES

    for stage in HAND_WRITTEN_STAGES:
        assert registry.stage_config_keys(stage)[-2:] == registry.ALWAYS_KEYS
    with pytest.raises(KeyError, match="declared: "):
        registry.stage_config_keys("no_such_stage")


def test_every_declared_config_key_exists_in_every_config():
    from gradmc.config import load_config, select

    for path in sorted((EXPERIMENTS.parents[2] / "config").glob("*.yaml")):
        config = load_config(path)
        for exp in registry.experiments().values():
            select(config, exp.job_keys)
        for stage in registry._scan()[1]:
            select(config, registry.stage_config_keys(stage))


def _scan(tmp_path: Path, source: str):
    (tmp_path / "toy").mkdir(parents=True, exist_ok=True)
    (tmp_path / "toy" / "__init__.py").write_text(textwrap.dedent(source))
    registry._scan.cache_clear()
    try:
        return registry._scan(tmp_path)
    finally:
        registry._scan.cache_clear()


def test_meta_is_read_without_importing_the_module(tmp_path):
    found, _ = _scan(tmp_path, """
        raise RuntimeError("importing this module is an error")
        META = {"title": "Toy", "message": "toy {n}", "sort_by": ["seed"], "figure": "toy_fig",
                "category": "GWG paper", "inputs": {"data": "toy/data.npz"}}
    """)
    toy = found["toy"]
    assert (toy.output, toy.config_keys, toy.job_keys) == ("toy/metrics.parquet", ("toy",),
                                                         ("toy", "device", "gpus_per_shard"))
    assert toy.inputs == {"data": "toy/data.npz"} and toy.module == "gradmc.experiments.toy"
    assert "toy" not in sys.modules


@pytest.mark.parametrize("meta, message", [
    ('{"title": "t", "message": "m"}', "missing required key 'sort_by'"),
    ('{"title": "t", "message": "m", "sort_by": "seed"}', "'sort_by'.* must be a list"),
    ('{"title": "t", "message": "m", "sort_by": [], "colour": "red"}', r"unknown keys \['colour'\]"),
    ('{"title": "t", "message": "m", "sort_by": [], "figure": "f"}', "needs its report 'category'"),
    ('{"title": "t", "message": "m", "sort_by": [], "inputs": {"out": "x"}}', r"may not be named \['out'\]"),
    ('dict(title="t")', "META must be a literal"),
    ('{["a"]: 1}', "META must be a literal"),
    ('{"title": "t", "message": "m", "sort_by": [], "inputs": {"help": "x"}}', r"may not be named \['help'\]"),
    ('{"title": "t", "message": "m", "sort_by": [1]}', "must be a list of strings"),
    ('{"stages": {"zz": "zz_section"}}', "must map each stage name to a list of dotted config keys"),
    ('{"stages": ["zz"]}', "must map each stage name"),
    ('{"title": "t", "message": "m", "sort_by": [], "cpu_only": "yes"}', "'cpu_only'.* must be a bool"),
])
def test_malformed_meta_is_named(tmp_path, meta, message):
    with pytest.raises(registry.RegistryError, match=message):
        _scan(tmp_path, f"META = {meta}\n")


def test_annotated_meta_counts_and_a_module_without_meta_is_named(tmp_path):
    found, _ = _scan(tmp_path, 'META: dict = {"title": "t", "message": "m", "sort_by": ["seed"]}\n')
    assert list(found) == ["toy"]
    with pytest.raises(registry.RegistryError, match="defines shards\\(\\) and run\\(\\) but no META"):
        _scan(tmp_path, "def shards(config, inputs):\n    return []\n\n\ndef run(shard):\n    return None\n")


def test_a_registry_error_is_a_one_line_user_error():
    from gradmc.errors import UserError

    assert issubclass(registry.RegistryError, UserError)


def test_a_stage_reading_an_undeclared_key_is_told_so():
    from gradmc.config import load_config

    part = standard.job_config("kmc_banana", load_config(EXPERIMENTS.parents[2] / "config" / "smoke.yaml"))
    with pytest.raises(KeyError, match="add it to META config_keys"):
        part["kmc_gpc"]


def test_cli_offers_a_run_and_figure_for_every_experiment():
    parser = build_parser()
    for name, exp in registry.experiments().items():
        argv = ["run", name, "--config", "c.yaml", "--out", "o.parquet"]
        argv += [a for key in exp.inputs for a in (f"--{key}", f"{key}.file")]
        args = parser.parse_args(argv)
        assert args.experiment == name and all(getattr(args, f"input_{k}") == f"{k}.file" for k in exp.inputs)
        if exp.figure:
            fig = parser.parse_args(["figure", name, "--metrics", "m", "--out", "o", "--table-out", "t"])
            assert fig.figure == name


def test_collect_concatenates_finalizes_and_sorts(monkeypatch):
    seen = {}

    class Toy:
        @staticmethod
        def finalize(df, inputs):
            seen["inputs"] = inputs
            return pd.concat([df, pd.DataFrame({"seed": [0], "metric": ["pooled"], "value": [9.0]})],
                             ignore_index=True)

    entry = registry.Experiment(name="toy", title="t", message="m", sort_by=("seed", "metric"))
    monkeypatch.setattr(standard, "standard", lambda name: entry)
    monkeypatch.setattr(standard.importlib, "import_module", lambda name: Toy)
    parts = [pd.DataFrame({"seed": [2, 1], "metric": ["b", "a"], "value": [1.0, 2.0]}),
             pd.DataFrame({"seed": [1], "metric": ["c"], "value": [3.0]})]
    df = standard.collect("toy", parts, {"data": "d.npz"})
    assert seen["inputs"] == {"data": "d.npz"}
    assert list(zip(df["seed"], df["metric"], strict=True)) == [(0, "pooled"), (1, "a"), (1, "c"), (2, "b")]
    assert list(df.index) == [0, 1, 2, 3]


def test_job_config_holds_only_the_declared_keys():
    from gradmc.config import load_config

    config = load_config(EXPERIMENTS.parents[2] / "config" / "smoke.yaml")
    for name, exp in registry.experiments().items():
        part = standard.job_config(name, config)
        assert set(part) == {k.split(".")[0] for k in exp.job_keys}


def test_a_cpu_only_job_gets_the_cpu_whatever_the_config_says(tmp_path):
    """META cpu_only: the job's part of a cuda config says device cpu and gpus_per_shard 0 (so its shards ask Ray
    for no GPU); without it the part keeps the config's device; both copy, never alter, the config."""
    found, _ = _scan(tmp_path, 'META = {"title": "t", "message": "m", "sort_by": [], "cpu_only": True}\n')
    config = {"toy": {"n": 3}, "device": "cuda", "gpus_per_shard": 0.25}
    assert found["toy"].job_config(config) == {"toy": {"n": 3}, "device": "cpu", "gpus_per_shard": 0}
    (tmp_path / "plain").mkdir()
    plain, _ = _scan(tmp_path / "plain", 'META = {"title": "t", "message": "m", "sort_by": []}\n')
    assert plain["toy"].job_config(config) == config
    assert config == {"toy": {"n": 3}, "device": "cuda", "gpus_per_shard": 0.25}


def test_a_standard_experiment_in_a_single_module_is_refused(tmp_path):
    """A standard META in ``experiments/<name>.py`` (not a folder) names the folder it belongs in."""
    (tmp_path / "toy.py").write_text('META = {"title": "t", "message": "m", "sort_by": []}\n')
    registry._scan.cache_clear()
    try:
        with pytest.raises(registry.RegistryError, match=r"is a folder, not a single module: move toy.py to "
                                                         r"toy/__init__.py"):
            registry._scan(tmp_path)
    finally:
        registry._scan.cache_clear()
