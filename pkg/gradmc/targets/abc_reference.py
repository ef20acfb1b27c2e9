"""The EXACT ABC posterior of the skew-normal location (KMC Fig. 4 right, reference line; EXPERIMENTS.md B4).

Target: :class:`gradmc.targets.abc_skew_normal.ABCSkewNormalPosterior`. The summary at theta is
theta + delta A + G, A the mean of n half-normals |N(0, 1)|, G ~ N(0, (I - delta delta^T) / n) independent
(the additive skew-normal representation, Azzalini & Capitanio 1999), so the ABC likelihood with the
Gaussian kernel of bandwidth eps is

    p_eps(s_obs | theta) = E_A[N(s_obs - theta; A delta, Sigma)],   Sigma = (I - delta delta^T) / n + eps^2 I.

Given A = a the posterior (prior N(0, v I)) is N(theta; m(a), P), P = (I / v + Sigma^-1)^-1,
m(a) = P Sigma^-1 (s_obs - a delta), with weight proportional to p_A(a) N(s_obs - a delta; 0, v I + Sigma).
p_A is the n-fold convolution of half-normal bin masses (step h, :func:`half_normal_mean_pmf`), so the
reference is a finite Gaussian mixture in closed form, exact up to the grid (O(h^2) in moments).
"""

from __future__ import annotations

import math

import numpy as np
import torch
from scipy import signal, stats

from gradmc.targets.abc_skew_normal import ABCSkewNormalPosterior

__all__ = ["half_normal_mean_pmf", "abc_log_likelihood", "reference_marginal"]


def half_normal_mean_pmf(n: int, h: float = 5e-3) -> tuple[np.ndarray, np.ndarray]:
    """Grid law of A = mean of n i.i.d. |N(0, 1)|: support points a (K,) and masses p (K,), sum 1.

    Bins of width h carry the exact half-normal masses; their n-fold convolution (FFT) is the law of
    the sum of bin midpoints (error O(h^2) in moments). Raises ValueError for n < 1 or h not in (0, 0.1].
    """
    if int(n) != n or n < 1 or not 0 < h <= 0.1:
        raise ValueError(f"need an integer n >= 1 and 0 < h <= 0.1, got n = {n}, h = {h}")
    edges = np.arange(0.0, 9.0 + h, h)
    p1 = np.diff(2.0 * stats.norm.cdf(edges) - 1.0)
    pn = p1
    for _ in range(int(n) - 1):
        pn = np.clip(signal.fftconvolve(pn, p1), 0.0, None)
    a = (np.arange(pn.shape[0]) * h + n * h / 2.0) / n
    return a, pn / pn.sum()


def _mixture(target: ABCSkewNormalPosterior, h: float) -> dict:
    """Given A = a_k (grid): r_k = s_obs - a_k delta (K, d), log p_A(a_k) (K,), Sigma, P (d, d); posterior
    component means m_k = P Sigma^-1 r_k (K, d) and log weights log p_A(a_k) + log N(r_k; 0, v I + Sigma)."""
    d, n = target.dim, target.num_obs
    delta, s_obs = target.simulator.delta.numpy(), target.s_obs.numpy()
    a, pa = half_normal_mean_pmf(n, h)
    keep = pa > 1e-300
    r = s_obs[None, :] - a[keep, None] * delta[None, :]
    sigma = (np.eye(d) - np.outer(delta, delta)) / n + target.epsilon**2 * np.eye(d)
    sigma_inv = np.linalg.inv(sigma)
    P = np.linalg.inv(np.eye(d) / target.prior_var + sigma_inv)
    log_pa = np.log(pa[keep])
    log_w = log_pa + stats.multivariate_normal(np.zeros(d), target.prior_var * np.eye(d) + sigma).logpdf(r)
    return {"r": r, "log_pa": log_pa, "sigma": sigma, "P": P, "m": r @ sigma_inv @ P, "log_w": np.atleast_1d(log_w)}


def abc_log_likelihood(target: ABCSkewNormalPosterior, theta: torch.Tensor, h: float = 5e-3) -> torch.Tensor:
    """Exact log p_eps(s_obs | theta) = log sum_k p_A(a_k) N(r_k - theta; 0, Sigma) (module docstring): (C, d) -> (C,).

    Shares r_k, p_A and Sigma with :func:`reference_marginal`; exact up to the grid of A (step h).
    Raises ValueError if theta is not a (C, d) tensor.
    """
    if not isinstance(theta, torch.Tensor) or theta.ndim != 2 or theta.shape[1] != target.dim:
        raise ValueError(f"theta must be a (C, {target.dim}) tensor, got {getattr(theta, 'shape', type(theta))}")
    mix = _mixture(target, h)
    dist = stats.multivariate_normal(np.zeros(target.dim), mix["sigma"])
    rows = theta.detach().cpu().double().numpy()
    return torch.tensor([float(np.logaddexp.reduce(dist.logpdf(mix["r"] - t) + mix["log_pa"])) for t in rows],
                        dtype=torch.float64)


def reference_marginal(target: ABCSkewNormalPosterior, coord: int = 0, grid: np.ndarray | None = None,
                       h: float = 5e-3) -> dict:
    """Exact ABC posterior marginal of theta_coord (module docstring; KMC Fig. 4 right, reference line).

    Returns a dict with ``mean``, ``std`` (floats), ``grid`` (G,) and ``density`` (G,) on ``grid``
    (default: mean +- 6 sd, 401 points). Raises ValueError for a coordinate outside [0, d).
    """
    if int(coord) != coord or not 0 <= coord < target.dim:
        raise ValueError(f"coord must be an integer in [0, {target.dim}), got {coord}")
    mix = _mixture(target, h)
    P, w = mix["P"], np.exp(mix["log_w"] - mix["log_w"].max())
    w /= w.sum()
    mu = mix["m"][:, coord]
    mean = float(w @ mu)
    std = math.sqrt(P[coord, coord] + float(w @ (mu - mean) ** 2))
    grid = np.linspace(mean - 6 * std, mean + 6 * std, 401) if grid is None else np.asarray(grid, np.float64)
    dens = stats.norm.pdf(grid[:, None], mu[None, :], math.sqrt(P[coord, coord])) @ w
    return {"mean": mean, "std": std, "grid": grid, "density": dens}
