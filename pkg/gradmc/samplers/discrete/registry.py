"""Sampler names as the papers print them, mapped to configured kernels.

Binary states (C, D):
    Gibbs-X               random-permutation-scan block Gibbs, block size X (Gibbs-1, Gibbs-2)
    Gibbs-X-systematic    the same with a systematic (cyclic) scan
    GWG                   Gibbs-With-Gradients, one flip per step, temperature 2
    GWG-N                 GWG with N draws per step (GWG-3, GWG-5; Appendix D.2)
    PAS-L                 path auxiliary sampler (Sun et al., ICLR 2022), a path of L flips (PAS-3)
    HB-X-Y                Hamming ball, block X, radius Y (HB-10-1)
    Block-HB              Hamming ball on the target's own blocks (needs ``target.blocks()``), radius 1
    RWM                   random-walk Metropolis, one uniformly random flip
    DMALA                 discrete Metropolis-adjusted Langevin (Zhang et al. 2022), ``step_size`` alpha = 0.2
    DULA                  its unadjusted (biased) version, ``step_size`` alpha = 0.2
    DLMC                  discrete Langevin Monte Carlo (Sun et al. 2023), ``tau`` = e / D on D bits
    DLMC-Euler            DLMC with an Euler step of the per-bit flow, ``tau`` = e / D
    ACS                   automatic cyclical sampler (Pynadath et al., NeurIPS 2024): cosine cycle of
                          (alpha, beta) DMALA-type kernels, range tuned during burn-in, then fixed
    BlockGibbs            exact h | x, x | h alternation (RBM targets only)
    R-MALA, R-HMC, D-SVGD relaxed samplers (need ``step_size``/``learning_rate`` and ``temperature``)
Categorical one-hot states (C, D, K), ``state="categorical"``:
    Gibbs-X               categorical block Gibbs (K**X evaluations per step)
    GWG                   categorical GWG (Eq. 4)
    DMALA, DULA           categorical DMALA / DULA, ``step_size`` alpha = 0.2
    DLMC                  categorical DLMC (per-site K-state flow by matrix exponential), ``tau`` = e / D

The factorised samplers (``factorised.py``) take their one hyper-parameter optionally:
``make_sampler("DMALA", step_size=0.1)``, ``make_sampler("DLMC", tau=0.5)``.
ACS takes its hyper-parameters optionally too (defaults: the authors' RBM-sampling configuration, see
:mod:`gradmc.samplers.discrete.acs`): ``cycle_length`` = 20, ``alpha_max`` = 5, ``alpha_min`` = 0.05,
``beta_max`` = 0.95, ``burn_in`` = 200 tuning steps, ``target_acceptance`` = 0.5; also ``rate``, ``decay``.
"""

from __future__ import annotations

import re

from gradmc.samplers.discrete.acs import ACS
from gradmc.samplers.discrete.block_gibbs import RBMBlockGibbs
from gradmc.samplers.discrete.categorical_gibbs import CategoricalGibbs
from gradmc.samplers.discrete.factorised import (
    DLMC,
    DMALA,
    DULA,
    DLMCCategorical,
    DLMCEuler,
    DMALACategorical,
    DULACategorical,
)
from gradmc.samplers.discrete.gibbs import Gibbs
from gradmc.samplers.discrete.gwg import GWG
from gradmc.samplers.discrete.gwg_categorical import GWGCategorical
from gradmc.samplers.discrete.gwg_multi import GWGMulti
from gradmc.samplers.discrete.hamming_ball import BlockHammingBall, HammingBall
from gradmc.samplers.discrete.pas import PAS
from gradmc.samplers.discrete.rwm import RandomWalkMetropolis
from gradmc.samplers.recording import UndeclaredSamplerError, note, recording_samplers
from gradmc.samplers.relaxed import DSVGD, RHMC, RMALA

__all__ = ["SAMPLERS", "CATEGORICAL_SAMPLERS", "LATER_SAMPLERS", "UndeclaredSamplerError", "is_later_sampler",
           "make_sampler", "recording_samplers", "sampler_modules"]

