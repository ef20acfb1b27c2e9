"""Load and validate the science configuration against ``workflow/schemas/config.schema.yaml`` (and the
per-experiment schemas in ``workflow/schemas/experiments/``).

An invalid key or value stops a run before any job starts, with a message naming the key, the bad
value and what the schema allows.
"""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import yaml

__all__ = ["ConfigError", "SCHEMA_PATH", "load_config", "validate_config"]

SCHEMA_PATH = Path(__file__).resolve().parents[2] / "workflow" / "schemas" / "config.schema.yaml"


class ConfigError(ValueError):
    """A configuration value that the schema rejects; the message names key, value and expectation."""


def _load_schema() -> dict:
    """The main schema plus one ``workflow/schemas/experiments/<key>.yaml`` per experiment family.

    Each experiment file is the schema of the top-level config key named like the file; it is added to
    ``properties`` and to ``required`` (quick, paper and smoke are the same DAG, so every config has
    every experiment).
    """
    if not SCHEMA_PATH.exists():
        raise FileNotFoundError(f"config schema not found at {SCHEMA_PATH}; run gradmc from its source checkout")
    schema = yaml.safe_load(SCHEMA_PATH.read_text())
    for part in sorted((SCHEMA_PATH.parent / "experiments").glob("*.yaml")):
        schema["properties"][part.stem] = yaml.safe_load(part.read_text())
        schema["required"].append(part.stem)
    return schema


def _describe(error: jsonschema.ValidationError) -> str:
    key = ".".join(str(p) for p in error.absolute_path) or "<top level>"
    schema = error.schema if isinstance(error.schema, dict) else {}
    if error.validator == "additionalProperties":
        allowed = sorted(schema.get("properties", {}))
        return f"config key '{key}': {error.message}; allowed keys: {', '.join(allowed)}"
    if error.validator == "required":
        return f"config key '{key}': {error.message}"
    expected = {k: v for k, v in schema.items() if k not in ("description", "items", "properties")}
    text = f"config key '{key}': got {error.instance!r}, expected {json.dumps(expected)}"
    if "description" in schema:
        text += f" ({schema['description'].strip()})"
    if error.validator == "type" and isinstance(error.instance, str) and _looks_numeric(error.instance):
        text += (f"; YAML reads {error.instance} as a string: write numbers in exponent form with a decimal "
                 f"point and a signed exponent, e.g. 1.0e-3")
    return text


def _looks_numeric(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _semantic_errors(config: dict) -> list[str]:
    """Constraints between keys that JSON schema cannot express."""
    errors = []
    if config.get("device") == "cuda" and not config.get("gpus_per_shard", 0) > 0:
        errors.append("config key 'gpus_per_shard': device is cuda, so each shard must request a GPU share "
                      "> 0 (e.g. 0.25); use device: cpu to run without GPUs")
    spec = config.get("rbm_sampling", {})
    if "num_steps" in spec and "burn_in_fraction" in spec:
        kept = spec["num_steps"] - int(spec["burn_in_fraction"] * spec["num_steps"])
        if kept < 4:
            errors.append(f"config keys 'rbm_sampling.num_steps' and 'burn_in_fraction': only {kept} steps remain "
                          "after burn-in, ESS needs at least 4; raise num_steps or lower burn_in_fraction")
    return errors


def validate_config(config: dict) -> dict:
    """Validate ``config`` against the schema and the cross-key constraints; return it.

    Raises:
        ConfigError: naming the most relevant violation (key, value, expectation), followed by any
            unknown keys (a misspelt key otherwise shows up only as a missing required one).
    """
    validator = jsonschema.Draft202012Validator(_load_schema())
    errors = sorted(validator.iter_errors(config), key=lambda e: (len(list(e.absolute_path)), e.message))
    if errors:
        best = jsonschema.exceptions.best_match(errors)
        lines = [_describe(best)]
        lines += [_describe(e) for e in errors if e.validator == "additionalProperties" and e is not best]
        raise ConfigError("; ".join(lines))
    semantic = _semantic_errors(config)
    if semantic:
        raise ConfigError("; ".join(semantic))
    return config


def load_config(path: str | Path) -> dict:
    """Read a YAML config file and validate it.

    Raises:
        FileNotFoundError: if the file does not exist; ConfigError: if it is not YAML (naming the file and the
            line) or not a valid config.
    """
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"config file {path} not found (expected e.g. config/quick.yaml)")
    try:
        config = yaml.safe_load(path.read_text()) or {}
    except yaml.YAMLError as err:
        raise ConfigError(f"config file {path} is not valid YAML: {err}") from None
    if not isinstance(config, dict):
        raise ConfigError(f"config file {path} must hold a mapping, got {type(config).__name__}")
    return validate_config(config)
