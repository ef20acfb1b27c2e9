"""The autocorrelation of a scalar chain (gradmc.evaluation.autocorrelation) against closed forms."""

from __future__ import annotations

import math

import numpy as np
import pytest

from gradmc.evaluation.autocorrelation import autocorrelation


def test_autocorrelation_of_a_hand_computed_sequence():
    """x = 1, 2, 3, 4: deviations -1.5, -0.5, 0.5, 1.5; gamma_k = (1/4) sum_t d_t d_{t+k} = 5/4, 1.25/4, -1.5/4,
    -2.25/4, so rho = 1, 0.25, -0.3, -0.45 (biased normalisation)."""
    np.testing.assert_allclose(autocorrelation([1.0, 2.0, 3.0, 4.0], 3), [1.0, 0.25, -0.3, -0.45], rtol=0, atol=1e-14)
    np.testing.assert_allclose(autocorrelation(np.array([3.0, -1.0]), 1), [1.0, -0.5], atol=1e-14)


def test_autocorrelation_matches_ar1_closed_form():
    """AR(1) x_t = phi x_{t-1} + e_t has rho_k = phi^k; Bartlett's SE at T = 2e5 is < 0.004 here."""
    phi, T = 0.7, 200_000
    rng = np.random.default_rng(0)
    e = rng.standard_normal(T)
    x = np.empty(T)
    x[0] = e[0] / math.sqrt(1 - phi**2)
    for t in range(1, T):
        x[t] = phi * x[t - 1] + e[t]
    acf = autocorrelation(x, 30)
    np.testing.assert_allclose(acf, phi ** np.arange(31), atol=0.02)
    assert np.isnan(autocorrelation(np.ones(50), 10)).all()
    with pytest.raises(ValueError, match="max_lag"):
        autocorrelation(x[:10], 10)
    with pytest.raises(ValueError, match="NaN"):
        autocorrelation(np.array([1.0, np.nan, 2.0]), 1)