#: Names accepted by :func:`make_sampler` for binary states (patterns; X, Y, N positive integers).
SAMPLERS = ("Gibbs-X", "Gibbs-X-systematic", "GWG", "GWG-N", "PAS-L", "HB-X-Y", "Block-HB", "RWM", "BlockGibbs",
            "R-MALA", "R-HMC", "D-SVGD", "DMALA", "DULA", "DLMC", "DLMC-Euler", "ACS")
#: Names accepted with ``state="categorical"``.
CATEGORICAL_SAMPLERS = ("Gibbs-X", "GWG", "DMALA", "DULA", "DLMC")
#: The samplers published after the GWG paper (patterns as in :data:`SAMPLERS`): rows of its experiments that
#: the paper did not run, so its claims (e.g. "GWG beats every other sampler") are not measured against them.
LATER_SAMPLERS = ("PAS-L", "DMALA", "DULA", "DLMC", "DLMC-Euler", "ACS")

#: the factorised samplers: name -> (class, its optional hyper-parameter)
_FACTORISED = {"DMALA": (DMALA, "step_size"), "DULA": (DULA, "step_size"), "DLMC": (DLMC, "tau"),
               "DLMC-Euler": (DLMCEuler, "tau")}
_FACTORISED_CATEGORICAL = {"DMALA": (DMALACategorical, "step_size"), "DULA": (DULACategorical, "step_size"),
                           "DLMC": (DLMCCategorical, "tau")}

#: ACS's optional hyper-parameters (the fields of :class:`~gradmc.samplers.discrete.acs.ACS`).
ACS_OPTIONS = ("cycle_length", "alpha_max", "alpha_min", "beta_max", "burn_in", "target_acceptance", "rate", "decay")

_RELAXED = {"R-MALA": (RMALA, "step_size"), "R-HMC": (RHMC, "step_size"), "D-SVGD": (DSVGD, "learning_rate")}


def is_later_sampler(name: str) -> bool:
    """Whether ``name`` (binary or categorical) is one of :data:`LATER_SAMPLERS` (PAS-L for any path length L),
    a sampler the GWG paper did not compare."""
    return name in LATER_SAMPLERS or re.fullmatch(r"PAS-[1-9][0-9]*", name) is not None


def _kernel_classes(name: str) -> tuple[type, ...]:
    """The kernel classes :func:`make_sampler` may build for ``name``, binary or categorical; () for an unknown
    name."""
    classes: list[type] = []
    for table in (_RELAXED, _FACTORISED, _FACTORISED_CATEGORICAL):
        if name in table:
            classes.append(table[name][0])
    fixed = {"ACS": (ACS,), "GWG": (GWG, GWGCategorical), "BlockGibbs": (RBMBlockGibbs,),
             "RWM": (RandomWalkMetropolis,), "Block-HB": (BlockHammingBall,)}
    classes.extend(fixed.get(name, ()))
    patterns = ((r"Gibbs-\d+(-systematic)?", (Gibbs, CategoricalGibbs)), (r"GWG-\d+", (GWGMulti,)),
                (r"PAS-\d+", (PAS,)), (r"HB-\d+-\d+", (HammingBall,)))
    for pattern, found in patterns:
        if re.fullmatch(pattern, name):
            classes.extend(found)
    return tuple(classes)


def sampler_modules(name: str) -> tuple[str, ...]:
    """Dotted names of the modules defining the kernels :func:`make_sampler` builds for ``name`` (binary or
    categorical), sorted: with their imports, the code a shard running ``name`` runs. The shard cache keys a
    shard by these modules (:mod:`gradmc.codedigest`), so an edit to one sampler recomputes only its shards.

    Raises:
        ValueError: ``name`` is no sampler :func:`make_sampler` knows.
    """
    classes = _kernel_classes(name)
    if not classes:
        raise ValueError(f"unknown sampler {name!r}; expected one of {', '.join(SAMPLERS)}")
    return tuple(sorted({cls.__module__ for cls in classes}))


