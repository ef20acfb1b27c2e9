"""The sampler catalog: every kernel declares its names, options and plot style where it is defined.

A kernel class carries one :func:`register_sampler` decorator per name it answers to, with literal arguments
only::

    @register_sampler("PAS-{path_length}", family="later", colour="darkorange", order=60, examples=("PAS-3",),
                      adapt=("path_length", "int"))
    class PAS: ...

Everything else derives from these declarations: :func:`~gradmc.samplers.discrete.registry.make_sampler`, the
config schema's accepted names (:func:`name_pattern`), the bench's sampler lists, the figures' colours and order
(:func:`colour`, :func:`order_key`), the exactness tests' parametrisation (:func:`specs`) and the config groups
``paper`` / ``later`` / ``plugins`` (:func:`expand`).

The built-in kernels are read from the source files under ``gradmc/samplers/`` with :func:`ast.literal_eval`,
without importing them (so the Snakefile, config validation and ``gradmc --help`` do not import torch).
Samplers from outside the package - a researcher's module, or an installed package - register when imported:
:func:`load_plugins` imports the modules of the ``gradmc.samplers`` entry-point group, of the
``GRADMC_SAMPLER_PLUGINS`` environment variable (comma-separated) and of a config's ``plugins:`` list.

**Names.** A name is a template whose ``{field}`` parts are positive integers passed to the constructor
(``"Gibbs-{block_size}"`` answers "Gibbs-1", "Gibbs-2", ...). A sampler reference in a config may add options
in parentheses, Python keyword syntax with literal values: ``"DMALA(step_size=0.1)"``,
``"DMALA(adapt=500)"`` (:func:`parse`). ``adapt=N`` tunes the declared ``adapt`` parameter during the first N
steps toward acceptance 0.574 and then freezes it (:class:`gradmc.samplers.adaptation.Adapted`).
"""

from __future__ import annotations

import ast
import functools
import importlib
import os
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path

from gradmc.errors import InputError, unknown_name

__all__ = ["SamplerSpec", "register_sampler", "parse", "canonical", "resolve", "specs", "builtin_modules",
           "name_pattern", "is_later", "colour", "order_key", "expand", "load_plugins", "check_buildable", "STATES",
           "FAMILIES", "GROUPS", "ENTRY_POINT_GROUP", "PLUGINS_ENV", "ADAPT_OPTION", "OPTION_KINDS"]


