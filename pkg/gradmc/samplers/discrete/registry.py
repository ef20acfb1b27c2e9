"""Build a kernel from its name, as the papers print it: "GWG", "Gibbs-2", "HB-10-1", "DMALA(step_size=0.1)".

Every kernel declares the names it answers to where it is defined (:func:`gradmc.sampler_catalog.register_sampler`);
this module looks a name up in that catalog, imports the kernel's module and builds it. The declared names
(``python -m gradmc.cli samplers`` lists them with their options):

Binary states (C, D):
    Gibbs-X, Gibbs-X-systematic, GWG, GWG-N, PAS-L, HB-X-Y, Block-HB, RWM, BlockGibbs, R-MALA, R-HMC, D-SVGD,
    DMALA, DULA, DLMC, DLMC-Euler, ACS
Categorical one-hot states (C, D, K), ``state="categorical"``:
    Gibbs-X, GWG, DMALA, DULA, DLMC

plus every sampler a plugin registers (:func:`gradmc.sampler_catalog.load_plugins`).

Options come as keyword arguments or in the name: ``make_sampler("DMALA", step_size=0.1)`` and
``make_sampler("DMALA(step_size=0.1)")`` build the same kernel. ``adapt=N`` (kernels declaring ``adapt``: DMALA,
DULA, DLMC, DLMC-Euler, PAS-L) wraps the kernel in :class:`~gradmc.samplers.adaptation.Adapted`: its step size
(or path length) is tuned toward acceptance 0.574 during the first N steps, from the given or default value, then
frozen.
"""

from __future__ import annotations

import dataclasses
import importlib

from gradmc import sampler_catalog as catalog
from gradmc.errors import InputError, unknown_name
from gradmc.samplers.recording import UndeclaredSamplerError, note, recording_samplers

__all__ = ["SAMPLERS", "CATEGORICAL_SAMPLERS", "UndeclaredSamplerError", "is_later_sampler", "make_sampler",
           "recording_samplers", "sampler_modules", "ADAPT_TARGET_ACCEPTANCE"]

#: The built-in names :func:`make_sampler` accepts for binary states: templates whose ``{field}`` parts are positive
#: integers, e.g. "HB-{block_size}-{radius}" (plugins add theirs: :func:`gradmc.sampler_catalog.specs`).
SAMPLERS = tuple(s.name for s in catalog.specs("binary") if s.module.startswith("gradmc."))
#: The built-in names accepted with ``state="categorical"``.
CATEGORICAL_SAMPLERS = tuple(s.name for s in catalog.specs("categorical") if s.module.startswith("gradmc."))
#: The acceptance rate ``adapt=N`` tunes toward (DISCS; Roberts & Rosenthal 1998).
ADAPT_TARGET_ACCEPTANCE = 0.574


def is_later_sampler(name: str) -> bool:
    """Whether ``name`` (binary or categorical, options allowed) is a sampler the GWG paper did not compare: one
    published after it, or a plugin's (:func:`gradmc.sampler_catalog.is_later`)."""
    return catalog.is_later(name)


def sampler_modules(name: str) -> tuple[str, ...]:
    """Dotted names of the modules defining the kernels :func:`make_sampler` builds for ``name`` (binary or
    categorical), sorted: with their imports, the code a shard running ``name`` runs. The shard cache keys a
    shard by these modules (:mod:`gradmc.codedigest`), so an edit to one sampler recomputes only its shards.

    Raises:
        ValueError: ``name`` is no sampler :func:`make_sampler` knows.
    """
    modules = set()
    for state in catalog.STATES:
        try:
            spec, _, options = catalog.resolve(name, state)
        except InputError:
            continue
        modules.add(spec.module)
        if catalog.ADAPT_OPTION in options:
            modules.add("gradmc.samplers.adaptation")
    if not modules:
        raise InputError(unknown_name("sampler", name, SAMPLERS))
    return tuple(sorted(modules))


def _kernel_class(spec: catalog.SamplerSpec) -> type:
    module = importlib.import_module(spec.module)
    return getattr(module, spec.qualname)


