"""The small binary targets of the exactness tests (D = 8 bits, 256 states, enumerable), shared by the suites."""

from __future__ import annotations

import torch

from gradmc.core.exact import exact_distribution
from gradmc.targets import RBM


class PairwiseBinary:
    """Dense pairwise binary model, log p(x) = x^T J x + b^T x + const, x (C, D) in {0, 1} (not cacheable).

    Args:
        J: (D, D) float64 couplings (symmetric here; any J works); b: (D,) float64 biases.
    """

    def __init__(self, J: torch.Tensor, b: torch.Tensor):
        self.J, self.b = J, b

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        """(C, D) -> (C,) unnormalised log-probability, differentiable in x."""
        return ((x @ self.J) * x).sum(-1) + x @ self.b


def binary_exact_targets(D: int = 8) -> dict:
    """name -> (target, states (2^D, D) float64, pi (2^D,) float64): a random RBM (5 hidden, weights N(0, 1),
    random biases) and a dense pairwise model (J = (A + A^T) / 2, A entries N(0, 0.25)), both far from uniform."""
    g = torch.Generator().manual_seed(20210401)
    rbm = RBM(D, 5, weight_std=1.0, generator=g).double()
    with torch.no_grad():
        rbm.b.copy_(torch.randn(D, generator=g, dtype=torch.float64))
        rbm.c.copy_(torch.randn(5, generator=g, dtype=torch.float64))
    g = torch.Generator().manual_seed(7)
    A = torch.randn(D, D, generator=g, dtype=torch.float64) * 0.5
    pairwise = PairwiseBinary(J=(A + A.T) / 2, b=torch.randn(D, generator=g, dtype=torch.float64))
    return {name: (t, *exact_distribution(t, D)) for name, t in (("rbm", rbm), ("pairwise", pairwise))}
