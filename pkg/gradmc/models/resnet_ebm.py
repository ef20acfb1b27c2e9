"""ResNet energy-based model for discrete images (GWG paper Sec. 5.5, Appendix I; EXPERIMENTS.md A7).

f(x) = log p~(x) (the negative energy) of an image x is ``net(x) + log p_0(x)``: a ResNet ``net`` plus an
optional fixed base log-probability ``log p_0(x)`` (``base=None``: no base term, f = net). As in the GWG
authors' code (``pcd_ebm_ema.py``: ``logp = net(x) + Bernoulli(data mean).log_prob(x)``), the base is the
data-fitted independent distribution, so training starts from it (e.g. about -206 nats on static MNIST)
instead of the uniform distribution (-543 nats) and the network learns a correction on top of it:

    binary:      log p_0(x) = sum_i x_i l_i - sum_i softplus(l_i)     (``base`` = logits l, shape (D,))
    categorical: log p_0(x) = sum_i <x_i, log pi_i>                   (``base`` = log pi, shape (D, K),
                                                                       normalised per pixel here)

The base is a registered (non-trainable) buffer, so it is saved in and restored from ``state_dict`` and
copied unchanged by the weight EMA. It is linear in x, so f stays differentiable in x.

The network ``net``:

    input  -> [binary: the {0,1} pixels as one channel | categorical: each one-hot pixel (K levels)
               mapped by a learned linear embedding to ``embed_dim`` (4) channels]
           -> 3x3 conv to ``channels`` (64) feature maps
           -> ``num_blocks`` (8) residual blocks, each two 3x3 convs with Swish (SiLU) activations and an
              identity (or strided 1x1 conv) shortcut; the first two blocks have stride 2
           -> Swish -> spatial mean pool -> linear head -> f(x), shape (C,).

Inputs are flat, as the samplers see them: binary (C, H*W) floats in {0, 1}; categorical one-hot
(C, H*W, K). The network is differentiable in x (the GWG proposal needs grad_x f).
"""

from __future__ import annotations

import torch
from torch import nn

__all__ = ["ResNetEBM"]


class _Block(nn.Module):
    def __init__(self, channels: int, stride: int):
        super().__init__()
        self.conv1 = nn.Conv2d(channels, channels, 3, stride=stride, padding=1)
        self.conv2 = nn.Conv2d(channels, channels, 3, stride=1, padding=1)
        self.shortcut = nn.Identity() if stride == 1 else nn.Conv2d(channels, channels, 1, stride=stride)
        self.act = nn.SiLU()

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        out = self.conv2(self.act(self.conv1(self.act(h))))
        return self.shortcut(h) + out


class ResNetEBM(nn.Module):
    """ResNet energy network f(x) for binary or categorical images (module docstring).

    Args:
        image_shape: (H, W), e.g. (28, 28) for MNIST, (28, 20) for Frey faces.
        num_levels: None for binary images; K (e.g. 256) for one-hot categorical pixels.
        channels: feature maps (paper 64). num_blocks: residual blocks (paper 8); the first
            ``num_strided`` (paper 2) have stride 2.
        embed_dim: categorical embedding size (paper 4).
        base: None (f = net) or the fixed base term of the module docstring: binary (D,) logits, e.g.
            ``BernoulliBase.fit(train).logits``; categorical (D, K) log-probabilities, e.g.
            ``CategoricalBase.fit_indices(train, K).log_probs`` (re-normalised per pixel). Stored as the
            float32 buffer ``base``.

    Raises:
        ValueError: for non-positive sizes or num_strided > num_blocks; at call time, for inputs of
            the wrong shape (message names the expected shape); a base of the wrong shape or with
            non-finite entries.
    """

    def __init__(self, image_shape: tuple[int, int] = (28, 28), num_levels: int | None = None, *,
                 channels: int = 64, num_blocks: int = 8, num_strided: int = 2, embed_dim: int = 4,
                 base: torch.Tensor | None = None):
        super().__init__()
        h, w = (int(s) for s in image_shape)
        if min(h, w, channels, num_blocks, embed_dim) < 1 or not 0 <= num_strided <= num_blocks:
            raise ValueError(f"bad ResNetEBM sizes: image {image_shape}, channels {channels}, blocks "
                             f"{num_blocks}, strided {num_strided}, embed_dim {embed_dim}")
        if num_levels is not None and num_levels < 2:
            raise ValueError(f"num_levels must be None (binary) or >= 2, got {num_levels}")
        self.image_shape = (h, w)
        self.num_levels = num_levels
        in_channels = 1 if num_levels is None else embed_dim
        self.embed = None if num_levels is None else nn.Linear(num_levels, embed_dim, bias=False)
        self.stem = nn.Conv2d(in_channels, channels, 3, padding=1)
        self.blocks = nn.Sequential(*[_Block(channels, 2 if i < num_strided else 1) for i in range(num_blocks)])
        self.head = nn.Linear(channels, 1)
        self.act = nn.SiLU()
        self.register_buffer("base", None if base is None else self._check_base(torch.as_tensor(base)))

    def _check_base(self, base: torch.Tensor) -> torch.Tensor:
        want = (self.dim,) if self.num_levels is None else (self.dim, self.num_levels)
        if tuple(base.shape) != want or not bool(torch.isfinite(base).all()):
            raise ValueError(f"base must be a finite tensor of shape {want} "
                             f"({'logits' if self.num_levels is None else 'log-probabilities'}), "
                             f"got shape {tuple(base.shape)}")
        if self.num_levels is not None and not torch.allclose(base.double().logsumexp(-1),
                                                              torch.zeros((), dtype=torch.float64), atol=1e-9):
            base = torch.log_softmax(base.double(), -1)  # normalise per pixel (already-normalised: kept as is)
        return base.detach().to(torch.get_default_dtype()).clone()

    def base_log_prob(self, x: torch.Tensor) -> torch.Tensor:
        """log p_0(x) of the stored base, (C, D) or (C, D, K) -> (C,); zeros when the model has no base."""
        if self.base is None:
            return x.new_zeros(x.shape[0])
        base = self.base.to(x)  # the arithmetic of BernoulliBase / CategoricalBase.log_prob, term for term
        if self.num_levels is None:
            return (x * base).sum(-1) - nn.functional.softplus(base).sum()
        return (x * base).sum((-1, -2))

    @property
    def dim(self) -> int:
        """Number of pixels D = H * W."""
        return self.image_shape[0] * self.image_shape[1]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """f(x) = net(x) + log p_0(x): binary (C, D) or one-hot (C, D, K) -> (C,)."""
        return self.net(x) + self.base_log_prob(x) if self.base is not None else self.net(x)

    def net(self, x: torch.Tensor) -> torch.Tensor:
        """The ResNet part alone (no base term): binary (C, D) or one-hot (C, D, K) -> (C,)."""
        h, w = self.image_shape
        if self.num_levels is None:
            if x.dim() != 2 or x.shape[1] != self.dim:
                raise ValueError(f"binary input must be (C, {self.dim}), got {tuple(x.shape)}")
            z = x.reshape(-1, 1, h, w)
        else:
            if x.dim() != 3 or x.shape[1:] != (self.dim, self.num_levels):
                raise ValueError(f"categorical input must be one-hot (C, {self.dim}, {self.num_levels}), "
                                 f"got {tuple(x.shape)}")
            z = self.embed(x).transpose(1, 2).reshape(-1, self.embed.out_features, h, w)
        z = self.act(self.blocks(self.stem(z)))
        return self.head(z.mean((2, 3))).squeeze(-1)
