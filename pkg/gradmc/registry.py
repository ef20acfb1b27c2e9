"""The experiment registry: an experiment is one folder, and declares its metadata once, in a ``META`` literal.

A standard experiment ``<name>`` is the folder ``gradmc/experiments/<name>/``:

``__init__.py``
    The run code, ``shards``, ``run`` (and ``finalize``), with the ``META`` literal below; its module is
    ``gradmc.experiments.<name>``.
``figure.py`` (with a ``figure`` in ``META``)
    ``figure(metrics_path, out_prefix, table_prefix, config_name=...)`` draws the figure and writes its table.
``claims.py`` (optional)
    ``claims(df, config) -> list[Claim]``: the papers' claims on its metrics, with their paper values (where the
    figure needs a paper number too, it imports it from here) and ``QUOTES``, the paper's words each claim tests
    (checked against the stored paper text). An experiment that reproduces no paper has no ``claims.py``.
``schema.yaml`` (optional)
    The JSON schema of the top-level config section ``<name>`` (:mod:`gradmc.config` adds it to the config
    schema); its ``default:`` entries are the papers' settings.
``caption.rst`` (with a ``figure``)
    The report caption of the figure and its table.

Nothing else names it: the registry discovers the folders and reads each ``__init__.py``'s ``META = {...}`` with
:func:`ast.literal_eval`, without importing the module: the Snakefile (at parse time) and ``gradmc --help``
get every experiment's name, figure and config keys without importing torch. The CLI builds its ``run`` and
``figure`` subcommands from it, ``workflow/rules/experiments.smk`` generates the run and figure rules of
every standard experiment from it, and ``gradmc plan`` its compute plan; the claims stage finds the folders'
``claims.py`` (:func:`gradmc.claims.base.claims_modules`). Every config runs every experiment (one DAG): a config
that leaves its section out runs it at the schema's defaults, and one line (``<name>: {num_steps: 100}``) runs it
smaller.

Hand-written stages (training, data, EBM, timing) with a figure or claims are folders too (``ebm``, ``text_ebm``,
``sampler_cost``: run code, ``figure.py``, ``claims.py``, ``schema.yaml``, captions); those that are run code
only stay single modules ``gradmc/experiments/<stage>.py``. Their rules are hand-written.

Two kinds of module carry a ``META``:

**Standard experiments** (one Ray wave of shards, a metrics Parquet, optionally a figure and claims). Keys:

``title`` (str, required)
    One line: the paper's figure and what is measured (CLI help, rule docs).
``message`` (str, required)
    The Snakemake job message, ``str.format``-ed with the experiment's config section, e.g.
    ``"Sampling the 8-D banana: {samplers}, n = {n}"``.
``sort_by`` (list of str, required)
    Columns the concatenated shard frames are sorted by (stable sort).
``figure`` (str, optional)
    Stem of the figure and table files, ``results/<config>/figures/<figure>.pdf|.png`` and
    ``results/<config>/tables/<figure>.csv|.md``; ``gradmc.experiments.<name>.figure.figure`` draws them. Without it
    the experiment only produces its Parquet (an input of another experiment).
``category`` (str, required with ``figure``)
    Report category of the figure, e.g. ``"GWG paper"`` or ``"Kernel HMC paper"``.
``extra_figures`` / ``extra_tables`` (list of str, optional)
    Further outputs of the figure step, ``<figure>_<suffix>.pdf|.png`` / ``<figure>_<suffix>.csv|.md``.
``caption`` (str, optional)
    Report caption file in the experiment's folder (default ``caption.rst``).
``inputs`` (dict name -> path, optional)
    Files made by other stages, as paths under ``results/<config>/``; the module gets
    ``shards(config, inputs)`` with ``inputs`` the same names mapped to the real paths.
``output`` (str, optional)
    The metrics path under ``results/<config>/`` (default ``<name>/metrics.parquet``).
``config_keys`` (list of str, optional)
    Dotted config keys the job reads (default ``[<name>]``); ``device`` and ``gpus_per_shard`` are always
    added. The job is given only this part of the config (:func:`gradmc.config.select`), and the pipeline
    reruns it exactly when this part changes.
``uses`` (list of str, optional)
    Further gradmc modules whose code the job runs without importing them statically (code digest).
``cpu_only`` (bool, optional, default False)
    The job computes on the CPU whatever the config's ``device`` says (e.g. Kernel HMC: one-row chains whose
    cost is kernel launches, not arithmetic). Its job is given ``device: cpu`` and ``gpus_per_shard: 0``
    (:meth:`Experiment.job_config`), so its shards ask Ray for no GPU and its SLURM job holds none
    (:func:`gradmc.plan.jobs.holds_gpu`).
``plan`` (dict, optional)
    How ``gradmc plan`` slices and costs the experiment's shards (:func:`gradmc.plan.jobs.job_spec`; without
    it every shard is probed once at the config's full length). Keys, all optional:

    ``unit`` (str): what one unit of work is, in words (``"sampler step (num_chains chains)"``).
    ``units`` (str, list or dict): the units of one shard, read off the shard: ``"num_steps"`` (an attribute;
    a dotted ``"plm.max_iterations"`` reads a key of a dict attribute), ``"num_iterations*K"`` (a product),
    ``["num_burn_in", "num_iterations"]`` (a sum of such terms), or ``{"by": "method", "PLM": ..., "PCD": ...}``
    (the term chosen by the shard's ``method``). Default 1 (a shard is one unit).
    ``lengths`` (dict): dotted config key -> ``[level-1, level-2]`` values; the slice runs a shard at both (the
    second twice as long) and the difference of their times is the cost of the extra units.
    ``schedule`` (dict): dotted config key -> value at both levels (how often something is recorded, which
    must fit inside the short slice).
    ``classes`` (list of str): shard attributes that change the cost of a unit; one probe per distinct class.
    ``pick`` (``"first"`` or ``"last"``): which shard of a class is probed (``last``: its largest size where the
    sweep lists sizes in ascending order). Default ``first``.
    ``note`` (str): a known bias of the slice, printed in the plan.

    A new experiment's rule is in the plan with no edit of :mod:`gradmc.plan`: the plan reads its jobs from
    Snakemake's DAG (:mod:`gradmc.plan.dag`) and these knobs from here.

The module itself offers ``shards(config, inputs) -> list[Shard]``, ``run(shard) -> DataFrame`` and, where the
shard frames need more than concatenation, ``finalize(df, inputs) -> DataFrame``.

**Hand-written stages** (training, data, EBM, timing): ``META = {"stages": {stage: [dotted config keys]}}``,
one entry per ``gradmc run <stage>`` the module implements; their rules stay hand-written. A standard ``META`` in
a single module (not a folder) is refused: the experiment's figure, claims, schema and caption live beside it.
"""

