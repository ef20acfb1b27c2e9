"""Factorial hidden Markov model and its posterior p(x | y) as a binary target (GWG Eq. 11, Appendix G Eq. 32).

Latent x in {0,1}^(L x K): K independent binary Markov chains over L time steps, stored flattened
TIME-MAJOR as x (C, D), D = L * K, with x[:, t * K + k] = x_{t,k} (so ``x.view(C, L, K)`` recovers the
grid and the K bits of time t are the contiguous block ``blocks()[t]``). Generative model:
    x_{0,k} ~ Bernoulli(alpha_k);
    x_{t,k} | x_{t-1,k} ~ Bernoulli(beta_k^{x_{t-1,k}} (1 - beta_k)^{1 - x_{t-1,k}})   (Eq. 32),
i.e. each factor KEEPS its previous value with probability beta_k (persistence) and flips with
probability 1 - beta_k; y_t | x_t ~ N(W^T x_t + b, sigma^2) with W (K,), scalar b, y in R^L.

Continuous extension used for gradients (it decides GWG's proposals; on binary x all forms agree):
the Markov terms are the multilinear (bilinear) form of Table 1, with s_t = x_t x_{t-1} + (1 - x_t)(1 - x_{t-1}),
log p(x_t | x_{t-1}) = s_t log beta + (1 - s_t) log(1 - beta); the initial term is
x_0 log alpha + (1 - x_0) log(1 - alpha); the Gaussian term keeps its natural quadratic form.
"""

from __future__ import annotations

import math

import torch
from torch import nn

from gradmc.core.validation import check_binary

__all__ = ["FactorialHMM", "FHMMPosterior"]


def _per_factor(value, num_factors: int, name: str) -> torch.Tensor:
    """A float or a (K,) tensor with entries strictly inside (0, 1) -> (K,) floating tensor; ValueError otherwise."""
    t = torch.as_tensor(value, dtype=torch.float32) if not isinstance(value, torch.Tensor) else value.detach()
    t = t.float() if not t.is_floating_point() else t
    if t.dim() == 0:
        t = t.expand(num_factors)
    if t.shape != (num_factors,):
        raise ValueError(f"{name} must be a float or have shape ({num_factors},), got {tuple(t.shape)}")
    if not bool(((t > 0) & (t < 1)).all()):
        raise ValueError(f"{name} must lie strictly inside (0, 1), got {t.tolist()}")
    return t.clone()


