"""A learnable Ising model for PCD (GWG paper Sec. 5.3, Appendix F Eq. 30): dense symmetric J and bias b.

Same convention as :mod:`gradmc.targets.ising` (read its docstring): bits x in {0, 1}, spins s = 2x - 1,

    log p~(x) = s^T J s + b^T s,

J symmetric with zero diagonal and the double sum over ALL ordered pairs (an edge {i, j} contributes
2 J_ij s_i s_j). So a learned J is directly comparable with ``LatticeIsing(side, theta)``'s
theta * A or with ``ErdosRenyiIsing.J``.

Parameterisation: a free (D, D) parameter ``W`` of which only the strict upper triangle is used,
J = triu(W, 1) + triu(W, 1)^T. Symmetry and the zero diagonal hold exactly for every value of W (no
projection after an optimiser step); the unused entries get zero gradient, so Adam never moves them.
"""

from __future__ import annotations

import torch
from torch import nn

from gradmc.core.validation import check_binary
from gradmc.targets.ising import DenseFlips

__all__ = ["IsingModel"]


class IsingModel(DenseFlips, nn.Module):
    """Ising model with learnable dense couplings J (D, D) and bias b (D,), log p~ as above.

    Args:
        num_dims: D >= 2.
        learn_bias: if False, b stays a zero buffer (not a parameter).
        init_std: the upper triangle of J starts i.i.d. N(0, init_std^2) (0: J = 0, independent bits).
        generator: torch.Generator for the initial J (needed only when init_std > 0).

    ``model(x)`` with x (C, D) floats in {0, 1} returns log p~(x), shape (C,), differentiable in the
    parameters and in x. Memory O(D^2); one call costs O(C D^2). The samplers' incremental evaluations
    (:class:`gradmc.targets.ising.DenseFlips`) evaluate a state a few flips away in O(C D).

    Raises:
        ValueError: num_dims < 2 or init_std < 0.
    """

    def __init__(self, num_dims: int, *, learn_bias: bool = True, init_std: float = 0.0,
                 generator: torch.Generator | None = None):
        super().__init__()
        if isinstance(num_dims, bool) or not isinstance(num_dims, int) or num_dims < 2:
            raise ValueError(f"num_dims must be an integer >= 2, got {num_dims!r}")
        if not init_std >= 0:
            raise ValueError(f"init_std must be >= 0, got {init_std}")
        self.num_dims = num_dims
        w = torch.zeros(num_dims, num_dims)
        if init_std > 0:
            w = torch.randn(num_dims, num_dims, generator=generator) * init_std
        self.W = nn.Parameter(torch.triu(w, diagonal=1))
        if learn_bias:
            self.bias = nn.Parameter(torch.zeros(num_dims))
        else:
            self.register_buffer("bias", torch.zeros(num_dims))

    def extra_repr(self) -> str:
        return f"num_dims={self.num_dims}, learn_bias={isinstance(self.bias, nn.Parameter)}"

    @property
    def J(self) -> torch.Tensor:
        """Couplings (D, D): symmetric, zero diagonal, differentiable in ``W``."""
        upper = torch.triu(self.W, diagonal=1)
        return upper + upper.t()

    @torch.no_grad()
    def _flip_couplings(self) -> torch.Tensor:
        """J for the incremental evaluations, built once per value of ``W`` (the same ``W`` object, storage and
        version counter: an optimiser step bumps the version), so a run of sampler steps builds it once. Like the
        samplers' caches it cannot see an edit through ``W.data``; the caches' probes catch that
        (:mod:`gradmc.core.incremental`)."""
        cached = self.__dict__.get("_cached_J")
        if cached is None or not (cached[0] is self.W and cached[1] == (self.W.data_ptr(), self.W._version)):
            cached = (self.W, (self.W.data_ptr(), self.W._version), self.J)
            self.__dict__["_cached_J"] = cached
        return cached[2]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """log p~(x) = s^T J s + b^T s with s = 2x - 1: (C, D) -> (C,)."""
        check_binary(x, self.num_dims)
        s = 2.0 * x.to(self.W.dtype) - 1.0
        return ((s @ self.J) * s).sum(-1) + s @ self.bias

    log_prob = forward
    closed_forms_for = forward  # the density the closed forms are for (gradmc.core.gradients.own_method)

    @torch.no_grad()
    def log_prob_and_grad(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """f(x) (C,) and grad_x f(x) = 4 J s + 2 b (C, D) in closed form, detached (used by GWG)."""
        check_binary(x, self.num_dims)
        s = 2.0 * x.to(self.W.dtype) - 1.0
        js = s @ self.J
        return (js * s).sum(-1) + s @ self.bias, 4.0 * js + 2.0 * self.bias

    def couplings_dense(self) -> torch.Tensor:
        """The learned J (D, D), detached (same name as the targets' method)."""
        return self.J.detach()