from __future__ import annotations

import ast
import functools
from dataclasses import dataclass, field
from pathlib import Path

from gradmc.errors import UserError

__all__ = ["Experiment", "RegistryError", "EXPERIMENTS_DIR", "experiments", "standard", "stage_config_keys",
           "ALWAYS_KEYS"]

EXPERIMENTS_DIR = Path(__file__).resolve().parent / "experiments"
#: Config keys every job reads (the device its shards run on and the GPU share they request).
ALWAYS_KEYS = ("device", "gpus_per_shard")
#: Names an input may not take: options every standard ``gradmc run`` has.
RESERVED_INPUTS = ("config", "workers", "out", "help")

_REQUIRED = {"title": str, "message": str, "sort_by": list}
_OPTIONAL = {"figure": str, "category": str, "extra_figures": list, "extra_tables": list, "caption": str,
             "inputs": dict, "output": str, "config_keys": list, "uses": list, "cpu_only": bool,
             "plan": dict}


class RegistryError(UserError):
    """A module's ``META`` is malformed; the message names the module, the key and what was expected. A user error
    (one line from ``gradmc``): the researcher extending gradmc made it, and every command reads the registry."""


@dataclass(frozen=True)
class Experiment:
    """The registry entry of one standard experiment (see the module docstring for each field)."""

    name: str
    title: str
    message: str
    sort_by: tuple[str, ...]
    figure: str | None = None
    category: str | None = None
    extra_figures: tuple[str, ...] = ()
    extra_tables: tuple[str, ...] = ()
    caption: str | None = None
    inputs: dict[str, str] = field(default_factory=dict)
    output: str = ""
    config_keys: tuple[str, ...] = ()
    uses: tuple[str, ...] = ()
    cpu_only: bool = False
    plan: dict = field(default_factory=dict)
    folder: Path | None = None

    @property
    def module(self) -> str:
        """Dotted name of the experiment module (the folder's ``__init__.py``: its run code)."""
        return f"gradmc.experiments.{self.name}"

    @property
    def figure_module(self) -> str:
        """Dotted name of the module that draws the figure (``figure.py`` in the folder)."""
        return f"{self.module}.figure"

    @property
    def claims_module(self) -> str:
        """Dotted name of the claims module (``claims.py`` in the folder; it may not exist)."""
        return f"{self.module}.claims"

    @property
    def caption_path(self) -> Path:
        """The report caption file of the figure: ``caption`` (default ``caption.rst``) in the folder."""
        return (self.folder or EXPERIMENTS_DIR / self.name) / (self.caption or "caption.rst")

    @property
    def job_keys(self) -> tuple[str, ...]:
        """The config keys the run job reads: its declared ``config_keys`` plus :data:`ALWAYS_KEYS`."""
        return (*self.config_keys, *ALWAYS_KEYS)

    def job_config(self, config: dict) -> dict:
        """The part of a full, validated ``config`` that the run job reads: the values at :attr:`job_keys`
        (:func:`gradmc.config.select`), with ``device: cpu`` and ``gpus_per_shard: 0`` for a ``cpu_only`` job.
        The pipeline's rerun trigger, the shard cache key and ``gradmc run`` all use this one part.

        Raises:
            KeyError: a declared key that the config lacks.
        """
        from gradmc.config import select

        part = select(config, self.job_keys)
        if self.cpu_only:
            part["device"], part["gpus_per_shard"] = "cpu", 0
        return part