def _real(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _int(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


_NOT_PLAIN = object()


def _plain(value) -> bool:
    """A literal whose ``repr`` is one stable spelling: a real number (finite or not, at most 300 digits), a bool,
    None, a string, or a tuple of them (no sets, lists or dicts: their order or mutability would change names)."""
    if isinstance(value, tuple):
        return all(_plain(v) for v in value)
    if _int(value):
        return value.bit_length() <= 1000
    return value is None or isinstance(value, (bool, float, str))


def _short(node: ast.expr) -> str:
    try:
        text = ast.unparse(node)
    except (RecursionError, ValueError):
        return "..."
    return text if len(text) <= 60 else text[:57] + "..."

STATES = ("binary", "categorical")
#: "paper": a sampler of the GWG paper; "later": published after it (rows its claims are not measured against)
FAMILIES = ("paper", "later")
#: config group names a ``samplers:`` list may hold (:func:`expand`)
GROUPS = ("paper", "later", "plugins")
#: option kinds (:class:`SamplerSpec` ``options``) -> (test, what the value must be)
OPTION_KINDS = {
    "positive": (lambda v: _real(v) and 0 < v < float("inf"), "a finite number > 0"),
    "real": (lambda v: _real(v) and abs(v) < float("inf"), "a finite number"),
    "probability": (lambda v: _real(v) and 0 < v < 1, "a number in (0, 1)"),
    "count": (lambda v: _int(v) and v >= 1, "an integer >= 1"),
    "count0": (lambda v: _int(v) and v >= 0, "an integer >= 0"),
}
_REAL_KINDS = ("positive", "real", "probability")
ENTRY_POINT_GROUP = "gradmc.samplers"
PLUGINS_ENV = "GRADMC_SAMPLER_PLUGINS"
#: the option naming the burn-in adaptation steps of a kernel that declares ``adapt``
ADAPT_OPTION = "adapt"
_SAMPLERS_DIR = Path(__file__).resolve().parent / "samplers"
#: the modules whose kernels are built-ins (read from source by :func:`scan`); any other module is a plugin
_BUILTIN_PREFIX = "gradmc.samplers."
#: a name template: letters, digits and ``_ . + -``, with ``{field}`` parts; no spaces, parentheses or commas
_NAME = re.compile(r"[A-Za-z](?:[A-Za-z0-9_.+\-]|\{[a-z_][a-z0-9_]*\})*")
_FIELD = re.compile(r"\{([a-z_][a-z0-9_]*)\}")
_REFERENCE = re.compile(r"\s*([^()\s]+)\s*(?:\((.*)\))?\s*", re.S)


@dataclass(frozen=True)
class SamplerSpec:
    """One name a kernel answers to.

    Attributes:
        name: the template, e.g. "GWG", "HB-{block_size}-{radius}".
        module, qualname: where the kernel class is defined.
        state: "binary" ((C, D) bits) or "categorical" (one-hot (C, D, K)).
        family: "paper" or "later" (:data:`FAMILIES`); samplers from plugins are "plugin".
        options: option -> kind, the keyword arguments a config may set: a kind of :data:`OPTION_KINDS`
            ("positive", "count", ...), checked when a config is read, or ``None`` (any literal, checked by the
            kernel when it is built). The kernel's own defaults hold for the options a reference leaves out.
        required: options with no default (the relaxed samplers' step size and temperature).
        fixed: constructor arguments this name fixes (e.g. ``{"scan": "systematic"}``).
        target_args: constructor argument -> name of a target method whose result it takes (Block-HB's blocks).
        adapt: (option, kind) tuned by ``adapt=N`` ("log" for a positive real, "int" for a count), or ``None``.
        colour: matplotlib colour of every instance, or concrete name -> colour.
        order: figure and table position (smaller first; plugins after the built-ins).
        examples: concrete names the bench, the exactness tests and config groups use (default: the name
            itself when it has no fields).
        in_groups: whether the config groups ``paper`` / ``later`` / ``plugins`` include it (only kernels that
            run on any target of their state without required options or target methods are included).
        exact: whether the kernel leaves its target invariant (False for an unadjusted or relaxed sampler); the
            exactness suite (:mod:`gradmc.samplers.exactness`) requires exact kernels to pass and others to fail.
        doc: one line for tables and ``--help``.
    """

    name: str
    module: str
    qualname: str
    state: str = "binary"
    family: str = "paper"
    options: dict = field(default_factory=dict)
    required: tuple = ()
    fixed: dict = field(default_factory=dict)
    target_args: dict = field(default_factory=dict)
    adapt: tuple | None = None
    colour: object = None
    order: int = 1000
    examples: tuple = ()
    in_groups: bool = True
    exact: bool = True
    doc: str = ""

    @property
    def fields(self) -> tuple[str, ...]:
        """The integer fields of the template, in order."""
        return tuple(_FIELD.findall(self.name))

    @property
    def regex(self) -> str:
        """The regular expression of the concrete names (fields are positive integers)."""
        parts = _FIELD.split(self.name)
        return "".join(re.escape(p) if i % 2 == 0 else f"(?P<{p}>[1-9][0-9]*)" for i, p in enumerate(parts))

    def match(self, name: str) -> dict | None:
        """The field values of ``name`` (ints), or None when ``name`` is not an instance of this template."""
        m = re.fullmatch(self.regex, name)
        return None if m is None else {k: int(v) for k, v in m.groupdict().items()}

    @property
    def instances(self) -> tuple[str, ...]:
        """``examples``, or the name itself when it has no fields."""
        return self.examples or ((self.name,) if not self.fields else ())

    @property
    def grouped(self) -> bool:
        """Whether the config groups include it: ``in_groups``, and no required option or target method."""
        return self.in_groups and not self.required and not self.target_args

    @property
    def allowed_options(self) -> tuple[str, ...]:
        """Every option a reference may set (``adapt`` included where declared)."""
        return tuple(self.options) + ((ADAPT_OPTION,) if self.adapt else ())


_KEYS = {"state", "family", "options", "required", "fixed", "target_args", "adapt", "colour", "order", "examples",
         "in_groups", "exact", "doc"}
#: (name, state) -> spec of the kernels registered at import time (plugins, and the built-ins once imported)
_RUNTIME: dict[tuple[str, str], SamplerSpec] = {}


def _make_spec(name: str, module: str, qualname: str, kwargs: dict) -> SamplerSpec:
    unknown = sorted(set(kwargs) - _KEYS)
    if unknown:
        raise TypeError(f"register_sampler({name!r}) in {module}: unknown arguments {unknown}; "
                        f"expected some of {sorted(_KEYS)}")
    kwargs = dict(kwargs)
    for key in ("required", "examples", "adapt"):
        if kwargs.get(key) is not None:
            kwargs[key] = tuple(kwargs[key])
    if not isinstance(name, str) or not _NAME.fullmatch(name) or name in GROUPS:
        raise TypeError(f"register_sampler({name!r}) in {module}: a name is letters, digits, '_.+-' and {{field}} "
                        f"parts, starting with a letter, and no group name {GROUPS}")
    spec = SamplerSpec(name=name, module=module, qualname=qualname, **kwargs)
    bad_kinds = {k: v for k, v in spec.options.items() if v is not None and v not in OPTION_KINDS}
    if bad_kinds or ADAPT_OPTION in spec.options:
        raise TypeError(f"register_sampler({name!r}) in {module}: option kinds must be None or one of "
                        f"{sorted(OPTION_KINDS)} (got {bad_kinds}), and {ADAPT_OPTION!r} is no option name")
    if spec.state not in STATES:
        raise TypeError(f"register_sampler({name!r}) in {module}: state must be one of {STATES}, got {spec.state!r}")
    _check_declaration(spec)
    if spec.fields and not spec.examples:
        raise TypeError(f"register_sampler({name!r}) in {module}: a name with fields needs examples (the concrete "
                        "names the bench, the tests and the config groups use)")
    for example in spec.examples:
        if spec.match(example) is None:
            raise TypeError(f"register_sampler({name!r}) in {module}: example {example!r} is not an instance")
    return spec


def _check_declaration(spec: SamplerSpec) -> None:
    """Refuse a declaration whose arguments have the wrong type or contradict each other (TypeError, naming it)."""
    where = f"register_sampler({spec.name!r}) in {spec.module}"
    colours = spec.colour.values() if isinstance(spec.colour, dict) else [spec.colour]
    problems = [
        (spec.family not in FAMILIES, f"family must be one of {FAMILIES}, got {spec.family!r}"),
        (not _int(spec.order), f"order must be an int, got {spec.order!r}"),
        (not all(c is None or isinstance(c, str) for c in colours), f"colour must be a str or a dict of str, "
                                                                     f"got {spec.colour!r}"),
        (not isinstance(spec.exact, bool) or not isinstance(spec.in_groups, bool), "exact and in_groups are bools"),
        (not set(spec.required) <= set(spec.options), f"required {spec.required} must be declared options"),
        (bool(set(spec.options) & ({*spec.fields, *spec.fixed, *spec.target_args, "init", "step", "name"})),
         "an option may not repeat a template field, a fixed or target argument, or shadow init, step or name"),
        (spec.adapt is not None and (len(spec.adapt) != 2 or spec.adapt[1] not in ("log", "int")
                                      or spec.adapt[0] not in {*spec.options, *spec.fields}),
         f"adapt must be (an option or template field, 'log' or 'int'), got {spec.adapt!r}"),
    ]
    for bad, message in problems:
        if bad:
            raise TypeError(f"{where}: {message}")


def register_sampler(name: str, **kwargs):
    """Class decorator: declare that the kernel answers to ``name`` (fields of :class:`SamplerSpec`).

    The built-in kernels' decorators are also read from their source (module docstring), so their arguments
    must be literals. The decorated class gets ``sampler_specs``, the tuple of its specs.

    Raises:
        TypeError: an unknown argument, a name that is not a template (or is a group name), an unknown option
            kind, a state outside :data:`STATES`, a name with fields but no examples, or an example that is no
            instance of ``name``.
        InputError: a plugin's name that another kernel of the same state already answers to (a built-in or
            another plugin): a reference must name one kernel.
    """
    def decorate(cls):
        spec = _make_spec(name, cls.__module__, cls.__qualname__, kwargs)
        if not cls.__module__.startswith(_BUILTIN_PREFIX):  # a plugin: never a row of the GWG paper's claims
            spec = SamplerSpec(**{**spec.__dict__, "family": "plugin"})
            _refuse_collision(spec)
        _RUNTIME[(name, spec.state)] = spec
        cls.sampler_specs = (*cls.__dict__.get("sampler_specs", ()), spec)
        return cls

    return decorate


def _overlap(a: SamplerSpec, b: SamplerSpec) -> bool:
    """Whether two templates of one state share a concrete name, checked on each one's instances and on its
    template with every field at the same value, 1 to 99 (names with other field values are not probed)."""
    def probes(s: SamplerSpec) -> set[str]:
        filled = {_FIELD.sub(str(n), s.name) for n in range(1, 100)} if s.fields else {s.name}
        return filled | set(s.instances)

    return a.state == b.state and (any(b.match(n) is not None for n in probes(a))
                                   or any(a.match(n) is not None for n in probes(b)))


def _refuse_collision(spec: SamplerSpec) -> None:
    for other in (*_builtin(), *_RUNTIME.values()):
        same_class = (other.module, other.qualname) == (spec.module, spec.qualname)
        if not same_class and _overlap(spec, other):
            raise InputError(f"sampler plugin {spec.module}.{spec.qualname} registers {spec.name!r} ({spec.state}), "
                             f"which {other.module}.{other.qualname} already answers to as {other.name!r}; "
                             "give the plugin's kernel a name of its own")


def _literal_call(node: ast.Call, path: Path) -> tuple[str, dict]:
    try:
        name = ast.literal_eval(node.args[0])
        kwargs = {kw.arg: ast.literal_eval(kw.value) for kw in node.keywords}
    except (ValueError, IndexError, TypeError) as err:
        raise TypeError(f"{path}: register_sampler(...) needs a name and literal arguments ({err})") from err
    return name, kwargs


def _decorator_name(node: ast.expr) -> str | None:
    if isinstance(node, ast.Call):
        func = node.func
        return func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else None
    return None


def scan(samplers_dir: Path = _SAMPLERS_DIR) -> tuple[SamplerSpec, ...]:
    """The specs declared in the source files under ``samplers_dir`` (default: this package's samplers), read
    with :func:`ast.literal_eval` without importing them, in file and line order.

    Raises:
        TypeError: a decorator with non-literal arguments, or a malformed declaration.
    """
    found: list[SamplerSpec] = []
    root = Path(samplers_dir).resolve()
    package_root = root.parent
    for path in sorted(root.rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        if "register_sampler" not in text:
            continue
        rel = path.relative_to(package_root.parent).with_suffix("")
        module = ".".join(rel.parts[:-1] if rel.parts[-1] == "__init__" else rel.parts)
        for node in ast.walk(ast.parse(text, filename=str(path))):
            if isinstance(node, ast.ClassDef):
                for deco in node.decorator_list:
                    if _decorator_name(deco) == "register_sampler":
                        name, kwargs = _literal_call(deco, path)
                        found.append(_make_spec(name, module, node.name, kwargs))
    return tuple(found)


@functools.cache
def _builtin() -> tuple[SamplerSpec, ...]:
    return scan()


def builtin_modules(samplers_dir: Path | None = None) -> tuple[str, ...]:
    """Dotted names of the modules that define built-in kernels (sorted): the code
    :func:`~gradmc.samplers.discrete.registry.make_sampler` may import by name."""
    specs_ = _builtin() if samplers_dir is None else scan(samplers_dir)
    return tuple(sorted({s.module for s in specs_}))


_loaded: set[str] = set()


@functools.cache
def _entry_points() -> tuple:
    """The ``gradmc.samplers`` entry points of the installed packages (read once per process)."""
    return tuple(metadata.entry_points(group=ENTRY_POINT_GROUP))


def load_plugins(modules: Iterable[str] = ()) -> tuple[str, ...]:
    """Import the sampler plugins: the ``gradmc.samplers`` entry points, the modules named in
    ``$GRADMC_SAMPLER_PLUGINS`` (comma-separated) and ``modules`` (a config's ``plugins:``). Importing a module
    runs its :func:`register_sampler` decorators. ``modules`` are added to ``$GRADMC_SAMPLER_PLUGINS`` so that
    the processes this one starts (pipeline jobs, Ray workers on this machine) load them too.

    Returns:
        The plugin modules loaded so far.

    Raises:
        InputError: a module that cannot be imported (the message names it and the import error).
    """
    bad = [m for m in modules if not (isinstance(m, str) and m.strip())]
    if bad:
        raise InputError(f"sampler plugins must be module names (strings), got {bad!r}")
    names = [m.strip() for m in os.environ.get(PLUGINS_ENV, "").split(",") if m.strip()]
    for point in _entry_points():
        if point.value not in _loaded:
            try:
                point.load()
            except Exception as err:  # a broken plugin must name itself
                raise InputError(f"sampler plugin {point.name!r} (entry point {point.value!r} of group "
                                 f"{ENTRY_POINT_GROUP!r}) failed to import: {err}") from err
            _loaded.add(point.value)
    for name in [*names, *(m.strip() for m in modules)]:
        if name not in _loaded:
            try:
                importlib.import_module(name)
            except Exception as err:
                raise InputError(f"sampler plugin module {name!r} (from {PLUGINS_ENV} or a config's plugins:) "
                                 f"failed to import: {err}") from err
            _loaded.add(name)
        if name not in names:  # exported once imported, so a failed one does not haunt later loads
            names.append(name)
            os.environ[PLUGINS_ENV] = ",".join(names)
    return tuple(sorted(_loaded))


def specs(state: str | None = None) -> tuple[SamplerSpec, ...]:
    """Every known spec (built-in, then plugins in load order), of one state or all; plugins are loaded first.

    Raises:
        InputError: a plugin that fails to import.
    """
    load_plugins()
    seen = {(s.name, s.state) for s in _builtin()}
    every = list(_builtin()) + [s for key, s in _RUNTIME.items() if key not in seen]
    return tuple(s for s in every if state is None or s.state == state)


def parse(reference: str) -> tuple[str, dict]:
    """Split a sampler reference into its name and options: "DMALA(step_size=0.1)" -> ("DMALA",
    {"step_size": 0.1}); "GWG" -> ("GWG", {}).

    Raises:
        InputError: not a name optionally followed by ``(key=literal, ...)``.
    """
    m = _REFERENCE.fullmatch(reference) if isinstance(reference, str) else None
    if m is None:
        raise InputError(f"sampler {reference!r}: expected a name such as 'DMALA', optionally with options "
                         f"'DMALA(step_size=0.1)'")
    name, args = m.group(1), m.group(2)
    if args is None or not args.strip():
        return name, {}
    reference = reference if len(reference) <= 80 else reference[:77] + "..."  # as the messages show it
    hint = f"options are key=literal pairs, e.g. '{name}(step_size=0.1)'"
    try:
        call = ast.parse(f"f({args})", mode="eval").body
    except SyntaxError as err:
        raise InputError(f"sampler {reference!r}: {hint} ({err.msg})") from None
    except (RecursionError, MemoryError, ValueError):
        raise InputError(f"sampler {reference!r}: {hint} (too deeply nested or too long)") from None
    if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Name) and call.func.id == "f") or call.args \
            or any(kw.arg is None for kw in call.keywords):
        raise InputError(f"sampler {reference!r}: {hint}, in one pair of parentheses")
    options = {}
    for kw in call.keywords:
        if kw.arg in options:
            raise InputError(f"sampler {reference!r}: option {kw.arg} is given twice")
        try:
            value = ast.literal_eval(kw.value)
        except (ValueError, TypeError, SyntaxError, RecursionError, MemoryError):
            value = _NOT_PLAIN
        if not _plain(value):
            raise InputError(f"sampler {reference!r}: option {kw.arg} = {_short(kw.value)} is not a plain literal "
                             "(a number, True/False, None, a quoted string, or a tuple of them)")
        options[kw.arg] = value
    return name, options


def canonical(reference: str, state: str = "binary") -> str:
    """The one spelling of a reference that its shards, rows and cache keys use: options sorted by name and
    separated by ", ", no other spaces, values as Python writes them, and a real-valued option (kinds "positive",
    "real", "probability") as a float: "DMALA( step_size = 1 )" -> "DMALA(step_size=1.0)".

    Raises:
        InputError: from :func:`resolve`.
    """
    spec, _, options = resolve(reference, state)
    if not options:
        return parse(reference)[0]
    kinds = {**spec.options, **({ADAPT_OPTION: "count"} if spec.adapt else {})}
    spelt = {k: (float(v) + 0.0 if kinds[k] in _REAL_KINDS else v) for k, v in options.items()}
    return f"{parse(reference)[0]}({', '.join(f'{k}={v!r}' for k, v in sorted(spelt.items()))})"


def _unknown(name: str, state: str) -> str:
    """The message for a sampler name no kernel of ``state`` answers to: the closest name (a declared name or
    example, so "GWK" -> "GWG") and every declared name."""
    known = specs(state)
    names = sorted({s.name for s in known})
    candidates = {n for s in known for n in (s.name, *s.instances) if not s.fields or n != s.name}
    text = unknown_name(f"{'' if state == 'binary' else state + ' '}sampler", name, names, candidates=candidates)
    example = next((s for s in known if s.fields and s.examples), None)
    if example is not None:
        text += f" (a {{field}} is a whole number >= 1: {example.name} answers {', '.join(example.examples)}, ...)"
    return text


def resolve(reference: str, state: str = "binary") -> tuple[SamplerSpec, dict, dict]:
    """The spec a reference names, its template fields and its options (validated against the declaration).

    Returns:
        (spec, fields, options): e.g. ("HB-{block_size}-{radius}" spec, {"block_size": 10, "radius": 1}, {}).

    Raises:
        InputError: an unknown name (listing the known ones for the state), an unknown state, an option the
            kernel does not declare (listing the declared ones), or an option value outside its declared kind
            (``adapt`` is a count of steps).
    """
    if state not in STATES:
        raise InputError(f"state must be one of {STATES}, got {state!r}")
    name, options = parse(reference)
    for spec in specs(state):
        fields = spec.match(name)
        if fields is not None:
            unknown = sorted(set(options) - set(spec.allowed_options))
            if unknown:
                allowed = list(spec.allowed_options)
                raise InputError(f"sampler {reference!r}: {spec.name} ({state}) takes "
                                 + (f"only the options {allowed}" if allowed else "no options")
                                 + f", got {unknown}")
            kinds = {**spec.options, **({ADAPT_OPTION: "count"} if spec.adapt else {})}
            for key, value in options.items():
                test, expected = OPTION_KINDS.get(kinds[key]) or (None, None)
                if test is not None and not test(value):
                    raise InputError(f"sampler {reference!r}: option {key} must be {expected}, got {value!r}")
            return spec, fields, options
    raise InputError(_unknown(name, state))


def check_buildable(reference: str, state: str = "binary", target_methods: Iterable[str] = ()) -> None:
    """Refuse, when a config is read, a reference that ``make_sampler(reference, target=...)`` could not build in
    an experiment that passes no other options and whose targets offer ``target_methods`` (a sampler list's
    ``x-target-methods`` in its schema): a required option left out (R-MALA's step size), or a target method the
    kernel needs (Block-HB's ``blocks``) that the experiment's targets lack.

    Raises:
        InputError: naming what is missing; or from :func:`resolve`.
    """
    spec, _, options = resolve(reference, state)
    missing = [k for k in spec.required if k not in options]
    if missing:
        example = ", ".join(f"{k}=..." for k in spec.required)
        raise InputError(f"sampler {reference!r} needs the options {missing}, e.g. '{spec.name}({example})'")
    lacking = sorted(set(spec.target_args.values()) - set(target_methods))
    if lacking:
        needs = ", ".join(f"{m}()" for m in lacking)
        raise InputError(f"sampler {reference!r} needs a target with {needs}, which this experiment's targets do not "
                         "offer (a sampler list's schema names what they offer in x-target-methods)")


def name_pattern() -> str:
    """One regular expression that every known sampler reference matches (any state), options included: the
    config schema's ``sampler`` pattern."""
    plain = sorted({re.sub(r"\(\?P<[a-z_0-9]+>", "(?:", s.regex) for s in specs()})
    return rf"^({'|'.join(plain)})(\(.*\))?$"


def _spec_of(name: str) -> SamplerSpec | None:
    bare = parse(name)[0] if "(" in name else name
    for spec in specs():
        if spec.match(bare) is not None:
            return spec
    return None


def is_later(name: str) -> bool:
    """Whether the sampler ``name`` (any state, options allowed) was published after the GWG paper, or comes from
    a plugin: a row the GWG paper's claims are not measured against."""
    spec = _spec_of(name)
    return spec is not None and spec.family != "paper"


def colour(name: str) -> str | None:
    """The declared plot colour of ``name`` (a concrete name, options allowed), or None."""
    spec = _spec_of(name)
    if spec is None or spec.colour is None:
        return None
    if isinstance(spec.colour, dict):
        return spec.colour.get(parse(name)[0])
    return spec.colour


def order_key(name: str) -> tuple:
    """Sort key placing samplers as the figures and tables list them: the declared ``order``, then the template's
    fields, then the options; unknown names last, by name."""
    spec = _spec_of(name)
    if spec is None:
        return (10**9, (), 0, name)
    bare, options = parse(name)
    return (spec.order, tuple(spec.match(bare).values()), len(options), repr(sorted(options.items())))


def expand(entries: Iterable[str], state: str = "binary", *, empty_groups: bool = False) -> list[str]:
    """A config ``samplers:`` list with its groups replaced by their samplers, in order, without repeats:
    ``paper`` / ``later`` (the built-in family's ``examples`` for the state) and ``plugins`` (every plugin
    sampler's examples). Every other entry is checked (:func:`resolve`) and spelt :func:`canonical`. A group
    with no member is an error (a config that names it would run nothing for it) unless ``empty_groups``.

    Raises:
        InputError: from :func:`resolve`, for an entry that is no group and no known sampler; or a group with no
            member (``plugins`` with no plugin loaded) when ``empty_groups`` is false.
    """
    out: list[str] = []
    for entry in entries:
        bare = parse(entry)[0]
        if bare in GROUPS and entry.strip() != bare:
            raise InputError(f"sampler group {bare!r} takes no options, got {entry!r}")
        entry = bare if bare in GROUPS else entry
        if entry in GROUPS:
            family = "plugin" if entry == "plugins" else entry
            members = [n for s in sorted(specs(state), key=lambda s: s.order) if s.family == family and s.grouped
                       for n in s.instances]
            if not members and not empty_groups:
                how = (f"load one with a config's plugins: [module], {PLUGINS_ENV} or the {ENTRY_POINT_GROUP!r} "
                       "entry points" if entry == "plugins" else "")
                raise InputError(f"the sampler group {entry!r} has no {state} sampler" + (f"; {how}" if how else ""))
        else:
            members = [canonical(entry, state)]
        out.extend(m for m in members if m not in out)
    return out