def _binary(name: str, target, hyper: dict):
    if name in _RELAXED:
        cls, rate = _RELAXED[name]
        missing = [k for k in (rate, "temperature") if k not in hyper]
        if missing:
            raise ValueError(f"{name} needs hyper-parameters {missing} (e.g. make_sampler('{name}', {rate}=0.01, "
                             f"temperature=1.0)); the paper grid-searches them per dimension")
        return cls(**hyper)
    if name in _FACTORISED:
        return _factorised(name, *_FACTORISED[name], hyper)
    if name == "ACS":
        unknown = sorted(set(hyper) - set(ACS_OPTIONS))
        if unknown:
            raise ValueError(f"ACS takes only the optional hyper-parameters {list(ACS_OPTIONS)}, got {unknown}")
        return ACS(**hyper)
    if hyper:
        raise ValueError(f"{name} takes no hyper-parameters, got {sorted(hyper)}")
    if name == "GWG":
        return GWG(temperature=2.0)
    if name == "BlockGibbs":
        return RBMBlockGibbs()
    if name == "RWM":
        return RandomWalkMetropolis()
    if name == "Block-HB":
        if target is None or not hasattr(target, "blocks"):
            raise ValueError("Block-HB needs a target with blocks() (e.g. a factorial HMM posterior): "
                             "make_sampler('Block-HB', target=posterior)")
        return BlockHammingBall(blocks=target.blocks(), radius=1)
    if m := re.fullmatch(r"Gibbs-(\d+)(-systematic)?", name):
        return Gibbs(block_size=int(m.group(1)), scan="systematic" if m.group(2) else "random")
    if m := re.fullmatch(r"GWG-(\d+)", name):
        return GWGMulti(num_draws=int(m.group(1)))
    if m := re.fullmatch(r"PAS-(\d+)", name):
        return PAS(path_length=int(m.group(1)))
    if m := re.fullmatch(r"HB-(\d+)-(\d+)", name):
        return HammingBall(block_size=int(m.group(1)), radius=int(m.group(2)))
    raise ValueError(f"unknown sampler {name!r}; expected one of {', '.join(SAMPLERS)}")


def _factorised(name: str, cls, option: str, hyper: dict):
    unknown = sorted(set(hyper) - {option})
    if unknown:
        raise ValueError(f"{name} takes only the optional hyper-parameter {option!r}, got {unknown}")
    return cls(**hyper)


def make_sampler(name: str, *, state: str = "binary", target=None, **hyper):
    """Build the kernel named ``name`` (see the module docstring).

    Args:
        name: the paper's name, e.g. "GWG", "Gibbs-2", "HB-10-1", "GWG-3".
        state: "binary" ((C, D) floats in {0, 1}) or "categorical" (one-hot (C, D, K)).
        target: needed by structure-aware samplers only (Block-HB reads ``target.blocks()``).
        **hyper: hyper-parameters of the relaxed samplers (step_size / learning_rate, temperature, ...);
            the optional ``step_size`` (DMALA, DULA) or ``tau`` (DLMC, DLMC-Euler) of the factorised ones;
            ACS's optional ``cycle_length``, ``alpha_max``, ``alpha_min``, ``beta_max``, ``burn_in``,
            ``target_acceptance``, ``rate``, ``decay``.

    Raises:
        ValueError: for an unknown name or state (listing the accepted ones), missing or unexpected
            hyper-parameters, or Block-HB without a blocked target.
    """
    note(name)
    if state == "binary":
        return _binary(name, target, hyper)
    if state != "categorical":
        raise ValueError(f"state must be 'binary' or 'categorical', got {state!r}")
    if name in _FACTORISED_CATEGORICAL:
        return _factorised(f"categorical {name}", *_FACTORISED_CATEGORICAL[name], hyper)
    if hyper:
        raise ValueError(f"categorical {name} takes no hyper-parameters, got {sorted(hyper)}")
    if name == "GWG":
        return GWGCategorical(temperature=2.0)
    if m := re.fullmatch(r"Gibbs-(\d+)", name):
        return CategoricalGibbs(block_size=int(m.group(1)))
    raise ValueError(f"unknown categorical sampler {name!r}; expected one of {', '.join(CATEGORICAL_SAMPLERS)}")