def _literal_meta(path: Path):
    """The value of the module-level ``META = <literal>`` of ``path``, or None if it has none."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    label = f"{path.parent.name}/{path.name}" if path.name == "__init__.py" else path.name
    functions = set()
    for node in tree.body:
        if isinstance(node, ast.FunctionDef):
            functions.add(node.name)
        targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, ast.AnnAssign) \
            else []
        if any(isinstance(t, ast.Name) and t.id == "META" for t in targets) and node.value is not None:
            try:
                return ast.literal_eval(node.value)
            except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
                raise RegistryError(f"{label}: META must be a literal (dict of str, list, dict), so the "
                                    "registry can read it without importing the module") from None
    if {"shards", "run"} <= functions:
        raise RegistryError(f"{label} defines shards() and run() but no META: declare its META (see the "
                            "gradmc.registry docstring) so the CLI and the pipeline find it")
    return None


def _entry(name: str, meta: dict, folder: Path | None = None) -> Experiment:
    where = f"gradmc.experiments.{name}.META"
    if not isinstance(meta, dict):
        raise RegistryError(f"{where} must be a dict, got {type(meta).__name__}")
    unknown = sorted(set(meta) - set(_REQUIRED) - set(_OPTIONAL))
    if unknown:
        raise RegistryError(f"{where}: unknown keys {unknown}; allowed: {sorted({**_REQUIRED, **_OPTIONAL})}")
    for key, kind in {**_REQUIRED, **_OPTIONAL}.items():
        if key in _REQUIRED and key not in meta:
            raise RegistryError(f"{where}: missing required key {key!r}")
        if key in meta and not isinstance(meta[key], kind):
            raise RegistryError(f"{where}[{key!r}] must be a {kind.__name__}, got {meta[key]!r}")
    reserved = sorted(set(meta.get("inputs", {})) & set(RESERVED_INPUTS))
    if reserved:
        raise RegistryError(f"{where}: inputs may not be named {reserved} (options every `gradmc run` has)")
    if "figure" in meta and "category" not in meta:
        raise RegistryError(f"{where}: a module with a 'figure' needs its report 'category'")
    for key in ("sort_by", "extra_figures", "extra_tables", "config_keys", "uses"):
        if key in meta and not all(isinstance(v, str) for v in meta[key]):
            raise RegistryError(f"{where}[{key!r}] must be a list of strings, got {meta[key]!r}")
    if not all(isinstance(k, str) and isinstance(v, str) for k, v in meta.get("inputs", {}).items()):
        raise RegistryError(f"{where}['inputs'] must map input names to paths (strings), got {meta['inputs']!r}")
    _check_plan(where, meta.get("plan", {}))
    values = dict(meta)
    for key in ("sort_by", "extra_figures", "extra_tables", "config_keys", "uses"):
        if key in values:
            values[key] = tuple(values[key])
    values.setdefault("output", f"{name}/metrics.parquet")
    values.setdefault("config_keys", (name,))
    return Experiment(name=name, folder=folder, **values)


_PLAN_KEYS = {"unit": str, "units": (str, list, dict), "lengths": dict, "schedule": dict, "classes": list,
              "pick": str, "note": str}


def _check_plan(where: str, plan: dict) -> None:
    """Refuse a malformed ``META['plan']`` (see the module docstring), naming the key."""
    unknown = sorted(set(plan) - set(_PLAN_KEYS))
    if unknown:
        raise RegistryError(f"{where}['plan']: unknown keys {unknown}; allowed: {sorted(_PLAN_KEYS)}")
    for key, kind in _PLAN_KEYS.items():
        if key in plan and not isinstance(plan[key], kind):
            raise RegistryError(f"{where}['plan'][{key!r}] has the wrong type, got {plan[key]!r}")
    for key, levels in plan.get("lengths", {}).items():
        if not (isinstance(levels, list) and len(levels) == 2):
            raise RegistryError(f"{where}['plan']['lengths'][{key!r}] must be [level-1, level-2], got {levels!r}")
    if plan.get("pick", "first") not in ("first", "last"):
        raise RegistryError(f"{where}['plan']['pick'] must be 'first' or 'last', got {plan['pick']!r}")
    if not all(isinstance(c, str) for c in plan.get("classes", [])):
        raise RegistryError(f"{where}['plan']['classes'] must be a list of shard attribute names")
    units = plan.get("units")
    if isinstance(units, dict) and ("by" not in units or not all(isinstance(v, str) for v in units.values())):
        raise RegistryError(f"{where}['plan']['units'] as a dict needs 'by' (a shard attribute) and one term "
                            f"(a string) per value, got {units!r}")
    if isinstance(units, list) and not all(isinstance(v, str) for v in units):
        raise RegistryError(f"{where}['plan']['units'] as a list must be a list of terms (strings), got {units!r}")


def _stages(where: str, meta: dict, stages: dict[str, tuple[str, ...]]) -> None:
    """Add a hand-written module's ``META["stages"]`` to ``stages`` (in place)."""
    stages_meta = meta["stages"]
    if not isinstance(stages_meta, dict) or not all(
            isinstance(k, list) and all(isinstance(x, str) for x in k) for k in stages_meta.values()):
        raise RegistryError(f"{where}.META['stages'] must map each stage name to a "
                            f"list of dotted config keys, got {stages_meta!r}")
    for stage, keys in stages_meta.items():
        if stage in stages:
            raise RegistryError(f"stage {stage!r} is declared by two modules")
        stages[stage] = tuple(keys)


