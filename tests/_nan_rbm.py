"""Block-Gibbs conditionals of a wrapped RBM with NaN hidden probabilities on marked rows, for the tests that
trap chains in a non-finite region (the wrappers supply ``self.rbm`` and ``nan_rows``)."""

from __future__ import annotations

import math

import torch


class NaNRowsBlockGibbs:
    """What Block-HB and BlockGibbs need of a target (``blocks``, ``hidden_probs``, ``visible_probs``,
    ``sample_hidden``, ``sample_visible``), delegated to ``self.rbm``; ``hidden_probs`` is NaN on the rows (C,)
    where ``self.nan_rows(x)`` is True."""

    rbm: torch.nn.Module

    def nan_rows(self, x: torch.Tensor) -> torch.Tensor:
        raise NotImplementedError

    def blocks(self) -> torch.Tensor:
        return torch.arange(self.rbm.num_visible).reshape(-1, 2)

    def hidden_probs(self, x):
        p = self.rbm.hidden_probs(x)
        return torch.where(self.nan_rows(x)[:, None], torch.full_like(p, math.nan), p)

    def visible_probs(self, h):
        return self.rbm.visible_probs(h)

    def sample_hidden(self, x, generator):
        return torch.bernoulli(self.hidden_probs(x), generator=generator)

    def sample_visible(self, h, generator):
        return torch.bernoulli(self.visible_probs(h), generator=generator)
