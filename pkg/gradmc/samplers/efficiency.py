"""Exact asymptotic efficiency of a reversible Markov kernel on an enumerated state space (GWG Sec. 4, Eq. 7-8),
and the exact kernel of the locally balanced proposal GWG approximates (Zanella 2020; GWG Eq. 2, App. A).

On a space small enough to enumerate (S = 2**D binary states, D <= ~12), a kernel is its (S, S) transition
matrix P (:func:`gradmc.samplers.enumerate.transition_matrix`) and the target its probability vector pi (S,).
For P reversible with respect to pi:

- the spectral gap is Gap(P) = 1 - lambda_2, lambda_2 the second largest eigenvalue of P (GWG Eq. 8). P is
  similar to the symmetric matrix diag(pi)^(1/2) P diag(pi)^(-1/2), so its eigenvalues are real;
- the asymptotic variance of h is var_p(h, P) = lim_T T var((1/T) sum_t h(x_t)) (GWG Eq. 7) for a stationary
  chain: var_p(h) + 2 sum_{k >= 1} cov(h(x_0), h(x_k)) = <h0, (2 Z - I) h0>_pi, where h0 = h - E_pi[h] and
  Z = (I - P + 1 pi^T)^(-1) is the fundamental matrix (Kemeny & Snell).
"""

from __future__ import annotations

import torch

from gradmc.samplers.enumerate import detailed_balance_error

__all__ = ["spectral_gap", "asymptotic_variance", "locally_balanced_kernel"]


def _check(P: torch.Tensor, pi: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    P, pi = P.to(torch.float64), pi.to(torch.float64)
    S = pi.shape[0]
    if P.shape != (S, S):
        raise ValueError(f"P must be (S, S) for pi of S = {S} states, got {tuple(P.shape)}")
    if not bool(torch.isfinite(P).all()) or not bool(torch.isfinite(pi).all()):
        raise ValueError("P and pi must be finite")
    if bool((pi <= 0).any()) or abs(float(pi.sum()) - 1.0) > 1e-9:
        raise ValueError("pi must be a positive probability vector (sum 1)")
    if float((P.sum(1) - 1.0).abs().max()) > 1e-9 or bool((P < -1e-12).any()):
        raise ValueError("P must be a transition matrix: non-negative rows that sum to 1")
    if detailed_balance_error(P, pi) > 1e-9:
        raise ValueError("P is not reversible with respect to pi (the spectral gap and this asymptotic variance "
                         "formula are for reversible kernels)")
    return P, pi


def spectral_gap(P: torch.Tensor, pi: torch.Tensor) -> float:
    """Gap(P) = 1 - lambda_2 (GWG Eq. 8) of a pi-reversible kernel.

    Args:
        P: (S, S) transition matrix, rows sum to 1.
        pi: (S,) its stationary distribution (positive, sums to 1).

    Returns:
        1 minus the second largest eigenvalue of P (in [0, 2]; 0 for a reducible kernel).

    Raises:
        ValueError: shapes that do not match, non-finite entries, P not a transition matrix, pi not a
            positive distribution, or P not reversible with respect to pi (tolerance 1e-9).
    """
    P, pi = _check(P, pi)
    root = pi.sqrt()
    symmetric = root[:, None] * P / root[None, :]
    eigenvalues = torch.linalg.eigvalsh(0.5 * (symmetric + symmetric.T))  # ascending
    return float(1.0 - eigenvalues[-2])


def asymptotic_variance(P: torch.Tensor, pi: torch.Tensor, h: torch.Tensor) -> torch.Tensor:
    """var_p(h, P) = lim_T T var((1/T) sum_t h(x_t)) (GWG Eq. 7) for a stationary pi-reversible chain.

    Args:
        P: (S, S) transition matrix; pi: (S,) its stationary distribution.
        h: (S,) or (S, K): K functions of the state, one column each.

    Returns:
        (K,) or a 0-d tensor (float64): <h0, (2 Z - I) h0>_pi per function (module docstring).

    Raises:
        ValueError: as :func:`spectral_gap`; or h without S rows.
    """
    P, pi = _check(P, pi)
    H = h.to(torch.float64)
    single = H.dim() == 1
    H = H[:, None] if single else H
    if H.shape[0] != pi.shape[0]:
        raise ValueError(f"h must have S = {pi.shape[0]} rows, got {tuple(h.shape)}")
    H0 = H - pi @ H
    S = pi.shape[0]
    Z = torch.linalg.inv(torch.eye(S, dtype=torch.float64) - P + pi[None, :].expand(S, S))
    out = (pi[:, None] * H0 * (2.0 * (Z @ H0) - H0)).sum(0)
    return out[0] if single else out


def locally_balanced_kernel(log_p: torch.Tensor, dim: int) -> torch.Tensor:
    """The exact Metropolis-Hastings kernel of the locally balanced single-flip proposal
    q(x' | x) proportional to exp((f(x') - f(x)) / 2) over the D states one bit away (GWG Eq. 2 with g(t) = sqrt(t);
    the proposal GWG approximates with a first-order Taylor expansion, Eq. 3-5).

    Args:
        log_p: (2**D,) f(x) (unnormalised log-probability) of every binary state in
            :func:`gradmc.core.exact.enumerate_binary` order (bit i of the state index, most significant
            first, is x_i).
        dim: D.

    Returns:
        (2**D, 2**D) float64 transition matrix: off-diagonal q(x'|x) min(1, p(x') q(x|x') / (p(x) q(x'|x))),
        rejected mass on the diagonal.

    Raises:
        ValueError: log_p not of 2**D finite entries.
    """
    f = log_p.to(torch.float64)
    S = 2 ** dim
    if f.shape != (S,) or not bool(torch.isfinite(f).all()):
        raise ValueError(f"log_p must hold {S} finite values (every state of D = {dim}), got shape {tuple(f.shape)}")
    index = torch.arange(S)
    flips = index[:, None] ^ (1 << torch.arange(dim - 1, -1, -1))[None, :]  # (S, D): x with bit i flipped
    log_q = torch.log_softmax((f[flips] - f[:, None]) / 2.0, dim=1)  # (S, D): log q(flip i | x)
    # the reverse move from x' = flip_i(x) flips i again; its q-row is log_q[x'] at column i
    log_q_back = log_q[flips, torch.arange(dim)[None, :].expand(S, dim)]
    log_alpha = (f[flips] - f[:, None] + log_q_back - log_q).clamp(max=0.0)
    P = torch.zeros(S, S, dtype=torch.float64)
    P.scatter_(1, flips, torch.exp(log_q + log_alpha))
    P[index, index] = 1.0 - P.sum(1)
    return P
