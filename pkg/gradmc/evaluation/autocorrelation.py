"""Autocorrelation of a scalar chain (KMC Fig. 4 right, ACF panel; Geyer 1992).

rho_k = gamma_k / gamma_0 with the biased autocovariance gamma_k = (1/T) sum_{t < T - k} (x_t - mean)(x_{t+k} - mean),
computed by ArviZ's FFT estimator (:func:`arviz.autocorr`).
"""

from __future__ import annotations

import warnings

import numpy as np

__all__ = ["autocorrelation"]


def autocorrelation(chain, max_lag: int) -> np.ndarray:
    """Autocorrelation rho_0..rho_max_lag of a 1-D chain (ArviZ FFT estimator, biased normalisation).

    Args:
        chain: (T,) array-like of floats. max_lag: largest lag, an integer with 0 <= max_lag < T.

    Returns:
        (max_lag + 1,) float64, rho_0 = 1; NaN everywhere for a constant chain.

    Raises:
        ValueError: the chain is not 1-D with T > max_lag >= 0, or holds NaN/inf.
    """
    arr = np.asarray(chain, dtype=np.float64)
    if arr.ndim != 1 or int(max_lag) != max_lag or not 0 <= max_lag < arr.shape[0]:
        raise ValueError(f"chain must be 1-D with more than max_lag = {max_lag} draws, got shape {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise ValueError("chain contains NaN or inf")
    if np.ptp(arr) == 0:
        return np.full(max_lag + 1, np.nan)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        import arviz
    return np.asarray(arviz.autocorr(arr))[: max_lag + 1]
