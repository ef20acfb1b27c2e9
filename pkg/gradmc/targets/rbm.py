"""Restricted Boltzmann machine over binary visibles (GWG paper Sec. 5.1, Appendix E).

Marginal log-density of the visibles, hiddens summed out:
    log p(x) = sum_j softplus(W x + c)_j + b^T x - log Z,
with x in {0,1}^D, W (H, D), visible bias b (D,), hidden bias c (H,).
"""

from __future__ import annotations

import torch
from torch import nn

import gradmc.core.streams as streams
from gradmc.core.exact import enumerate_binary
from gradmc.core.incremental import Evaluation, flip_deltas, flipped_entries
from gradmc.core.validation import check_binary

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
    closed_forms_for = forward  # the density the closed forms below are for (gradmc.core.gradients.own_method)

    def log_prob_and_grad(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """f(x) and its gradient in closed form, without autograd: (C, D) -> ((C,), (C, D)), detached.

        grad f(x) = sigmoid(W x + c)^T W + b (the derivative of softplus is the sigmoid).
        """
        ev = self.eval_state(x, grad=True)
        return ev.log_prob, ev.grad

    # The incremental evaluations of gradmc.core.incremental; aux = the pre-activations W x + c (C, H).

    def eval_state(self, x: torch.Tensor, grad: bool = True) -> Evaluation:
        """f(x) (C,), grad f(x) (C, D) if ``grad`` and the pre-activations W x + c (C, H) as aux, detached."""
        check_binary(x, self.num_visible)
        with torch.no_grad():
            x = x.to(self.W.dtype)
            pre = torch.addmm(self.c, x, self.W.t())  # (C, H)
            return self._from_preactivation(pre, x @ self.b, grad)

    def eval_flips(self, x: torch.Tensor, ev: Evaluation, sites: torch.Tensor, mask: torch.Tensor,
                   grad: bool = True, known_log_prob: torch.Tensor | None = None) -> Evaluation:
        """The evaluation at x with bits ``sites`` (C, X) flipped where ``mask`` (C, X), from ev.aux:
        W x' + c = W x + c + sum_k (x'_k - x_k) W[:, k], O(C X H), then one (C, H) x (H, D) product for
        the gradient (none without ``grad``); with ``known_log_prob`` no softplus pass either."""
        with torch.no_grad():
            x = x.to(self.W.dtype)
            delta = flip_deltas(x, sites, mask)  # (C, X)
            if sites.shape[1] == 1:
                pre = torch.addcmul(self._aux(x, ev), delta, self._weight_rows().index_select(0, sites[:, 0]))
            else:
                pre = torch.baddbmm(self._aux(x, ev)[:, None, :], delta[:, None, :], self._columns(sites)).squeeze(1)
            if known_log_prob is not None and not grad:
                return Evaluation(known_log_prob, None, pre)
            visible = x @ self.b + (delta * self.b[sites]).sum(-1)  # b^T x'
            return self._from_preactivation(pre, visible, grad)

    def eval_flip_mask(self, x: torch.Tensor, ev: Evaluation, x_new: torch.Tensor, mask: torch.Tensor,
                       grad: bool = True) -> Evaluation:
        """The evaluation at x_new = x with the bits of ``mask`` (C, D) (bool or 0/1 floats) flipped. When at most
        :attr:`SPARSE_FLIP_FRACTION` of the bits flip: W x' + c = W x + c + sum_{flipped k} (x'_k - x_k) W[:, k]
        from ev.aux (one ``embedding_bag`` over the flipped columns, O(flips H)), then the (C, H) x (H, D)
        product for the gradient; otherwise the full evaluation of x_new (:meth:`eval_state`)."""
        C, D = x.shape
        flat = flipped_entries(mask)  # (F,) flipped entries, chain-major
        if flat.numel() > self.SPARSE_FLIP_FRACTION * C * D or ev.aux is None:
            return self.eval_state(x_new, grad)
        with torch.no_grad():
            x = x.to(self.W.dtype)
            delta = 1.0 - 2.0 * x.reshape(-1).index_select(0, flat)  # (F,) x'_k - x_k
            counts = mask.sum(1).long()
            offsets = counts.cumsum(0).sub_(counts)  # (C,) each chain's first entry in flat
            change = nn.functional.embedding_bag(flat.remainder(D), self._weight_rows(), offsets, mode="sum",
                                                 per_sample_weights=delta)  # (C, H)
            return self._from_preactivation(ev.aux + change, x_new.to(self.W.dtype) @ self.b, grad)

    #: :meth:`eval_flip_mask` updates the pre-activations by the flipped columns when at most this fraction of
    #: the bits flip (the gathered-column sum then costs less than the dense (C, D) x (D, H) product).
    SPARSE_FLIP_FRACTION = 0.2

    def eval_flip_candidates(self, x: torch.Tensor, ev: Evaluation, sites: torch.Tensor,
                             masks: torch.Tensor) -> torch.Tensor:
        """(C, B) f at x with bits ``sites`` (C, X) flipped where ``masks`` (C, B, X), from ev.aux:
        O(C B X H), no (C, D) x (D, H) product (Gibbs-X, HB-X-Y)."""
        with torch.no_grad():
            x = x.to(self.W.dtype)
            delta = flip_deltas(x, sites, masks)  # (C, B, X)
            pre = torch.baddbmm(self._aux(x, ev)[:, None, :], delta, self._columns(sites))  # (C, B, H)
            visible = (x @ self.b)[:, None] + (delta * self.b[sites][:, None, :]).sum(-1)  # (C, B)
            return nn.functional.softplus(pre).sum(-1) + visible

    def _aux(self, x: torch.Tensor, ev: Evaluation) -> torch.Tensor:
        return ev.aux if ev.aux is not None else torch.addmm(self.c, x, self.W.t())

    def _columns(self, sites: torch.Tensor) -> torch.Tensor:
        """W[:, sites] as (C, X, H)."""
        return self._weight_rows().index_select(0, sites.reshape(-1)).view(*sites.shape, self.num_hidden)

    def _weight_rows(self) -> torch.Tensor:
        """W^T (D, H), contiguous (a column of W is then one contiguous row), rebuilt when W changes: the
        cache holds the W tensor it was made from (identity, not an address a new tensor could reuse), its
        version counter and its storage address. A ``_cached_*`` attribute: the kernels' fingerprint covers W itself."""
        W = self.W
        mark = (W._version, W.data_ptr())  # ``W.data = ...`` keeps the object and its version, not the storage
        cached = getattr(self, "_cached_weight_rows", None)
        if cached is None or cached[0] is not W or cached[1] != mark:
            with torch.no_grad():
                cached = (W, mark, W.detach().t().contiguous())
            self._cached_weight_rows = cached
        return cached[2]

    def _from_preactivation(self, pre: torch.Tensor, visible: torch.Tensor, grad: bool) -> Evaluation:
        f = nn.functional.softplus(pre).sum(-1) + visible
        g = torch.addmm(self.b, torch.sigmoid(pre), self.W) if grad else None  # (C, D)
        return Evaluation(f, g, pre)

    def hidden_probs(self, x: torch.Tensor) -> torch.Tensor:
        """p(h_j = 1 | x) = sigmoid(W x + c): (C, D) -> (C, H)."""
        return torch.sigmoid(x.to(self.W.dtype) @ self.W.t() + self.c)

    def visible_probs(self, h: torch.Tensor) -> torch.Tensor:
        """p(x_i = 1 | h) = sigmoid(W^T h + b): (C, H) -> (C, D)."""
        return torch.sigmoid(h.to(self.W.dtype) @ self.W + self.b)

    def sample_hidden(self, x: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
        """h ~ p(h | x): (C, D) -> (C, H) floats in {0, 1}."""
        p = self.hidden_probs(x)
        return streams.bernoulli(p, generator)

    def sample_visible(self, h: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
        """x ~ p(x | h): (C, H) -> (C, D) floats in {0, 1}."""
        p = self.visible_probs(h)
        return streams.bernoulli(p, generator)

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

