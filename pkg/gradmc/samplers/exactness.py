"""Exactness check of any registered sampler by exact enumeration (EXPERIMENTS.md A0, "Exactness").

Few-step stationarity: draw N chains exactly from pi on a target small enough to enumerate, take
:data:`NUM_STEPS` steps of the sampler (all chains in one batched call; a composition of pi-invariant steps is
pi-invariant, and kernels that tune themselves between steps still apply one exact kernel per step), and
compare the histogram of the states with N pi by a chi-square test (cells expecting fewer than 5 counts pooled).
A pi-invariant kernel passes whatever its mixing; a kernel that leaves pi (a missing reverse term, a biased
unadjusted step) fails for large N; one that never moves fails too. The targets:

- binary: an RBM with 10 visible and 5 hidden units, W, b, c ~ N(0, 1) (1024 states), with
  ``blocks()`` of 5 bits for kernels that need the target's blocks (Block-HB);
- categorical: a dense Potts model with 3 sites and 3 states, h ~ N(0, 1), J ~ N(0, 0.5^2) (27 states).

``gradmc check-sampler NAME`` runs it on a sampler from a plugin, the test suite on every exact kernel the
catalog declares (:mod:`gradmc.sampler_catalog`).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import torch
from scipy import stats

from gradmc.core.exact import exact_distribution
from gradmc.samplers.discrete.registry import make_sampler
from gradmc.samplers.enumerate import state_index
from gradmc.targets.potts import Potts
from gradmc.targets.rbm import RBM

__all__ = ["ExactnessResult", "check_sampler", "binary_target", "categorical_target", "P_MIN", "NUM_CHAINS",
           "NUM_STEPS", "MIN_MOVED"]

#: the smallest chi-square p-value a pi-invariant kernel is allowed (fixed seeds: a pass is deterministic)
P_MIN = 1e-4
#: chains in the test
NUM_CHAINS = 200_000
#: steps from pi
NUM_STEPS = 3
#: the least fraction of chains that must have moved: a kernel that never moves passes vacuously
MIN_MOVED = 0.01


@dataclass(frozen=True)
class ExactnessResult:
    """The outcome of :func:`check_sampler`: the sampler, its state kind, the chi-square statistic and p-value
    over ``cells`` pooled cells, the fraction of chains that moved, and ``passed`` (p >= :data:`P_MIN` and at
    least :data:`MIN_MOVED` of the chains moved)."""

    sampler: str
    state: str
    chi2: float
    p_value: float
    cells: int
    moved: float
    passed: bool


class _WithBlocks:
    """The binary target's ``blocks()``: two contiguous blocks of half the bits (for kernels that read it)."""

    def __init__(self, dim: int):
        self.dim = dim

    def blocks(self):
        half = self.dim // 2
        return [list(range(0, half)), list(range(half, 2 * half))]


def binary_target() -> tuple[RBM, torch.Tensor, torch.Tensor]:
    """The binary test target: (RBM 10 x 5 in float64, states (1024, 10), pi (1024,))."""
    g = torch.Generator().manual_seed(20210401)
    model = RBM(10, 5, weight_std=1.0, generator=g).double()
    with torch.no_grad():
        model.b.copy_(torch.randn(10, generator=g, dtype=torch.float64))
        model.c.copy_(torch.randn(5, generator=g, dtype=torch.float64))
    states, pi = exact_distribution(model, 10)
    return model, states, pi


def categorical_target() -> tuple[Potts, torch.Tensor, torch.Tensor]:
    """The categorical test target: (Potts with 3 sites and 3 states in float64, one-hot states (27, 3, 3),
    pi (27,))."""
    g = torch.Generator().manual_seed(7)
    d, k = 3, 3
    A = torch.randn(d, d, k, k, generator=g, dtype=torch.float64) * 0.5
    J = (A + A.permute(1, 0, 3, 2)) / 2
    J[torch.arange(d), torch.arange(d)] = 0.0
    model = Potts(torch.randn(d, k, generator=g, dtype=torch.float64), J)
    codes = torch.tensor(list(itertools.product(range(k), repeat=d)))
    states = torch.nn.functional.one_hot(codes, k).to(torch.float64)
    with torch.no_grad():
        pi = torch.softmax(model(states), dim=0)
    return model, states, pi


def _index(x: torch.Tensor, state: str) -> torch.Tensor:
    """(C, D) bits or (C, D, K) one-hot states -> (C,) index in the order of the target's ``states``."""
    if state == "binary":
        return state_index(x)  # exact_distribution's order: MSB first
    k = x.shape[2]
    weights = k ** torch.arange(x.shape[1] - 1, -1, -1)
    return (x.argmax(dim=2) * weights).sum(dim=1)


def _chisquare(counts: torch.Tensor, expected: torch.Tensor) -> tuple[float, float, int]:
    order = torch.argsort(expected)
    c, e = counts[order].tolist(), expected[order].tolist()
    pooled_c, pooled_e, acc_c, acc_e = [], [], 0.0, 0.0
    for ci, ei in zip(c, e, strict=True):
        acc_c, acc_e = acc_c + ci, acc_e + ei
        if acc_e >= 5.0:
            pooled_c.append(acc_c)
            pooled_e.append(acc_e)
            acc_c = acc_e = 0.0
    if acc_e > 0 and pooled_e:
        pooled_c[-1] += acc_c
        pooled_e[-1] += acc_e
    result = stats.chisquare(pooled_c, pooled_e)
    return float(result.statistic), float(result.pvalue), len(pooled_c)


def check_sampler(name: str, state: str = "binary", *, num_chains: int = NUM_CHAINS, seed: int = 0) -> ExactnessResult:
    """One-step stationarity of sampler ``name`` (options allowed) on the state's test target (module docstring).

    Args:
        name: a registered sampler reference, e.g. "GWG", "DMALA(step_size=0.5)", a plugin's name.
        state: "binary" or "categorical".
        num_chains: chains drawn from pi (default :data:`NUM_CHAINS`).
        seed: of the draw and the step.

    Returns:
        :class:`ExactnessResult`; ``passed`` is p >= :data:`P_MIN`.

    Raises:
        InputError: an unknown sampler or option (from :func:`make_sampler`).
    """
    target, states, pi = binary_target() if state == "binary" else categorical_target()
    sampler = make_sampler(name, state=state, target=_WithBlocks(states.shape[1]))
    gen = torch.Generator().manual_seed(seed)
    x0 = states[torch.multinomial(pi, num_chains, replacement=True, generator=gen)]
    chains = sampler.init(x0, target, gen)
    for _ in range(NUM_STEPS):
        chains, _ = sampler.step(chains, target, gen)
    x = chains.x
    counts = torch.bincount(_index(x, state), minlength=len(pi)).double()
    chi2, p, cells = _chisquare(counts, pi * num_chains)
    moved = float((x != x0).flatten(1).any(dim=1).double().mean())
    return ExactnessResult(name, state, chi2, p, cells, moved, p >= P_MIN and moved >= MIN_MOVED)