def _is_stages(meta) -> bool:
    return isinstance(meta, dict) and set(meta) == {"stages"}


@functools.cache
def _scan(directory: Path = EXPERIMENTS_DIR) -> tuple[dict[str, Experiment], dict[str, tuple[str, ...]]]:
    found: dict[str, Experiment] = {}
    stages: dict[str, tuple[str, ...]] = {}
    for path in sorted(directory.glob("*.py")):
        meta = _literal_meta(path)
        if meta is None:
            continue
        where = f"gradmc.experiments.{path.stem}"
        if not _is_stages(meta):
            raise RegistryError(f"{where}: a standard experiment is a folder, not a single module: move "
                                f"{path.name} to {path.stem}/__init__.py, beside its figure.py, claims.py, "
                                "schema.yaml and caption.rst (see the gradmc.registry docstring)")
        _stages(where, meta, stages)
    for folder in sorted(p.parent for p in directory.glob("*/__init__.py")):
        meta = _literal_meta(folder / "__init__.py")
        if meta is None:
            continue
        if _is_stages(meta):
            _stages(f"gradmc.experiments.{folder.name}", meta, stages)
            continue
        found[folder.name] = _entry(folder.name, meta, folder)
    clash = sorted(set(found) & set(stages))
    if clash:
        raise RegistryError(f"{clash} are declared both as experiments and as hand-written stages")
    return found, stages


def experiments() -> dict[str, Experiment]:
    """Every standard experiment, by name (its folder's name), in name order.

    Raises:
        RegistryError: a malformed ``META``.
    """
    return dict(_scan()[0])


def standard(name: str) -> Experiment:
    """The registry entry of experiment ``name``.

    Raises:
        KeyError: not a standard experiment (the message lists the known ones).
    """
    found = _scan()[0]
    if name not in found:
        raise KeyError(f"{name!r} is not a standard experiment; known: {', '.join(found)}")
    return found[name]


def stage_config_keys(stage: str) -> tuple[str, ...]:
    """The config keys hand-written stage ``stage`` (e.g. ``train_rbm``) reads, plus :data:`ALWAYS_KEYS`.

    Raises:
        KeyError: no module declares the stage.
    """
    stages = _scan()[1]
    if stage not in stages:
        raise KeyError(f"no experiment module declares the stage {stage!r}; declared: {', '.join(stages)}")
    return (*stages[stage], *ALWAYS_KEYS)
