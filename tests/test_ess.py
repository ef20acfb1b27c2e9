"""Effective sample size via ArviZ and the Hamming test statistic (gradmc.evaluation.ess)."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from gradmc.evaluation import ess, ess_per_chain, hamming_to_reference

NUM_CHAINS, NUM_DRAWS = 64, 2000


def _ar1(rho: float, num_chains: int, num_draws: int, seed: int) -> np.ndarray:
    """(C, T) stationary Gaussian AR(1) chains x_t = rho x_{t-1} + sqrt(1 - rho^2) e_t, x_0 ~ N(0, 1)."""
    rng = np.random.default_rng(seed)
    x = np.empty((num_chains, num_draws))
    x[:, 0] = rng.standard_normal(num_chains)
    noise = rng.standard_normal((num_chains, num_draws)) * math.sqrt(1 - rho**2)
    for t in range(1, num_draws):
        x[:, t] = rho * x[:, t - 1] + noise[:, t]
    return x


# AR(1): integrated autocorrelation time tau = (1 + rho) / (1 - rho), so ESS = C T (1 - rho) / (1 + rho).
# Tolerances are 5x the relative standard deviation of ess() / theory measured over 30 seeds with
# C = 64, T = 2000 (0.7% at rho = 0, 1.9% at 0.5, 3.5-4% at 0.9; the mean ratio was within 0.3% of 1,
# so the estimator is unbiased here). Rank normalisation is a monotone map of a Gaussian chain, so it
# barely changes the autocorrelations and the AR(1) formula applies to bulk ESS.
@pytest.mark.parametrize("rho,rel_tol", [(0.0, 0.04), (0.5, 0.10), (0.9, 0.20)])
def test_ess_of_ar1_chains_matches_theory(rho, rel_tol):
    x = _ar1(rho, NUM_CHAINS, NUM_DRAWS, seed=int(rho * 10))
    expected = NUM_CHAINS * NUM_DRAWS * (1 - rho) / (1 + rho)
    value = ess(x)
    print(f"rho={rho}: ess={value:.0f} expected={expected:.0f} ratio={value / expected:.3f}")
    assert value == pytest.approx(expected, rel=rel_tol)


def test_ess_pools_all_chains_and_accepts_tensors():
    x = _ar1(0.5, NUM_CHAINS, NUM_DRAWS, seed=1)
    pooled, first = ess(x), ess(x[:1])
    assert pooled > 20 * first  # all 64 chains count, not chain 0 only
    assert ess(torch.from_numpy(x)) == pytest.approx(pooled, rel=1e-12)
    assert ess(x, method="tail") > 0


def test_ess_per_chain_shape_and_scale():
    rho = 0.5
    x = _ar1(rho, NUM_CHAINS, NUM_DRAWS, seed=2)
    per_chain = ess_per_chain(x)
    assert isinstance(per_chain, np.ndarray) and per_chain.shape == (NUM_CHAINS,)
    assert per_chain.dtype == np.float64
    # each chain's ESS has ~11% relative sd; the mean of 64 has ~1.4%: 6% is > 4 sd
    assert per_chain.mean() == pytest.approx(NUM_DRAWS * (1 - rho) / (1 + rho), rel=0.06)
    assert ess_per_chain(torch.from_numpy(x[:3])).shape == (3,)


def test_constant_statistic_gives_nan():
    x = _ar1(0.5, 4, 100, seed=3)
    x[1] = 7.0  # one stuck chain
    per_chain = ess_per_chain(x)
    assert math.isnan(per_chain[1]) and np.isfinite(per_chain[[0, 2, 3]]).all()
    assert math.isnan(ess(np.full((3, 50), 2.0)))
    assert math.isfinite(ess(x))  # pooled: the other chains still vary


def test_ess_errors():
    with pytest.raises(ValueError, match="shape"):
        ess(np.zeros(100))
    with pytest.raises(ValueError, match="shape"):
        ess(np.zeros((2, 3, 4)))
    with pytest.raises(ValueError, match=">= 4 draws"):
        ess(np.random.default_rng(0).normal(size=(4, 3)))
    with pytest.raises(ValueError, match="NaN"):
        ess(np.array([[0.0, 1.0, np.nan, 2.0, 3.0]]))
    with pytest.raises(ValueError, match="method"):
        ess(np.random.default_rng(0).normal(size=(2, 10)), method="quantile")
    with pytest.raises(ValueError, match=">= 4 draws"):
        ess_per_chain(np.zeros((2, 2)))


def test_hamming_to_reference_hand_example():
    reference = torch.tensor([1.0, 0.0, 1.0])
    # T = 2 steps, C = 3 chains, D = 3
    x_tcd = torch.tensor(
        [
            [[1.0, 0.0, 1.0], [0.0, 1.0, 0.0], [1.0, 1.0, 1.0]],  # step 0: distances 0, 3, 1
            [[0.0, 0.0, 1.0], [0.0, 0.0, 0.0], [1.0, 1.0, 0.0]],  # step 1: distances 1, 2, 2
        ]
    )
    expected = torch.tensor([[0, 1], [3, 2], [1, 2]])  # (C, T)
    out = hamming_to_reference(x_tcd, reference)
    assert out.shape == (3, 2) and out.dtype == torch.int64
    assert torch.equal(out, expected)
    assert torch.equal(hamming_to_reference(x_tcd.transpose(0, 1), reference, layout="CTD"), expected)


def test_hamming_to_reference_errors():
    x = torch.zeros(5, 2, 4)
    with pytest.raises(ValueError, match="reference"):
        hamming_to_reference(x, torch.zeros(3))
    with pytest.raises(ValueError, match="only 0 and 1"):
        hamming_to_reference(x, torch.full((4,), 0.5))
    with pytest.raises(ValueError, match="3-D"):
        hamming_to_reference(x[0], torch.zeros(4))
    with pytest.raises(ValueError, match="layout"):
        hamming_to_reference(x, torch.zeros(4), layout="DTC")
    with pytest.raises(TypeError):
        hamming_to_reference(x.numpy(), torch.zeros(4))


def test_ess_discs_keeps_the_second_half_and_sets_stuck_chains_to_one():
    """DISCS protocol: per-chain ESS of the second half. AR(1) chains of T draws: the kept T / 2 draws have
    ESS (T / 2)(1 - rho) / (1 + rho) per chain; a chain stuck at one value has ESS NaN, reported as 1."""
    from gradmc.evaluation.ess import ess_discs_per_chain
    rho = 0.5
    x = _ar1(rho, NUM_CHAINS, NUM_DRAWS, seed=4)
    per_chain = ess_discs_per_chain(x)
    assert per_chain.shape == (NUM_CHAINS,)
    assert per_chain.mean() == pytest.approx((NUM_DRAWS // 2) * (1 - rho) / (1 + rho), rel=0.08)
    # only the second half counts: replacing the first half changes nothing
    y = x.copy()
    y[:, : NUM_DRAWS // 2] = 0.0
    assert np.array_equal(ess_discs_per_chain(y), per_chain)
    stuck = x.copy()
    stuck[0, NUM_DRAWS // 2:] = 3.0
    out = ess_discs_per_chain(stuck)
    assert out[0] == 1.0 and np.array_equal(out[1:], per_chain[1:])
    with pytest.raises(ValueError, match="draws"):
        ess_discs_per_chain(x[:, :6])  # 3 kept draws
