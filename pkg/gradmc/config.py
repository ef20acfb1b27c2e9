"""Load and validate the science configuration against ``workflow/schemas/config.schema.yaml`` (and the
per-experiment schemas: ``schema.yaml`` in each experiment folder ``gradmc/experiments/<name>/``).

An invalid key or value stops a run before any job starts, with a message naming the key, the bad
value and what the schema allows.

Every default has one home: the schema's ``default:`` entries, and they are the papers' settings.
:func:`load_config` fills them in before validating, so code reads ``spec[key]`` and never carries a default
of its own. A config file is an overlay: it holds only what differs from the defaults (``config/paper.yaml``
almost nothing, ``config/quick.yaml`` the laptop sizes), and an experiment section it leaves out runs at the
papers' settings. A file may start from another with ``extends: <file>`` (relative to its own folder), e.g.
``config/decide.yaml`` extends ``config/quick.yaml``. Overlaying (on the defaults or on an extended file)
merges sections key by key (a mapping whose schema default is ``{}``); every other value, lists and
named-entry mappings such as ``data.images`` or ``overrides`` included, is replaced whole.

A stage reads only its part of the config (:func:`select`), and that same part is its rerun trigger in the
pipeline.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

import jsonschema
import yaml

from gradmc import sampler_catalog
from gradmc.errors import ConfigError, MissingInputError, UserError, closest, unknown_name
from gradmc.specs.ebm_samplers import SAMPLERS as _EBM_SAMPLERS

__all__ = ["ConfigError", "ConfigPart", "EXPERIMENTS_DIR", "SCHEMA_PATH", "fill_defaults", "for_dataset", "load_config",
           "read_config", "schema_parts", "select", "validate_config"]

SCHEMA_PATH = Path(__file__).resolve().parents[2] / "workflow" / "schemas" / "config.schema.yaml"
#: The experiment folders (:mod:`gradmc.registry`), each with its section's ``schema.yaml``; found by path, never
#: imported (the config check sits below the experiments).
EXPERIMENTS_DIR = Path(__file__).resolve().parent / "experiments"


def schema_parts() -> dict[str, Path]:
    """Top-level config key -> the file holding its schema: ``gradmc/experiments/<key>/schema.yaml`` of every
    experiment folder (standard experiments and hand-written stages alike), sorted by key."""
    return dict(sorted((path.parent.name, path) for path in EXPERIMENTS_DIR.glob("*/schema.yaml")))


def _load_schema() -> dict:
    """The main schema plus one schema per experiment family (:func:`schema_parts`).

    Each part is the schema of the top-level config key named like its folder (or file); it is added to
    ``properties`` and to ``required`` (quick, paper and smoke are the same DAG, so every config has
    every experiment: a section a config file leaves out is filled from its ``default: {}``, the papers'
    settings).
    """
    if not SCHEMA_PATH.exists():
        raise FileNotFoundError(f"config schema not found at {SCHEMA_PATH}; run gradmc from its source checkout")
    schema = yaml.safe_load(SCHEMA_PATH.read_text())
    for key, part in schema_parts().items():
        schema["properties"][key] = yaml.safe_load(part.read_text())
        schema["required"].append(key)
    _sampler_names(schema)
    return schema


def _sampler_names(schema: dict) -> None:
    """Set the ``binary_sampler`` pattern from the sampler catalog: every declared name (plugins too), with
    optional ``(key=value, ...)`` options, or a group (:data:`gradmc.sampler_catalog.GROUPS`)."""
    pattern = sampler_catalog.name_pattern()
    groups = "|".join(sampler_catalog.GROUPS)
    schema["$defs"]["binary_sampler"]["pattern"] = pattern.replace("^(", f"^({groups}|", 1)
    schema["$defs"]["binary_sampler"]["x-sampler"] = True  # _describe names the samplers, never the pattern


def _sampler_lists(schema: dict, config, path: tuple = ()):
    """(dotted key, list, the list's schema) of every list of ``binary_sampler`` names in ``config``
    (schema-directed)."""
    if not isinstance(schema, dict) or not isinstance(config, dict):
        return
    for key, sub in schema.get("properties", {}).items():
        if key not in config or not isinstance(sub, dict):
            continue
        if sub.get("type") == "array" and sub.get("items", {}).get("$ref") == "#/$defs/binary_sampler":
            yield ".".join((*path, key)), config[key], sub
        else:
            yield from _sampler_lists(sub, config[key], (*path, key))


def _expand_samplers(schema: dict, config: dict) -> list[str]:
    """Check every sampler reference against its kernel's declaration and replace the groups ``paper``,
    ``later`` and ``plugins`` by their samplers (in place); the errors, naming the key. The experiment builds each
    with ``make_sampler(name)`` and no other options, so a required option must be in the name, and a kernel that
    needs a target method needs a list whose schema names it in ``x-target-methods`` (the FHMM's ``blocks``)."""
    errors = []
    for key, names, sub in list(_sampler_lists(schema, config)):
        if not isinstance(names, list):
            continue  # the schema names the type error
        expanded, bad = [], False
        methods = sub.get("x-target-methods", ())
        for i, entry in enumerate(names):
            try:
                new = [n for n in sampler_catalog.expand([entry], "binary") if n not in expanded]
                for name in new:
                    sampler_catalog.check_buildable(name, "binary", methods)
                expanded += new
            except UserError as err:
                errors.append(f"config key '{key}.{i}': {err}")
                bad = True
        if not bad:
            names[:] = expanded
    return errors


def _fill(schema: dict, instance) -> None:
    """Fill the ``default:`` of every property missing from ``instance`` (in place), recursing into the
    objects present. Only plain ``properties`` are followed: a default never hides inside a combinator."""
    if not isinstance(instance, dict) or not isinstance(schema, dict):
        return
    for key, sub in schema.get("properties", {}).items():
        if key not in instance and isinstance(sub, dict) and "default" in sub:
            instance[key] = copy.deepcopy(sub["default"])
        if key in instance:
            _fill(sub, instance[key])
    extra = schema.get("additionalProperties")
    if isinstance(extra, dict):  # a mapping of named entries (e.g. data.images.<dataset>) shares one schema
        for key, value in instance.items():
            if key not in schema.get("properties", {}):
                _fill(extra, value)


def _is_section(schema) -> bool:
    """Whether a schema node is a section: an object of named settings whose default is ``{}`` (each setting
    carrying its own default), merged key by key by an overlay rather than replaced."""
    return isinstance(schema, dict) and "properties" in schema and schema.get("default", None) == {}


def _overlay(schema: dict, base: dict, over: dict) -> dict:
    """``over`` put over ``base`` (a new dict): sections merge key by key, every other value is replaced."""
    out = copy.deepcopy(base)
    props = schema.get("properties", {}) if isinstance(schema, dict) else {}
    for key, value in over.items():
        sub = props.get(key)
        if _is_section(sub) and isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = _overlay(sub, out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def fill_defaults(config: dict) -> dict:
    """A deep copy of ``config`` with the schema's defaults filled in for every key left out.

    Works on a partial config too (only the sections present are filled), so tests can build one section by
    hand and get what :func:`load_config` would give. Nothing is validated here.
    """
    config = copy.deepcopy(config)
    _fill(_load_schema(), config)
    return config


class ConfigPart(dict):
    """The part of a config a stage may read (:func:`select`): a dict whose missing top-level keys say so."""

    def __missing__(self, key):
        raise KeyError(f"config key {key!r} is not in this stage's part of the config (it holds {sorted(self)}); "
                       "a stage reads only the keys its module declares: add it to META config_keys (or stages)")


def select(config: dict, keys) -> ConfigPart:
    """The part of ``config`` at the dotted ``keys``, nested as in ``config``.

    ``select(c, ["kmc_gpc.benchmark", "device"])`` is ``{"kmc_gpc": {"benchmark": ...}, "device": ...}``. A
    stage that reads only its selection cannot depend on a key that does not trigger its rerun.

    Raises:
        KeyError: a key that ``config`` lacks (naming it).
    """
    out = ConfigPart()
    for key in keys:
        parts = key.split(".")
        node, target = config, out
        for i, part in enumerate(parts):
            if not isinstance(node, dict) or part not in node:
                raise KeyError(f"config key {'.'.join(parts[:i + 1])!r} is not in the config")
            node = node[part]
            if i < len(parts) - 1:
                target = target.setdefault(part, {})
        target[parts[-1]] = copy.deepcopy(node)
    return out


def _unknown_keys(error: jsonschema.ValidationError) -> dict[str, str | None]:
    """Unknown key -> the allowed key it most likely misspells (or None), of an ``additionalProperties`` error."""
    schema = error.schema if isinstance(error.schema, dict) else {}
    allowed = schema.get("properties", {})
    instance = error.instance if isinstance(error.instance, dict) else {}
    return {str(k): closest(str(k), allowed) for k in instance if k not in allowed}


def _describe(error: jsonschema.ValidationError, prefix: tuple = ()) -> str:
    key = ".".join(str(p) for p in (*prefix, *error.absolute_path)) or "<top level>"
    schema = error.schema if isinstance(error.schema, dict) else {}
    if error.validator == "additionalProperties":
        where = "at the top level of the config" if key == "<top level>" else f"in '{key}'"
        valid = ", ".join(sorted(schema.get("properties", {})))
        return "; ".join(f"unknown key {name!r} {where}" + (f" — did you mean {guess!r}?" if guess else ";")
                         + f" valid keys: {valid}" for name, guess in _unknown_keys(error).items())
    if error.validator == "required":
        return f"config key '{key}': {error.message}"
    if error.validator == "pattern" and schema.get("x-sampler"):  # unreached while _expand_samplers runs first
        try:
            sampler_catalog.resolve(error.instance)
        except UserError as err:
            return f"config key '{key}': {err}"
    if error.validator == "enum" and isinstance(error.instance, (str, int, float, bool)):
        text = f"config key '{key}': " + unknown_name("value", error.instance, map(str, schema.get("enum", ())))
        return text + (f" ({schema['description'].strip()})" if "description" in schema else "")
    shown = ("description", "items", "properties", "default", "x-target-methods", "x-sampler")
    expected = {k: v for k, v in schema.items() if k not in shown}
    text = f"config key '{key}': got {error.instance!r}, expected {json.dumps(expected)}"
    if "description" in schema:
        text += f" ({schema['description'].strip()})"
    if error.validator == "type" and isinstance(error.instance, str) and _looks_numeric(error.instance):
        text += (f"; YAML reads {error.instance} as a string: write numbers in exponent form with a decimal "
                 f"point and a signed exponent, e.g. 1.0e-3")
    return text


def _misspelt_required(error: jsonschema.ValidationError, meant: set) -> bool:
    """Whether ``error`` is a missing required key that an unknown key beside it misspells (``meant``: (path,
    allowed key) of each unknown key), so that the unknown key's message already says it."""
    if error.validator != "required" or not isinstance(error.instance, dict):
        return False
    # one error per missing key; jsonschema names it only in the message
    missing = [k for k in error.validator_value if k not in error.instance and error.message.startswith(repr(k))]
    return bool(missing) and all((tuple(error.absolute_path), k) in meant for k in missing)


def _looks_numeric(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def for_dataset(section: dict, dataset: str) -> dict:
    """A config section's settings for one data set: ``section`` with the entries of
    ``section["overrides"][dataset]`` (if any) put over it, e.g. fewer EBM iterations for the costlier
    256-level Frey faces; the ``overrides`` key itself is dropped. Stages, the plan, the figures and the
    pipeline's rule messages all read per-data-set settings through this one rule."""
    out = {k: v for k, v in section.items() if k != "overrides"}
    out.update((section.get("overrides") or {}).get(dataset, {}))
    return out


def _override_errors(schema: dict, config, path: tuple = (), datasets=None) -> list[str]:
    """Every ``overrides`` entry of the config, checked as what a stage reads (:func:`for_dataset`): the
    merged settings against the section's own schema, and the data set against the experiment's
    ``datasets`` (a misspelt name would otherwise be ignored without a word)."""
    if not isinstance(config, dict):
        return []
    errors = []
    datasets = config.get("datasets", datasets)
    props = schema.get("properties", {})
    if "overrides" in props:
        section = {**schema, "properties": {k: v for k, v in props.items() if k != "overrides"}}
        validator = jsonschema.Draft202012Validator(section)
        for dataset in config.get("overrides") or {}:
            where = (*path, "overrides", dataset)
            if datasets is not None and dataset not in datasets:
                errors.append(f"config key '{'.'.join(where)}': {dataset!r} is not one of this experiment's "
                              f"datasets ({', '.join(map(str, datasets))})")
                continue
            errors += [_describe(e, where) for e in validator.iter_errors(for_dataset(config, dataset))]
    for key, sub in props.items():
        if key != "overrides" and isinstance(sub, dict):
            errors += _override_errors(sub, config.get(key), (*path, key), datasets)
    return errors


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
    ebm = config.get("ebm", {})
    others = [n for n in ebm.get("samplers", []) if n != "GWG"]
    if ebm.get("equal_time") and others and "GWG" not in ebm.get("samplers", []):
        errors.append(f"config keys 'ebm.samplers' and 'ebm.equal_time': equal_time gives {', '.join(others)} the "
                      "GWG run's training time, but GWG is not listed; add GWG to ebm.samplers or set "
                      "equal_time: false")
    for name in ebm.get("samplers", []):
        if name not in _EBM_SAMPLERS:
            errors.append(f"config key 'ebm.samplers': {name!r} is not an EBM training sampler; expected some of "
                          f"{', '.join(_EBM_SAMPLERS)}")
    return errors


def validate_config(config: dict) -> dict:
    """Fill in the schema's defaults (in place), validate ``config`` against the schema and the cross-key
    constraints; return it.

    Raises:
        ConfigError: naming every unknown key first (with the allowed key it most likely misspells: a misspelt
            key otherwise shows up as a missing required one), then the most relevant other violation (key,
            value, expectation); a required key that an unknown key misspells is not named twice.
    """
    if isinstance(config, dict) and isinstance(config.get("plugins"), list):
        sampler_catalog.load_plugins(config["plugins"])
    schema = _load_schema()
    _fill(schema, config)
    named = _expand_samplers(schema, config)  # before the schema: its messages name the known samplers
    if named:
        raise ConfigError("; ".join(named))
    validator = jsonschema.Draft202012Validator(schema)
    errors = sorted(validator.iter_errors(config), key=lambda e: (len(list(e.absolute_path)), e.message))
    if errors:
        unknown = [e for e in errors if e.validator == "additionalProperties"]
        lines = [_describe(e) for e in unknown]
        meant = {(tuple(e.absolute_path), guess) for e in unknown for guess in _unknown_keys(e).values()}
        rest = [e for e in errors if e.validator != "additionalProperties" and not _misspelt_required(e, meant)]
        if rest:
            lines.append(_describe(jsonschema.exceptions.best_match(rest)))
        raise ConfigError("; ".join(lines))
    semantic = _semantic_errors(config) + _override_errors(schema, config)
    if semantic:
        raise ConfigError("; ".join(semantic))
    return config


def _read_yaml(path: Path) -> dict:
    """The mapping in YAML file ``path`` (for :func:`read_config`)."""
    if not path.exists():
        raise MissingInputError(f"config file {path} not found (expected e.g. config/quick.yaml)")
    if not path.is_file():
        raise ConfigError(f"config path {path} is not a file (expected a YAML file, e.g. config/quick.yaml)")
    try:
        config = yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as err:
        raise ConfigError(f"config file {path} is not valid YAML: {err}") from None
    except UnicodeDecodeError as err:
        raise ConfigError(f"config file {path} is not UTF-8 text ({err.reason} at byte {err.start}); expected a "
                          "YAML file, e.g. config/quick.yaml") from None
    if config is None:  # no text, only comments, or a lone null / ---
        raise ConfigError(f"config file {path} is empty (no settings, at most comments); expected a YAML mapping "
                          "such as 'name: mine' and 'device: cpu', or 'extends: quick.yaml' and the settings that "
                          "differ from it (see config/quick.yaml)")
    if not isinstance(config, dict):
        raise ConfigError(f"config file {path} must hold a mapping, got {type(config).__name__}")
    return config


def read_config(path: str | Path, _seen: tuple = ()) -> dict:
    """The settings config file ``path`` gives: the file with the file it ``extends:`` (if any, recursively, a
    path relative to the file's folder) merged under it as :func:`load_config` merges the defaults (sections key
    by key, other values replaced). The ``extends`` key is dropped; no defaults are filled, nothing validated.

    Raises:
        MissingInputError: (a FileNotFoundError) if the file, or a file it extends, does not exist.
        ConfigError: if a file is not YAML (naming the file and the line) or not a mapping, or ``extends`` is
            not a file name or names a file already in the chain.
    """
    if not str(path).strip():
        raise ConfigError("config path is empty (expected a YAML file, e.g. config/quick.yaml)")
    path = Path(path)
    config = _read_yaml(path)
    if "extends" not in config:
        return config
    base = config.pop("extends")
    if not isinstance(base, str) or not base.strip():
        raise ConfigError(f"config key 'extends' in {path}: got {base!r}, expected the file name of the config this "
                          "one overlays, relative to its folder (e.g. quick.yaml)")
    base_path = path.parent / base
    seen = (*_seen, path.resolve())
    if base_path.resolve() in seen:
        raise ConfigError(f"config key 'extends' in {path}: {base} is already in the chain of extended files "
                          f"({' -> '.join(str(p) for p in seen)}); a config cannot extend itself")
    if not base_path.exists():
        raise MissingInputError(f"config key 'extends' in {path}: {base_path} not found (expected a config file "
                                "beside it, e.g. quick.yaml)")
    return _overlay(_load_schema(), read_config(base_path, seen), config)


def load_config(path: str | Path) -> dict:
    """Read a YAML config file (with the file it ``extends:``, :func:`read_config`), fill the schema's defaults
    and validate it.

    Raises:
        MissingInputError: (a FileNotFoundError) if the file, or a file it extends, does not exist.
        ConfigError: if it is not YAML (naming the file and the line) or not a valid config.
    """
    return validate_config(read_config(path))
