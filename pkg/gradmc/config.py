"""Load and validate the science configuration against ``workflow/schemas/config.schema.yaml``.

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
    if not SCHEMA_PATH.exists():
        raise FileNotFoundError(f"config schema not found at {SCHEMA_PATH}; run gradmc from its source checkout")
    return yaml.safe_load(SCHEMA_PATH.read_text())


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
    return text


def validate_config(config: dict) -> dict:
    """Validate ``config`` in place against the schema; return it.

    Raises:
        ConfigError: for the first (most relevant) violation, naming the key, value and expectation.
    """
    validator = jsonschema.Draft202012Validator(_load_schema())
    errors = sorted(validator.iter_errors(config), key=lambda e: (len(list(e.absolute_path)), e.message))
    if errors:
        raise ConfigError(_describe(jsonschema.exceptions.best_match(errors)))
    return config


def load_config(path: str | Path) -> dict:
    """Read a YAML config file and validate it.

    Raises:
        FileNotFoundError: if the file does not exist; ConfigError: if it is invalid.
    """
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"config file {path} not found (expected e.g. config/quick.yaml)")
    config = yaml.safe_load(path.read_text()) or {}
    if not isinstance(config, dict):
        raise ConfigError(f"config file {path} must hold a mapping, got {type(config).__name__}")
    return validate_config(config)
