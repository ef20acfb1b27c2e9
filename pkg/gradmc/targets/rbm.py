"""Restricted Boltzmann machine over binary visibles (GWG paper Sec. 5.1, Appendix E).

Marginal log-density of the visibles, hiddens summed out:
    log p(x) = sum_j softplus(W x + c)_j + b^T x - log Z,
with x in {0,1}^D, W (H, D), visible bias b (D,), hidden bias c (H,).
"""

from __future__ import annotations

import torch
from torch import nn

from gradmc.targets.exact import enumerate_binary
from gradmc.targets.validation import check_binary

__all__ = ["RBM"]


class RBM(nn.Module):
    """Binary RBM with exact conditionals, usable as a target and as a trainable model.

    Args:
        num_visible: D.
        num_hidden: H.
        weight_std: standard deviation of the N(0, weight_std^2) initial weights.
        generator: optional torch.Generator for the initial weights (CPU).

    Calling the module, ``rbm(x)`` with x (C, D) floats in {0, 1}, returns log p(x) + log Z, shape (C,).
    """

    def __init__(self, num_visible: int, num_hidden: int, weight_std: float = 0.01,
                 generator: torch.Generator | None = None):
        super().__init__()
        if num_visible < 1 or num_hidden < 1:
            raise ValueError(f"num_visible and num_hidden must be >= 1, got {num_visible}, {num_hidden}")
        self.num_visible = int(num_visible)
        self.num_hidden = int(num_hidden)
        self.W = nn.Parameter(torch.randn(num_hidden, num_visible, generator=generator) * weight_std)
        self.b = nn.Parameter(torch.zeros(num_visible))
        self.c = nn.Parameter(torch.zeros(num_hidden))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Unnormalised log p(x): (C, D) -> (C,)."""
        check_binary(x, self.num_visible)
        x = x.to(self.W.dtype)
        pre = x @ self.W.t() + self.c  # (C, H)
        return nn.functional.softplus(pre).sum(-1) + x @ self.b

    log_prob = forward

    def log_prob_and_grad(self, x: torch.Tensor, return_aux: bool = False):
        """f(x) and its gradient in closed form, without autograd: (C, D) -> ((C,), (C, D)), detached.

        grad f(x) = sigmoid(W x + c)^T W + b (the derivative of softplus is the sigmoid). With
        ``return_aux`` also returns the pre-activations W x + c, (C, H), for
        :meth:`log_prob_and_grad_single_flip`.
        """
        check_binary(x, self.num_visible)
        with torch.no_grad():
            x = x.to(self.W.dtype)
            pre = torch.addmm(self.c, x, self.W.t())  # (C, H)
            f, grad = self._from_preactivation(x, pre)
        return (f, grad, pre) if return_aux else (f, grad)

    def log_prob_and_grad_single_flip(self, x: torch.Tensor, index: torch.Tensor, aux: torch.Tensor):
        """f and grad at x with bit ``index[c]`` of chain c flipped, reusing the pre-activations ``aux``
        of an evaluation at x: W x' + c = W x + c + (1 - 2 x_i) W[:, i], so one (C, H) x (H, D) product
        instead of two. Returns (f' (C,), grad' (C, D), aux' (C, H)); x is the state BEFORE the flip.
        """
        with torch.no_grad():
            rows = torch.arange(x.shape[0], device=x.device)
            sign = 1.0 - 2.0 * x[rows, index].to(self.W.dtype)  # (C,)
            pre = torch.addcmul(aux, sign[:, None], self.W.index_select(1, index).t())  # (C, H)
            x_new = x.to(self.W.dtype).clone()
            x_new[rows, index] += sign
            f, grad = self._from_preactivation(x_new, pre)
        return f, grad, pre

    def _from_preactivation(self, x: torch.Tensor, pre: torch.Tensor):
        f = nn.functional.softplus(pre).sum(-1) + x @ self.b
        grad = torch.addmm(self.b, torch.sigmoid(pre), self.W)  # (C, D)
        return f, grad

    def hidden_probs(self, x: torch.Tensor) -> torch.Tensor:
        """p(h_j = 1 | x) = sigmoid(W x + c): (C, D) -> (C, H)."""
        return torch.sigmoid(x.to(self.W.dtype) @ self.W.t() + self.c)

    def visible_probs(self, h: torch.Tensor) -> torch.Tensor:
        """p(x_i = 1 | h) = sigmoid(W^T h + b): (C, H) -> (C, D)."""
        return torch.sigmoid(h.to(self.W.dtype) @ self.W + self.b)

    def sample_hidden(self, x: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
        """h ~ p(h | x): (C, D) -> (C, H) floats in {0, 1}."""
        p = self.hidden_probs(x)
        return torch.bernoulli(p, generator=generator)

    def sample_visible(self, h: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
        """x ~ p(x | h): (C, H) -> (C, D) floats in {0, 1}."""
        p = self.visible_probs(h)
        return torch.bernoulli(p, generator=generator)

    @torch.no_grad()
    def log_partition(self) -> float:
        """Exact log Z by enumerating the smaller layer (2**min(D, H) terms).

        Summing over hiddens: log Z = logsumexp_h [c^T h + sum_i softplus(W^T h + b)_i].

        Raises:
            ValueError: if min(D, H) > 24 (enumeration would be too large).
        """
        small = min(self.num_visible, self.num_hidden)
        if small > 24:
            raise ValueError(f"exact log Z needs min(D, H) <= 24, got D={self.num_visible}, H={self.num_hidden}")
        W, b, c = self.W.double(), self.b.double(), self.c.double()
        states = enumerate_binary(small, dtype=torch.float64)  # (2**small, small)
        if self.num_hidden <= self.num_visible:
            terms = states @ c + nn.functional.softplus(states @ W + b).sum(-1)
        else:
            terms = states @ b + nn.functional.softplus(states @ W.t() + c).sum(-1)
        return float(torch.logsumexp(terms, 0))