class FactorialHMM(nn.Module):
    """Factorial HMM with scalar Gaussian emissions (GWG Appendix G).

    Args:
        L: number of time steps (>= 1).
        K: number of binary factors (>= 1).
        W: (K,) emission weights.
        b: scalar emission offset (float or 0-d tensor).
        sigma: observation noise standard deviation (> 0); the authors' code uses 0.5.
        alpha: P(x_{0,k} = 1), float or (K,); 0.1 in the authors' code.
        beta: persistence P(x_{t,k} = x_{t-1,k}), float or (K,); 0.95 in the authors' code.
    """

    def __init__(self, L: int, K: int, W: torch.Tensor, b=0.0, sigma: float = 0.5, alpha=0.1, beta=0.95):
        super().__init__()
        if L < 1 or K < 1:
            raise ValueError(f"need L >= 1 and K >= 1, got L={L}, K={K}")
        if not isinstance(W, torch.Tensor) or W.shape != (K,):
            got = tuple(W.shape) if isinstance(W, torch.Tensor) else type(W).__name__
            raise ValueError(f"W must be a tensor of shape ({K},), got {got}")
        if not sigma > 0:
            raise ValueError(f"sigma must be > 0, got {sigma}")
        self.L, self.K, self.num_dims = int(L), int(K), int(L) * int(K)
        self.sigma = float(sigma)
        W = W.detach().float() if not W.is_floating_point() else W.detach()
        self.register_buffer("W", W.clone())
        b = torch.as_tensor(b, dtype=W.dtype).detach()
        if b.numel() != 1:
            raise ValueError(f"b must be a scalar, got shape {tuple(b.shape)}")
        self.register_buffer("b", b.reshape(()).clone())
        self.register_buffer("alpha", _per_factor(alpha, K, "alpha").to(W.dtype))
        self.register_buffer("beta", _per_factor(beta, K, "beta").to(W.dtype))

    @classmethod
    def random(cls, L: int, K: int, generator: torch.Generator | None = None, sigma: float = 0.5,
               alpha=0.1, beta=0.95) -> FactorialHMM:
        """A model with W (K,) and b drawn i.i.d. N(0, 1) (Appendix G.1, Eq. 33)."""
        W = torch.randn(K, generator=generator)
        b = torch.randn((), generator=generator)
        return cls(L, K, W, b, sigma=sigma, alpha=alpha, beta=beta)

    def extra_repr(self) -> str:
        return f"L={self.L}, K={self.K}, sigma={self.sigma}"

    def blocks(self) -> torch.Tensor:
        """(L, K) int64: row t holds the flat indices t*K .. t*K+K-1 of time step t (Block-HB blocks)."""
        return torch.arange(self.num_dims, device=self.W.device).view(self.L, self.K)

    def _grid(self, x: torch.Tensor) -> torch.Tensor:
        check_binary(x, self.num_dims)
        return x.to(self.W.dtype).reshape(-1, self.L, self.K)

    def _y(self, y: torch.Tensor, num_chains: int) -> torch.Tensor:
        """y as (L,) or (C, L) -> broadcastable (C or 1, L); ValueError otherwise."""
        if not isinstance(y, torch.Tensor) or y.shape not in ((self.L,), (num_chains, self.L)):
            got = tuple(y.shape) if isinstance(y, torch.Tensor) else type(y).__name__
            raise ValueError(f"y must have shape ({self.L},) or ({num_chains}, {self.L}), got {got}")
        return y.to(self.W.dtype).reshape(-1, self.L)

    def emission_mean(self, x: torch.Tensor) -> torch.Tensor:
        """W^T x_t + b for every t: (C, D) -> (C, L)."""
        return self._grid(x) @ self.W + self.b

    def log_prior(self, x: torch.Tensor) -> torch.Tensor:
        """log p(x) (normalised): (C, D) -> (C,). Differentiable in x (multilinear extension)."""
        g = self._grid(x)
        la, l1a = torch.log(self.alpha), torch.log1p(-self.alpha)
        lb, l1b = torch.log(self.beta), torch.log1p(-self.beta)
        x0 = g[:, 0]
        out = x0 @ la + (1 - x0) @ l1a
        if self.L > 1:
            cur, prev = g[:, 1:], g[:, :-1]
            same = cur * prev + (1 - cur) * (1 - prev)  # (C, L-1, K)
            out = out + (same * lb + (1 - same) * l1b).sum((1, 2))
        return out

    def log_likelihood(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        """log p(y | x) = sum_t log N(y_t; W^T x_t + b, sigma^2): x (C, D), y (L,) or (C, L) -> (C,)."""
        r = self.emission_mean(x) - self._y(y, x.shape[0])
        const = self.L * 0.5 * math.log(2 * math.pi * self.sigma**2)
        return -0.5 * (r * r).sum(-1) / self.sigma**2 - const

    def log_joint(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        """log p(x, y) = log p(x) + log p(y | x), normalised: (C,). Differentiable in x."""
        return self.log_prior(x) + self.log_likelihood(x, y)

    def reconstruction_error(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        """sum_t (W^T x_t + b - y_t)^2: x (C, D), y (L,) or (C, L) -> (C,)."""
        r = self.emission_mean(x) - self._y(y, x.shape[0])
        return (r * r).sum(-1)

    @torch.no_grad()
    def sample_prior(self, num: int, generator: torch.Generator | None = None) -> torch.Tensor:
        """num independent draws x ~ p(x): (num, D) floats in {0, 1}, time-major."""
        dev, dt = self.W.device, self.W.dtype
        x0 = torch.bernoulli(self.alpha.expand(num, self.K), generator=generator)  # (num, K)
        flips = torch.bernoulli((1 - self.beta).expand(num, self.L - 1, self.K), generator=generator)
        parity = torch.remainder(torch.cumsum(flips, 1), 2)  # (num, L-1, K): odd number of flips so far
        rest = (x0[:, None, :] + parity) % 2
        return torch.cat([x0[:, None, :], rest], 1).reshape(num, self.num_dims).to(dev, dt)

    @torch.no_grad()
    def sample_observations(self, x: torch.Tensor, generator: torch.Generator | None = None) -> torch.Tensor:
        """y ~ p(y | x): (C, D) -> (C, L)."""
        mean = self.emission_mean(x)
        noise = torch.randn(mean.shape, generator=generator, dtype=mean.dtype, device=mean.device)
        return mean + self.sigma * noise

    def posterior(self, y: torch.Tensor) -> FHMMPosterior:
        """The target log p(x | y) + log p(y) = log p(x, y) for observations y (L,)."""
        return FHMMPosterior(self, y)


class FHMMPosterior(nn.Module):
    """Binary target f(x) = log p(x, y) = log p(x | y) + log p(y) for fixed y (L,); x (C, D) -> (C,).

    Offers ``log_prob_and_grad`` (analytic) and ``blocks()`` (the K bits of each time step).
    """

    def __init__(self, model: FactorialHMM, y: torch.Tensor):
        super().__init__()
        if not isinstance(y, torch.Tensor) or y.shape != (model.L,):
            got = tuple(y.shape) if isinstance(y, torch.Tensor) else type(y).__name__
            raise ValueError(f"y must have shape ({model.L},) (one observation sequence), got {got}")
        self.model = model
        self.register_buffer("y", y.detach().to(model.W.dtype).clone())
        self.num_dims = model.num_dims

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """log p(x, y): (C, D) -> (C,). Differentiable in x."""
        return self.model.log_joint(x, self.y)

    log_prob = forward
    closed_forms_for = forward  # the density the closed forms below are for (gradmc.core.gradients.own_method)

    @torch.no_grad()
    def log_prob_and_grad(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """f(x) (C,) and grad_x f(x) (C, D) analytically, detached.

        grad_{t,k} = [t=0] logit(alpha_k) + logit(beta_k) ((2 x_{t-1,k} - 1)[t>0] + (2 x_{t+1,k} - 1)[t<L-1])
                     - (W^T x_t + b - y_t) W_k / sigma^2.
        """
        m = self.model
        g = m._grid(x)  # (C, L, K)
        la, l1a = torch.log(m.alpha), torch.log1p(-m.alpha)
        lb, l1b = torch.log(m.beta), torch.log1p(-m.beta)
        r = g @ m.W + m.b - self.y  # (C, L)
        f = -0.5 * (r * r).sum(-1) / m.sigma**2 - m.L * 0.5 * math.log(2 * math.pi * m.sigma**2)
        grad = -(r / m.sigma**2)[..., None] * m.W  # (C, L, K)
        x0 = g[:, 0]
        f = f + x0 @ la + (1 - x0) @ l1a
        grad[:, 0] += la - l1a
        if m.L > 1:
            cur, prev = g[:, 1:], g[:, :-1]
            same = cur * prev + (1 - cur) * (1 - prev)
            f = f + (same * lb + (1 - same) * l1b).sum((1, 2))
            c = lb - l1b  # logit(beta), (K,)
            grad[:, 1:] += c * (2 * prev - 1)
            grad[:, :-1] += c * (2 * cur - 1)
        return f, grad.reshape(x.shape[0], m.num_dims)

    def validate(self, x: torch.Tensor) -> None:
        """Full input check (shape and values in {0, 1}); raises ValueError."""
        check_binary(x, self.num_dims, check_values=True)

    def blocks(self) -> torch.Tensor:
        """(L, K) int64 flat indices of the K bits of each time step."""
        return self.model.blocks()

    def reconstruction_error(self, x: torch.Tensor) -> torch.Tensor:
        """sum_t (W^T x_t + b - y_t)^2 against this posterior's y: (C, D) -> (C,)."""
        return self.model.reconstruction_error(x, self.y)
