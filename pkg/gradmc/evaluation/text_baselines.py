"""Closed-form baselines for the text EBM (GWG paper Appendix J; EXPERIMENTS.md A8).

App. J compares the EBM's and the autoregressive LSTM's test log-likelihoods with two closed forms, both
over the same space of fixed-length (L,) token sequences (end-of-sequence padding included):

- the uniform distribution over tokens: log p(x) = -L log V for every sentence;
- a categorical ("unigram") distribution fitted to the training data: one distribution pi over the V
  words, shared by all positions, with add-alpha smoothed frequencies counted over ALL positions of the
  training sentences (padding included): pi_v = (n_v + alpha) / (N L + V alpha),
  log p(x) = sum_t log pi_{x_t}.

The unigram distribution, repeated for every position, is also the base p_0 of AIS for the text EBM
(:func:`unigram_base`, a :class:`~gradmc.evaluation.ais.CategoricalBase` over one-hot (C, L, V) states).
All values are in nats, float64.
"""

from __future__ import annotations

import math

import torch

from gradmc.evaluation.ais import CategoricalBase

__all__ = ["uniform_log_likelihood", "unigram_log_probs", "unigram_base", "unigram_log_likelihood"]


def _check_tokens(tokens: torch.Tensor, vocab_size: int | None = None) -> None:
    if tokens.dim() != 2 or tokens.shape[0] < 1 or tokens.shape[1] < 1 or tokens.is_floating_point() \
            or tokens.is_complex() or tokens.dtype == torch.bool:
        raise ValueError(f"tokens must be integer (N, L) with N, L >= 1, got {tuple(tokens.shape)} {tokens.dtype}")
    if vocab_size is not None:
        if int(vocab_size) != vocab_size or vocab_size < 1:
            raise ValueError(f"vocab_size must be an integer >= 1, got {vocab_size!r}")
        if int(tokens.min()) < 0 or int(tokens.max()) >= vocab_size:
            raise ValueError(f"tokens must lie in [0, {vocab_size}), got [{int(tokens.min())}, {int(tokens.max())}]")


def uniform_log_likelihood(tokens: torch.Tensor, vocab_size: int) -> torch.Tensor:
    """log p(x) = -L log V of every sentence under the uniform distribution over tokens (App. J).

    Args:
        tokens: (N, L) integer sentences in [0, V). vocab_size: V.

    Returns:
        (N,) float64, nats.

    Raises:
        ValueError: tokens not integer (N, L), values outside [0, V), or V < 1.
    """
    _check_tokens(tokens, vocab_size)
    return torch.full((tokens.shape[0],), -tokens.shape[1] * math.log(vocab_size), dtype=torch.float64)


def unigram_log_probs(tokens: torch.Tensor, vocab_size: int, alpha: float = 1.0) -> torch.Tensor:
    """Add-alpha smoothed token frequencies over all positions (padding included): log pi (V,) (App. J).

    pi_v = (n_v + alpha) / (N L + V alpha), n_v the count of token v in ``tokens``.

    Args:
        tokens: (N, L) integer training sentences in [0, V). vocab_size: V. alpha: smoothing (> 0, so every
            word, seen or not, has a finite log-probability).

    Returns:
        (V,) float64 normalised log-probabilities (logsumexp = 0), nats.

    Raises:
        ValueError: bad tokens (as :func:`uniform_log_likelihood`) or alpha <= 0.
    """
    _check_tokens(tokens, vocab_size)
    if not alpha > 0 or not math.isfinite(alpha):
        raise ValueError(f"alpha must be a finite number > 0, got {alpha!r}")
    counts = torch.bincount(tokens.reshape(-1).long().cpu(), minlength=int(vocab_size)).double()
    return torch.log(counts + alpha) - math.log(tokens.numel() + vocab_size * alpha)


def unigram_base(tokens: torch.Tensor, vocab_size: int, length: int, alpha: float = 1.0) -> CategoricalBase:
    """The AIS base of the text EBM: the unigram distribution of :func:`unigram_log_probs` at every one of
    ``length`` positions, a :class:`~gradmc.evaluation.ais.CategoricalBase` with log_probs (length, V) over
    one-hot (C, length, V) states.

    Raises:
        ValueError: as :func:`unigram_log_probs`, or length < 1.
    """
    if int(length) != length or length < 1:
        raise ValueError(f"length must be an integer >= 1, got {length!r}")
    row = unigram_log_probs(tokens, vocab_size, alpha)
    return CategoricalBase(row.expand(int(length), -1).clone())


def unigram_log_likelihood(tokens: torch.Tensor, log_probs: torch.Tensor) -> torch.Tensor:
    """log p(x) = sum_t log pi_{x_t} of each sentence under a unigram distribution (App. J).

    Args:
        tokens: (N, L) integer sentences in [0, V). log_probs: (V,) log pi, e.g. :func:`unigram_log_probs`.

    Returns:
        (N,) float64, nats.

    Raises:
        ValueError: log_probs not (V,) with V >= 1, or bad tokens.
    """
    if log_probs.dim() != 1 or log_probs.shape[0] < 1:
        raise ValueError(f"log_probs must be (V,), got shape {tuple(log_probs.shape)}")
    _check_tokens(tokens, log_probs.shape[0])
    return log_probs.double().cpu()[tokens.long().cpu()].sum(-1)