def _adapted(spec, cls, fields: dict, options: dict, label: str):
    from gradmc.samplers.adaptation import Adapted

    burn_in = options.pop(catalog.ADAPT_OPTION)
    param, kind = spec.adapt
    initial = options.pop(param, None)
    if initial is None:
        defaults = {f.name: f.default for f in dataclasses.fields(cls)} if dataclasses.is_dataclass(cls) else {}
        initial = fields.get(param, defaults.get(param))
        fields = {k: v for k, v in fields.items() if k != param}
    base = {**spec.fixed, **fields, **options}
    initial_for = None
    if initial is None or initial is dataclasses.MISSING:
        initial = None
        if not hasattr(cls, "adapt_start"):
            raise InputError(f"sampler {label!r}: adapt needs a starting {param}; give one, e.g. "
                             f"'{spec.name}({param}=0.5, adapt={burn_in})'")
        initial_for = cls(**base).adapt_start  # the kernel's default on D bits or sites (DLMC: tau = e / D)

    def factory(value):
        return cls(**base, **{param: value})

    try:
        return Adapted(factory, initial, burn_in, kind=kind, target_acceptance=ADAPT_TARGET_ACCEPTANCE, label=label,
                       initial_for=initial_for, upper_for=getattr(cls, "adapt_upper", None))
    except ValueError as err:
        raise InputError(f"sampler {label!r}: {err}") from err


def make_sampler(name: str, *, state: str = "binary", target=None, **hyper):
    """Build the kernel named ``name`` (see the module docstring).

    Args:
        name: the paper's name, e.g. "GWG", "Gibbs-2", "HB-10-1", "GWG-3", optionally with options in
            parentheses, "DMALA(step_size=0.1)", "DLMC(adapt=500)".
        state: "binary" ((C, D) floats in {0, 1}) or "categorical" (one-hot (C, D, K)).
        target: needed by structure-aware samplers only (Block-HB reads ``target.blocks()``).
        **hyper: options the kernel declares, as keyword arguments (the relaxed samplers' step_size /
            learning_rate and temperature; DMALA / DULA's step_size; DLMC's tau; ACS's cycle_length, ...).

    Returns:
        The kernel (``init`` / ``step``); an :class:`~gradmc.samplers.adaptation.Adapted` for ``adapt=N``.

    Raises:
        InputError (a ValueError): an unknown name or state (listing the accepted ones), an option the kernel
            does not declare or a missing required one, an option given both in the name and as a keyword,
            Block-HB without a target that has the method it needs, or an option value the kernel rejects.
    """
    note(name)
    spec, fields, options = catalog.resolve(name, state)
    both = sorted(set(options) & set(hyper))
    if both:
        raise InputError(f"sampler {name!r}: options {both} given both in the name and as keywords")
    unknown = sorted(set(hyper) - set(spec.allowed_options))
    if unknown:
        allowed = list(spec.allowed_options)
        prefix = "" if state == "binary" else f"{state} "
        raise InputError(f"{prefix}{spec.name} takes " + (f"only the options {allowed}" if allowed else "no options")
                         + f", got {unknown}")
    options = {**options, **hyper}
    missing = [k for k in spec.required if k not in options]
    if missing:
        example = ", ".join(f"{k}=..." for k in spec.required)
        raise InputError(f"{name} needs hyper-parameters {missing} (e.g. make_sampler('{name}', {example})); the paper "
                         f"grid-searches them per dimension")
    options = {k: v for k, v in options.items() if v is not None}
    for arg, method in spec.target_args.items():
        if target is None or not hasattr(target, method):
            raise InputError(f"{spec.name} needs a target with {method}() (e.g. a factorial HMM posterior): "
                             f"make_sampler('{spec.name}', target=posterior)")
        fields = {**fields, arg: getattr(target, method)()}
    cls = _kernel_class(spec)
    if catalog.ADAPT_OPTION in options:
        return _adapted(spec, cls, fields, options, name)
    try:
        return cls(**spec.fixed, **fields, **options)
    except (TypeError, ValueError) as err:
        if isinstance(err, InputError):
            raise
        raise InputError(f"sampler {name!r}: {err}") from err
