"""Effective sample size of a scalar test statistic over many chains (via ArviZ).

Method: rank-normalised split-chain bulk ESS (Vehtari, Gelman, Simpson, Carpenter, Buerkner 2021,
"Rank-normalization, folding, and localization: an improved R-hat", Sec. 3.2), computed by
``arviz.ess(..., method="bulk")`` on a (chain, draw) array. The GWG paper (Sec. 5.1, Fig. 3-4;
following Zanella 2020) uses as statistic the Hamming distance of the current state to a fixed random
configuration, see :func:`hamming_to_reference`.

Over ALL chains (:func:`ess`): the estimator pools the autocorrelations of every chain (the authors'
code used chain 0 only). Per chain (:func:`ess_per_chain`): one ESS per chain, for box plots over
chains as in GWG Fig. 3 (right).

Constant input: a statistic that never changes carries no information about mixing, but ArviZ then
reports ESS = number of draws, which would reward a stuck chain. We return NaN instead.
"""

from __future__ import annotations

import warnings

import numpy as np
import torch

__all__ = ["ess", "ess_per_chain", "ess_discs_per_chain", "hamming_to_reference", "ESS_METHODS"]

#: ArviZ ESS methods accepted here (those that need no extra ``prob`` argument).
ESS_METHODS = ("bulk", "tail", "mean", "sd", "median", "mad")

_MIN_DRAWS = 4  # ArviZ's own minimum; below it arviz.ess returns NaN with a log message


def _arviz():
    """Import ArviZ lazily (about a second) and without its import-time FutureWarning banner."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        import arviz

    return arviz


def _as_chain_draw(samples) -> np.ndarray:
    """(C, T) tensor or array-like -> float64 numpy (C, T); ValueError on bad shape or values."""
    if isinstance(samples, torch.Tensor):
        samples = samples.detach().to("cpu", torch.float64).numpy()
    arr = np.asarray(samples, dtype=np.float64)
    if arr.ndim != 2:
        raise ValueError(f"samples must have shape (num_chains, num_draws), got shape {arr.shape}")
    if arr.shape[0] < 1 or arr.shape[1] < _MIN_DRAWS:
        raise ValueError(f"ESS needs >= 1 chain and >= {_MIN_DRAWS} draws per chain, got shape {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise ValueError("samples contain NaN or inf")
    return arr


def _check_method(method: str) -> None:
    if method not in ESS_METHODS:
        raise ValueError(f"unknown ESS method {method!r}; expected one of {', '.join(ESS_METHODS)}")


def _ess_or_nan(arr: np.ndarray, method: str) -> float:
    if np.ptp(arr) == 0:
        return float("nan")
    return float(_arviz().ess(arr, method=method))


def ess(samples, method: str = "bulk") -> float:
    """ESS of a scalar statistic pooled over all chains (rank-normalised bulk ESS, ArviZ).

    Args:
        samples: (C, T) tensor or array, chain first: the statistic of chain c after draw t (burn-in
            already removed). C >= 1, T >= 4.
        method: one of :data:`ESS_METHODS`; "bulk" is Vehtari et al. (2021) rank-normalised bulk ESS.

    Returns:
        ESS in draws (a float; can exceed C * T for antithetic chains); NaN if the statistic is
        constant over all chains and draws.

    Raises:
        ValueError: for a non-2-D input, fewer than 4 draws, NaN/inf values or an unknown method.
    """
    _check_method(method)
    return _ess_or_nan(_as_chain_draw(samples), method)


def ess_per_chain(samples, method: str = "bulk") -> np.ndarray:
    """ESS of each chain separately (single-chain split bulk ESS), for box plots over chains.

    Args:
        samples: (C, T) tensor or array as in :func:`ess`.
        method: as in :func:`ess`.

    Returns:
        (C,) float64 numpy array; NaN for a chain whose statistic is constant.

    Raises:
        ValueError: as :func:`ess`.
    """
    _check_method(method)
    arr = _as_chain_draw(samples)
    return np.array([_ess_or_nan(arr[c : c + 1], method) for c in range(arr.shape[0])], dtype=np.float64)


def ess_discs_per_chain(samples) -> np.ndarray:
    """Per-chain ESS under the DISCS benchmark's protocol (Goshvadi et al. 2023, "DISCS: a benchmark for
    discrete sampling", Sec. 4), so numbers compare with DISCS's tables.

    DISCS runs every chain for T steps, drops the first half as burn-in, maps each sample to its Hamming
    distance from one fixed random state (as :func:`hamming_to_reference`), computes the ESS of each chain
    separately and sets a NaN ESS (a chain whose statistic never changed) to 1; its tables report the
    mean over chains (and ESS per second / per energy evaluation from it). DISCS uses TensorFlow
    Probability's autocorrelation estimator; here ArviZ's non-rank-normalised ``"mean"`` ESS of a single
    chain stands in for it (both are Geyer-type initial-sequence estimators of the same quantity; this
    project has no TensorFlow).

    Args:
        samples: (C, T) tensor or array, chain first, the WHOLE run after the initial state (T >= 8, so
            the kept second half has >= 4 draws); the first floor(T / 2) draws are dropped here.

    Returns:
        (C,) float64 numpy array of per-chain ESS in draws, NaN replaced by 1.

    Raises:
        ValueError: as :func:`ess` (on the kept second half).
    """
    arr = _as_chain_draw(samples)
    per_chain = ess_per_chain(arr[:, arr.shape[1] // 2:], method="mean")
    return np.where(np.isnan(per_chain), 1.0, per_chain)


def hamming_to_reference(x_traj: torch.Tensor, reference: torch.Tensor, layout: str = "TCD") -> torch.Tensor:
    """Test statistic of GWG Sec. 5.1-5.2: Hamming distance of each state to a fixed configuration.

    h(x) = sum_i [x_i != r_i], with r a fixed random binary configuration (Zanella 2020).

    Args:
        x_traj: binary trajectory, (T, C, D) if ``layout == "TCD"`` (steps stacked as recorded) or
            (C, T, D) if ``layout == "CTD"``; values are not checked (a full trajectory is large).
        reference: (D,) tensor with values in {0, 1}, on x_traj's device.
        layout: "TCD" or "CTD", the order of the axes of x_traj.

    Returns:
        (C, T) int64 tensor of distances in [0, D], chain first (ready for :func:`ess`).

    Raises:
        TypeError: if an input is not a tensor.
        ValueError: for an unknown layout, a non-3-D trajectory, a reference that is not (D,) with
            values in {0, 1}.
    """
    if not isinstance(x_traj, torch.Tensor) or not isinstance(reference, torch.Tensor):
        raise TypeError("x_traj and reference must be torch.Tensors")
    if layout not in ("TCD", "CTD"):
        raise ValueError(f"layout must be 'TCD' or 'CTD', got {layout!r}")
    if x_traj.dim() != 3:
        raise ValueError(f"x_traj must be 3-D ({', '.join(layout)}), got shape {tuple(x_traj.shape)}")
    D = x_traj.shape[2]
    if reference.shape != (D,):
        raise ValueError(f"reference must have shape ({D},), got {tuple(reference.shape)}")
    if not bool(((reference == 0) | (reference == 1)).all()):
        raise ValueError("reference must contain only 0 and 1")
    dist = (x_traj != reference.to(x_traj.dtype)).sum(-1)  # (T, C) or (C, T)
    return dist.T.contiguous() if layout == "TCD" else dist
