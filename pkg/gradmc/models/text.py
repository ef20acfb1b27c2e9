"""Text models for the preliminary text EBM on Penn Treebank (GWG paper Appendix J; EXPERIMENTS.md A8).

A sentence is a fixed-length sequence of L tokens from a vocabulary of V words (paper: sentences of at most
20 words, padded with an end-of-sequence token, V = 10,000). Two models over that same space of (L,) token
sequences (padding included), so their log-likelihoods in nats compare directly:

- :class:`BiLSTMEnergy`, the unnormalised energy network f(x) = log p~(x) of the EBM. It reads ONE-HOT
  sentences x (C, L, V) as floats and embeds them as x @ E, so f is differentiable in x and the categorical
  Gibbs-With-Gradients proposal (grad_x f, GWG paper Eq. 4-6) exists. Architecture (App. J): a single-layer
  bidirectional LSTM (paper: 512 hidden units) over a learned 256-d embedding; the last hidden state of each
  direction (the forward one after position L-1, the backward one after position 0) concatenated to
  2 * hidden (1024) -> Linear -> 512 -> Swish (SiLU) -> Linear -> 1.
- :class:`LSTMLanguageModel`, the autoregressive baseline (App. J: an LSTM with 512 hidden units and a
  learned 256-d embedding), with exact log-likelihoods and exact ancestral samples; trained by
  :func:`train_language_model` (Adam on the mean negative log-likelihood).

The EBM's log Z is estimated by AIS (:mod:`gradmc.evaluation.ais`) from the unigram base of
:mod:`gradmc.evaluation.text_baselines`.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch
from torch import nn

from gradmc.core.incremental import Fingerprint

__all__ = ["BiLSTMEnergy", "LSTMLanguageModel", "train_language_model"]


def _check_sizes(**sizes: int) -> None:
    bad = {k: v for k, v in sizes.items() if int(v) != v or v < 1}
    if bad:
        raise ValueError(f"sizes must be integers >= 1, got {bad}")


def _parameter_fingerprint(module: nn.Module) -> Fingerprint:
    """A :class:`~gradmc.core.incremental.Fingerprint` of ``module``'s parameters, buffers and modes.

    nn.LSTM keeps a plain list of its weights (``_flat_weights``), so the generic module fingerprint gives up
    on it (returns None: never cached). The list only mirrors the registered parameters (re-synchronised by
    nn.LSTM whenever one is re-assigned), so the parameters' identities, version counters and storage
    addresses, and each submodule's ``training`` flag, capture every change of f.
    """
    marks, refs = [], []
    for name, sub in module.named_modules():
        marks.append((name, type(sub), sub.training))
        for pname, t in list(sub._parameters.items()) + list(sub._buffers.items()):
            if t is None:
                marks.append((pname, None))
                continue
            refs.append(t)
            marks.append((pname, id(t), t._version, t.data_ptr(), t.dtype, t.device, tuple(t.shape)))
    return Fingerprint(tuple(marks), tuple(refs))


class BiLSTMEnergy(nn.Module):
    """Bidirectional-LSTM energy network f(x) of one-hot sentences (GWG paper App. J; module docstring).

    Args:
        vocab_size: V >= 2 words (the end-of-sequence padding token is one of them).
        embed_dim: embedding size (paper 256); the embedding is the (V, embed_dim) parameter ``embedding``
            (initialised N(0, 1), as nn.Embedding), applied as x @ embedding.
        hidden: LSTM hidden units per direction (paper 512).
        proj: width of the projection after the concatenated final states (paper 512).

    Call: x (C, L, V) one-hot float (any L >= 1) -> f(x) (C,) in nats (unnormalised log-probability; the
    EBM is p(x) = exp f(x) / Z). Computed in the parameters' dtype (use ``.double()`` for float64) and
    returned in x's dtype; differentiable in x.

    Raises:
        ValueError: a size < 1 or vocab_size < 2 (constructor); at call time an input that is not
            (C, L, vocab_size) with C >= 1 and L >= 1 (the message names the expected shape).
    """

    def __init__(self, vocab_size: int, *, embed_dim: int = 256, hidden: int = 512, proj: int = 512):
        super().__init__()
        _check_sizes(embed_dim=embed_dim, hidden=hidden, proj=proj)
        if int(vocab_size) != vocab_size or vocab_size < 2:
            raise ValueError(f"vocab_size must be an integer >= 2, got {vocab_size!r}")
        self.vocab_size = int(vocab_size)
        self.embedding = nn.Parameter(torch.randn(self.vocab_size, int(embed_dim)))
        self.lstm = nn.LSTM(int(embed_dim), int(hidden), num_layers=1, batch_first=True, bidirectional=True)
        self.proj = nn.Linear(2 * int(hidden), int(proj))
        self.act = nn.SiLU()
        self.out = nn.Linear(int(proj), 1)

    def cache_fingerprint(self) -> Fingerprint:
        """For the samplers' caches (:mod:`gradmc.core.incremental`): changes whenever a parameter is
        updated in place (optimiser step, ``load_state_dict``) or re-assigned, or the train/eval mode flips."""
        return _parameter_fingerprint(self)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """f(x): one-hot (C, L, V) -> (C,) in nats (class docstring). Raises ValueError on a wrong shape."""
        if x.dim() != 3 or x.shape[0] < 1 or x.shape[1] < 1 or x.shape[2] != self.vocab_size:
            raise ValueError(f"BiLSTMEnergy input must be one-hot sentences (C, L, {self.vocab_size}) with C, L >= 1, "
                             f"got shape {tuple(x.shape)}")
        emb = x.to(self.embedding.dtype) @ self.embedding  # (C, L, embed_dim)
        _, (h_n, _) = self.lstm(emb)  # h_n: (2, C, hidden): forward after position L-1, backward after 0
        h = torch.cat([h_n[0], h_n[1]], dim=-1)  # (C, 2 * hidden)
        return self.out(self.act(self.proj(h))).squeeze(-1).to(x.dtype)


class LSTMLanguageModel(nn.Module):
    """Autoregressive LSTM language model over fixed-length token sequences (GWG paper App. J baseline).

    p(x) = prod_{t=0}^{L-1} p(x_t | x_{<t}), with p(x_t | x_{<t}) = softmax(W h_t + b) and h_t the state of a
    single-layer LSTM (zero initial state) after reading the inputs u_0, ..., u_t: u_0 is a learned START
    VECTOR ``start`` (embed_dim,) (equivalent to a start token outside the vocabulary), and u_t = embedding of
    x_{t-1} for t >= 1. Every one of the L positions is scored, the end-of-sequence padding included, so
    this is a normalised distribution over the V^L sequences of length L: the same space as the EBM's.

    Args:
        vocab_size: V >= 2. embed_dim: embedding size (paper 256). hidden: LSTM units (paper 512).

    Raises:
        ValueError: a size < 1 or vocab_size < 2.
    """

    def __init__(self, vocab_size: int, *, embed_dim: int = 256, hidden: int = 512):
        super().__init__()
        _check_sizes(embed_dim=embed_dim, hidden=hidden)
        if int(vocab_size) != vocab_size or vocab_size < 2:
            raise ValueError(f"vocab_size must be an integer >= 2, got {vocab_size!r}")
        self.vocab_size = int(vocab_size)
        self.embedding = nn.Embedding(self.vocab_size, int(embed_dim))
        self.start = nn.Parameter(torch.randn(int(embed_dim)))
        self.lstm = nn.LSTM(int(embed_dim), int(hidden), num_layers=1, batch_first=True)
        self.head = nn.Linear(int(hidden), self.vocab_size)

    def _check_tokens(self, tokens: torch.Tensor) -> None:
        if tokens.dim() != 2 or tokens.shape[0] < 1 or tokens.shape[1] < 1 or tokens.is_floating_point() \
                or tokens.is_complex() or tokens.dtype == torch.bool:
            raise ValueError(f"tokens must be integer (N, L) with N, L >= 1, got {tuple(tokens.shape)} {tokens.dtype}")
        if int(tokens.min()) < 0 or int(tokens.max()) >= self.vocab_size:
            raise ValueError(f"tokens must lie in [0, {self.vocab_size}), "
                             f"got [{int(tokens.min())}, {int(tokens.max())}]")

    def log_prob(self, tokens: torch.Tensor) -> torch.Tensor:
        """Exact log p(x) in nats of whole sequences: tokens (N, L) integer -> (N,) in the parameters' dtype
        (sum over all L positions, padding included; class docstring).

        Raises:
            ValueError: tokens not integer (N, L), or values outside [0, vocab_size).
        """
        self._check_tokens(tokens)
        tokens = tokens.to(self.start.device).long()
        n = tokens.shape[0]
        inputs = torch.cat([self.start.expand(n, 1, -1), self.embedding(tokens[:, :-1])], dim=1)  # (N, L, E)
        h, _ = self.lstm(inputs)  # (N, L, hidden)
        logp = torch.log_softmax(self.head(h), dim=-1)  # (N, L, V)
        return logp.gather(-1, tokens.unsqueeze(-1)).squeeze(-1).sum(-1)

    @torch.no_grad()
    def sample(self, n: int, length: int, generator: torch.Generator) -> torch.Tensor:
        """n exact ancestral draws of length ``length``: (n, length) int64 on the parameters' device.

        Args:
            n, length: >= 1. generator: the randomness (on the parameters' device).

        Raises:
            ValueError: n or length < 1.
        """
        _check_sizes(n=n, length=length)
        u = self.start.expand(int(n), 1, -1)
        state = None
        out = []
        for _ in range(int(length)):
            h, state = self.lstm(u, state)
            probs = torch.softmax(self.head(h[:, -1]).double(), dim=-1)  # (n, V)
            tok = torch.multinomial(probs, 1, generator=generator)  # (n, 1)
            out.append(tok)
            u = self.embedding(tok)
        return torch.cat(out, dim=1)


def train_language_model(model: LSTMLanguageModel, tokens: torch.Tensor, *, iterations: int, batch_size: int,
                         lr: float, generator: torch.Generator,
                         progress: Callable[[str], None] | None = None) -> list[dict]:
    """Fit ``model`` by Adam on the mean negative log-likelihood of random mini-batches (GWG paper App. J).

    Args:
        model: the language model (trained in place, on its own device).
        tokens: training sentences (N, L) integer in [0, V).
        iterations: Adam steps (>= 1); batch_size: sentences per step, drawn uniformly with replacement by
            ``generator`` (a CPU generator); lr: Adam's learning rate (> 0).
        progress: optional callable receiving about 10 progress lines.

    Returns:
        One dict per iteration: {"iteration": k (1-based), "nll": mean negative log-likelihood of the batch in
        nats per sentence, "nll_per_token": the same divided by L}.

    Raises:
        ValueError: bad tokens (see :meth:`LSTMLanguageModel.log_prob`), iterations or batch_size < 1, lr <= 0,
            or a non-finite loss (the message names the iteration; the parameters are those before that step).
    """
    _check_sizes(iterations=iterations, batch_size=batch_size)
    if not lr > 0 or not math.isfinite(lr):
        raise ValueError(f"lr must be a finite number > 0, got {lr!r}")
    model._check_tokens(tokens)
    length = tokens.shape[1]
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    history = []
    every = max(int(iterations) // 10, 1)
    for it in range(1, int(iterations) + 1):
        idx = torch.randint(0, tokens.shape[0], (int(batch_size),), generator=generator)
        loss = -model.log_prob(tokens[idx.to(tokens.device)]).mean()
        value = float(loss.detach())
        if not math.isfinite(value):
            raise ValueError(f"language model training stopped at iteration {it}: non-finite loss {value} "
                             "(try a smaller lr)")
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        history.append({"iteration": it, "nll": value, "nll_per_token": value / length})
        if progress is not None and (it % every == 0 or it == iterations):
            progress(f"[lm] iteration {it}/{iterations}: nll {value:.3f} nats/sentence")
    return history
