"""ResNet energy-based model for discrete images (GWG paper Sec. 5.5, Appendix I; EXPERIMENTS.md A7).

f(x) = log p~(x) (the negative energy) of an image x:

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

    Raises:
        ValueError: for non-positive sizes or num_strided > num_blocks; at call time, for inputs of
            the wrong shape (message names the expected shape).
    """

    def __init__(self, image_shape: tuple[int, int] = (28, 28), num_levels: int | None = None, *,
                 channels: int = 64, num_blocks: int = 8, num_strided: int = 2, embed_dim: int = 4):
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

    @property
    def dim(self) -> int:
        """Number of pixels D = H * W."""
        return self.image_shape[0] * self.image_shape[1]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """f(x): binary (C, D) or one-hot (C, D, K) -> (C,)."""
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
