"""Relaxed samplers of GWG Fig. 2 / Appendix C: R-MALA, R-HMC (exact MCMC on z) and D-SVGD (particles).

Targets are small enough to enumerate:
- a random RBM with 6 visible and 4 hidden units, W ~ N(0, 1), b, c ~ N(0, 1) (marginals 0.62..0.84);
- a 2-bit toy log p(x) = x1 - x2 / 2 + 2 x1 x2 whose relaxation pi(z) = N(z; 0, I) p(1[z > 0]) has known
  one-dimensional marginals: with m_i = P(x_i = 1), the CDF of z_i is 2 (1 - m_i) Phi(t) for t < 0 and
  (1 - m_i) + m_i (2 Phi(t) - 1) for t >= 0.

Checks:
(a) R-MALA and R-HMC: long runs from a uniform start reproduce the exact bit marginals and pairwise
    moments within a tolerance derived from the Monte Carlo error (see ``test_mcmc_matches_exact_moments``);
(b) stationarity on the toy: chains drawn exactly from pi, three steps, KS test of each z_i marginal
    against its exact CDF; teeth: R-MALA without the reverse proposal term and R-HMC accepting with the
    surrogate Hamiltonian (the authors' ``accept_dist="surrogate"``) fail it;
(c) R-HMC accepts and moves (the authors' released relaxed HMC returned all-zero samples);
(d) D-SVGD ends near the exact moments (looser tolerance, justified there) and improves on its start;
    teeth: without the importance weights it does not;
(e) determinism, the surrogate helpers, argument checks.

Every seed is fixed, so statistical tests are deterministic. The kernels run on tiny tensors: the
module uses one torch thread (measured on the 2 loaded cores here: 2 threads made each step 5-10x slower,
the OpenMP workers waiting on each other).
"""

from __future__ import annotations

import math

import pytest
import torch
from scipy import stats

from gradmc.core.exact import exact_distribution
from gradmc.core.gradients import log_prob_and_grad
from gradmc.samplers.base import metropolis_hastings_accept
from gradmc.samplers.relaxed import (
    DSVGD,
    RHMC,
    RMALA,
    RelaxedState,
    bits_from_z,
    relaxed_log_prob,
    surrogate_log_prob,
    surrogate_log_prob_and_grad,
    z_from_bits,
)
from gradmc.samplers.relaxed.dsvgd import rbf_kernel_median
from gradmc.targets import RBM

D, H = 6, 4
IU = torch.triu_indices(D, D, offset=1)


@pytest.fixture(scope="module", autouse=True)
def _one_thread():
    previous = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(previous)


@pytest.fixture(scope="module")
def rbm():
    g = torch.Generator().manual_seed(0)
    model = RBM(D, H, weight_std=1.0, generator=g)
    with torch.no_grad():
        model.b.copy_(torch.randn(D, generator=g))
        model.c.copy_(torch.randn(H, generator=g))
    model.requires_grad_(False)
    return model


@pytest.fixture(scope="module")
def exact_moments(rbm):
    """Exact E[x_i] (D,) and E[x_i x_j] for i < j (D (D - 1) / 2,), float64."""
    states, probs = exact_distribution(rbm, D)
    pair = torch.einsum("k,ki,kj->ij", probs, states, states)
    return probs @ states, pair[IU[0], IU[1]]


def moments(x: torch.Tensor) -> torch.Tensor:
    """(..., D) bits -> (..., D + D (D - 1) / 2): x_i and x_i x_j (i < j), float64."""
    x = x.double()
    return torch.cat([x, x[..., IU[0]] * x[..., IU[1]]], -1)


# ---------------------------------------------------------------------------------------------------
# (a) exactness on the RBM
# ---------------------------------------------------------------------------------------------------
NUM_CHAINS = 256
BURN_IN = 100
NUM_KEEP = 500
Z_TOL = 5.0
FLOOR = 0.002


@pytest.mark.parametrize("sampler", [RMALA(step_size=0.3, temperature=1.0), RHMC(step_size=0.3, temperature=1.0)],
                         ids=["R-MALA", "R-HMC"])
def test_mcmc_matches_exact_moments(sampler, rbm, exact_moments):
    """Bit marginals and pairwise moments of R-MALA / R-HMC against enumeration.

    Tolerance. The C = 256 chains use disjoint noise and independent starts, so each chain's time
    average a_c of a moment over the kept steps is an independent draw of one random variable (batch
    means with one batch per chain; the within-chain autocorrelation only inflates Var(a_c), which the
    spread over chains measures directly). The estimate mean_c a_c then has standard error
    SE = sd_c(a_c) / sqrt(C), and (estimate - exact) / SE is approximately N(0, 1) (CLT over 256
    chains; SE itself is estimated to within 1 / sqrt(2 (C - 1)) ~ 4%). Requiring |error| < 5 SE for
    all 21 moments fails a correct sampler with probability <= 21 * 5.7e-7 ~ 1e-5. The floor 0.002
    absorbs what the CLT does not cover: the bias left by the 100 burn-in steps from the uniform start
    (the chains flip 0.7-1.3 bits per step here) and float32 rounding in the RBM.
    """
    g = torch.Generator().manual_seed(1)
    x0 = torch.bernoulli(torch.full((NUM_CHAINS, D), 0.5), generator=g)
    state = sampler.init(x0, rbm, g)
    acc = torch.zeros(NUM_CHAINS, dtype=torch.float64)
    sums = torch.zeros(NUM_CHAINS, D + IU.shape[1], dtype=torch.float64)
    for t in range(BURN_IN + NUM_KEEP):
        state, info = sampler.step(state, rbm, g)
        if t >= BURN_IN:
            sums += moments(state.x)
            acc += info.acceptance_prob.double()
    per_chain = sums / NUM_KEEP  # (C, 21)
    estimate = per_chain.mean(0)
    se = per_chain.std(0) / math.sqrt(NUM_CHAINS)
    exact = torch.cat(exact_moments)
    err = (estimate - exact).abs()
    assert torch.equal(state.x, sampler.bits(state))
    assert 0.3 < float(acc.mean()) / NUM_KEEP < 0.9
    assert bool((err < Z_TOL * se + FLOOR).all()), (
        f"max |err| {float(err.max()):.4f}, max |err| / SE {float((err / se).max()):.2f}, SE max {float(se.max()):.4f}"
    )


# ---------------------------------------------------------------------------------------------------
# (b) stationarity of the z-kernel on a 2-bit toy, with teeth
# ---------------------------------------------------------------------------------------------------
def toy_log_prob(x: torch.Tensor) -> torch.Tensor:
    """(C, 2) bits or relaxed values in [0, 1] -> (C,)."""
    return x[:, 0] - 0.5 * x[:, 1] + 2.0 * x[:, 0] * x[:, 1]


def toy_z_cdf(t, m: float):
    """Exact CDF of z_i under pi for a bit with marginal m = P(x_i = 1)."""
    phi = stats.norm.cdf(t)
    return torch.where(torch.as_tensor(t) < 0, torch.as_tensor(2.0 * (1.0 - m) * phi),
                       torch.as_tensor((1.0 - m) + m * (2.0 * phi - 1.0))).numpy()


class RMALANoReverse(RMALA):
    """Deliberately WRONG R-MALA: accepts with pi(z') / pi(z), the q(z|z') / q(z'|z) term dropped."""

    def step(self, state, log_prob, generator):
        z = state.z
        _, grad = surrogate_log_prob_and_grad(log_prob, z, self.temperature)
        noise = torch.randn(z.shape, generator=generator, dtype=z.dtype)
        z_new = self.proposal_mean(z, grad) + math.sqrt(2.0 * self.step_size) * noise
        log_alpha = relaxed_log_prob(log_prob, z_new) - relaxed_log_prob(log_prob, z)
        accepted, _ = metropolis_hastings_accept(log_alpha, generator)
        z_out = torch.where(accepted[:, None], z_new, z)
        return RelaxedState(bits_from_z(z_out), z_out, relaxed_log_prob(log_prob, z_out)), None


class RHMCSurrogateAccept(RHMC):
    """Deliberately WRONG R-HMC: accepts with the relaxed Hamiltonian H_lambda instead of H (Eq. 26)."""

    def step(self, state, log_prob, generator):
        z = state.z
        v = torch.randn(z.shape, generator=generator, dtype=z.dtype)
        z_new, v_new = self.leapfrog(z, v, log_prob)
        with torch.no_grad():
            h_old = -surrogate_log_prob(log_prob, z, self.temperature) + 0.5 * (v * v).sum(-1)
            h_new = -surrogate_log_prob(log_prob, z_new, self.temperature) + 0.5 * (v_new * v_new).sum(-1)
        accepted, _ = metropolis_hastings_accept(h_old - h_new, generator)
        z_out = torch.where(accepted[:, None], z_new, z)
        return RelaxedState(bits_from_z(z_out), z_out, relaxed_log_prob(log_prob, z_out)), None


N_KS = 20_000
KS_STEPS = 3
# Two KS tests per sampler; a correct kernel fails either with probability <= 2 * 1e-3.
P_MIN = 1e-3


def _toy_after_steps(sampler, seed: int = 3):
    """N_KS chains drawn exactly from pi (float64), KS_STEPS steps; returns (z, KS p-values, mean acceptance)."""
    states, probs = exact_distribution(toy_log_prob, 2)
    marg = probs @ states
    g = torch.Generator().manual_seed(seed)
    x0 = states[torch.multinomial(probs, N_KS, replacement=True, generator=g)]
    state = sampler.init(x0, toy_log_prob, g)
    accept = []
    for _ in range(KS_STEPS):
        state, info = sampler.step(state, toy_log_prob, g)
        if info is not None:
            accept.append(info.acceptance_prob.mean())
    p = [stats.kstest(state.z[:, i].numpy(), lambda t, m=float(marg[i]): toy_z_cdf(t, m)).pvalue for i in range(2)]
    acc = float(torch.stack(accept).mean()) if accept else float("nan")
    return state.z, p, acc


@pytest.mark.parametrize("sampler", [RMALA(step_size=0.5, temperature=1.0), RHMC(step_size=0.3, temperature=1.0),
                                     RMALA(step_size=0.5, temperature=0.5)], ids=["R-MALA", "R-HMC", "R-MALA-lam0.5"])
def test_stationarity_ks(sampler):
    z, p, acc = _toy_after_steps(sampler)
    assert min(p) > P_MIN, p
    assert acc > 0.3  # the test is not vacuous: most chains moved
    assert z.dtype == torch.float64


@pytest.mark.parametrize("wrong", [RMALANoReverse(step_size=0.5, temperature=1.0),
                                   RHMCSurrogateAccept(step_size=0.3, temperature=1.0)],
                         ids=["R-MALA-no-reverse", "R-HMC-surrogate-accept"])
def test_stationarity_ks_has_teeth(wrong):
    _, p, _ = _toy_after_steps(wrong)
    assert max(p) < 1e-6, p


# ---------------------------------------------------------------------------------------------------
# (c) R-HMC accepts and moves (the authors' released code returned zeros)
# ---------------------------------------------------------------------------------------------------
def test_rhmc_moves_on_paper_rbm():
    """Paper-style random RBM (Appendix C.2: W ~ N(0, 0.05), b, c ~ N(0, 1)), D = 50, H = 100, eps = 0.1, lambda = 1."""
    g = torch.Generator().manual_seed(5)
    model = RBM(50, 100, weight_std=math.sqrt(0.05), generator=g)
    with torch.no_grad():
        model.b.copy_(torch.randn(50, generator=g))
        model.c.copy_(torch.randn(100, generator=g))
    sampler = RHMC(step_size=0.1, temperature=1.0)
    x0 = torch.bernoulli(torch.full((32, 50), 0.5), generator=g)
    state = sampler.init(x0, model, g)
    z0 = state.z.clone()
    accepted = []
    for _ in range(10):
        state, info = sampler.step(state, model, g)
        accepted.append(info.accepted)
        assert info.energy_evals == 8 and info.grad_evals == 6
    rate = float(torch.stack(accepted).double().mean())
    assert rate > 0.2, rate
    assert bool((state.z != z0).any(-1).all())  # every chain moved
    assert bool((state.x != x0).any(-1).all())  # and its bits changed
    assert float(state.x.mean()) > 0.1  # not the all-zero output of the released code
    assert bool(torch.isfinite(state.log_prob).all())


# ---------------------------------------------------------------------------------------------------
# (d) D-SVGD
# ---------------------------------------------------------------------------------------------------
NUM_PARTICLES = 128
SVGD_STEPS = 400
# D-SVGD is biased for finite n, so no Monte Carlo error is exact here. The yardstick is n independent
# exact draws: their moment estimates have standard error sqrt(m (1 - m) / n) <= 0.5 / sqrt(n) = 0.044.
# We accept any moment within 4 such worst-case SEs (0.177): "about as good as n exact samples". The
# uniform start is off by 0.29-0.40 (marginals) and 0.38-0.43 (pairs) depending on the seed; measured
# D-SVGD at this setting (lr 0.1, lambda 2, 400 steps): 0.07-0.10 and 0.08-0.13 over 4 seeds; without
# the importance weights 0.22-0.26 and 0.28-0.35.
SVGD_TOL = 4 * 0.5 / math.sqrt(NUM_PARTICLES)


class DSVGDUnweighted(DSVGD):
    """Deliberately WRONG D-SVGD: plain SVGD on the surrogate, importance weights replaced by 1 / n."""

    def stein_direction(self, z, log_prob):
        _, grad = surrogate_log_prob_and_grad(log_prob, z, self.temperature)
        w = torch.full((z.shape[0],), 1.0 / z.shape[0], dtype=z.dtype)
        K, h = rbf_kernel_median(z)
        kw = K * w[None, :]
        return kw @ grad + (z * kw.sum(-1, keepdim=True) - kw @ z) / h, w


def _svgd_errors(cls, rbm, exact_moments, seed=0):
    g = torch.Generator().manual_seed(seed)
    x0 = torch.bernoulli(torch.full((NUM_PARTICLES, D), 0.5), generator=g)
    sampler = cls(learning_rate=0.1, temperature=2.0)
    state = sampler.init(x0, rbm, g)
    exact = torch.cat(exact_moments)
    err0 = (moments(state.x).mean(0) - exact).abs()
    for _ in range(SVGD_STEPS):
        state, info = sampler.step(state, rbm, g)
    err = (moments(sampler.bits(state)).mean(0) - exact).abs()
    return err0, err, state, info


def test_dsvgd_approaches_exact_moments(rbm, exact_moments):
    err0, err, state, info = _svgd_errors(DSVGD, rbm, exact_moments)
    assert float(err.max()) < SVGD_TOL, err
    assert float(err.max()) < 0.5 * float(err0.max())
    assert float(err.mean()) < 0.5 * float(err0.mean())
    assert state.num_steps == SVGD_STEPS and torch.equal(state.x, bits_from_z(state.z))
    assert 1.0 <= float(state.weight_ess) <= NUM_PARTICLES
    assert bool(info.accepted.all()) and info.energy_evals == 2 and info.grad_evals == 1


def test_dsvgd_without_weights_has_teeth(rbm, exact_moments):
    _, err, _, _ = _svgd_errors(DSVGDUnweighted, rbm, exact_moments)
    assert float(err.max()) > SVGD_TOL, err


def test_dsvgd_adam_matches_torch_optim(rbm):
    """The functional Adam in the state equals torch.optim.Adam driven by grad = -phi."""
    g = torch.Generator().manual_seed(2)
    x0 = torch.bernoulli(torch.full((16, D), 0.5), generator=g)
    sampler = DSVGD(learning_rate=0.05, temperature=1.0)
    state = sampler.init(x0, rbm, g)
    param = torch.nn.Parameter(state.z.clone())
    opt = torch.optim.Adam([param], lr=0.05, betas=sampler.betas, eps=sampler.eps)
    for _ in range(3):
        phi, _ = sampler.stein_direction(param.detach(), rbm)
        opt.zero_grad()
        param.grad = -phi
        opt.step()
        state, _ = sampler.step(state, rbm)
    torch.testing.assert_close(state.z, param.detach(), rtol=1e-5, atol=1e-6)


def test_rbf_kernel_median():
    z = torch.tensor([[0.0, 0.0], [3.0, 0.0], [0.0, 4.0]], dtype=torch.float64)
    K, h = rbf_kernel_median(z)
    # squared distances 9, 16, 25: median 16, h = 16 / (2 log 4)
    assert float(h) == pytest.approx(16.0 / (2.0 * math.log(4.0)))
    assert float(K[0, 2]) == pytest.approx(math.exp(-16.0 / (2.0 * float(h))))  # = 1 / (n + 1)
    assert float(K[0, 2]) == pytest.approx(0.25)
    torch.testing.assert_close(K.diagonal(), torch.ones(3, dtype=torch.float64))
    K_same, _ = rbf_kernel_median(torch.zeros(4, 2))  # coincident particles: no division by zero
    assert bool(torch.isfinite(K_same).all())


def test_dsvgd_init_checks(rbm):
    x = torch.zeros(4, D)
    with pytest.raises(ValueError, match="generator"):
        DSVGD(learning_rate=0.1, temperature=1.0).init(x, rbm)
    with pytest.raises(ValueError, match="n >= 2"):
        DSVGD(learning_rate=0.1, temperature=1.0).init_from_z(x[:1], rbm, -torch.ones(1, D))
    with pytest.raises(ValueError, match="n >= 2"):
        DSVGD(learning_rate=0.1, temperature=1.0).init(x[:1], rbm, torch.Generator().manual_seed(0))


@pytest.mark.parametrize("sampler", [RMALA(step_size=0.3, temperature=1.0), RHMC(step_size=0.3, temperature=1.0),
                                     DSVGD(learning_rate=0.1, temperature=1.0)], ids=["R-MALA", "R-HMC", "D-SVGD"])
def test_init_with_a_generator_draws_z_from_bits(sampler, rbm):
    """init(x, f, g) starts at z = z_from_bits(x, g), the same draw as init_from_z with that z."""
    x = torch.bernoulli(torch.full((6, D), 0.5), generator=torch.Generator().manual_seed(2))
    state = sampler.init(x, rbm, torch.Generator().manual_seed(9))
    z = z_from_bits(x, torch.Generator().manual_seed(9))
    assert torch.equal(state.z, z) and torch.equal(state.x, x)
    assert torch.equal(sampler.init_from_z(x, rbm, z).z, z)


# ---------------------------------------------------------------------------------------------------
# (e) determinism, helpers, argument checks
# ---------------------------------------------------------------------------------------------------
def _run(sampler, rbm, seed: int, steps: int = 5) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    x0 = torch.bernoulli(torch.full((16, D), 0.5), generator=g)
    state = sampler.init(x0, rbm, g)
    for _ in range(steps):
        state, _ = sampler.step(state, rbm, g)
    return state.z


@pytest.mark.parametrize("sampler", [RMALA(step_size=0.3, temperature=1.0), RHMC(step_size=0.3, temperature=1.0),
                                     DSVGD(learning_rate=0.1, temperature=1.0)], ids=["R-MALA", "R-HMC", "D-SVGD"])
def test_determinism(sampler, rbm):
    assert torch.equal(_run(sampler, rbm, 11), _run(sampler, rbm, 11))
    assert not torch.equal(_run(sampler, rbm, 11), _run(sampler, rbm, 12))


def test_relaxation_helpers(rbm):
    g = torch.Generator().manual_seed(4)
    x = torch.bernoulli(torch.full((64, D), 0.5), generator=g)
    z = z_from_bits(x, g)
    assert torch.equal(bits_from_z(z), x)
    # exact target: -||z||^2 / 2 + log p(bits)
    torch.testing.assert_close(relaxed_log_prob(rbm, z), -0.5 * (z * z).sum(-1) + rbm(x))
    # surrogate gradient = autograd of the closed form; as lambda -> 0 the surrogate tends to the target
    f, grad = surrogate_log_prob_and_grad(rbm, z, 0.7)
    f_ref, grad_ref = log_prob_and_grad(lambda zz: -0.5 * (zz * zz).sum(-1) + rbm(torch.sigmoid(zz / 0.7)), z)
    torch.testing.assert_close(f, f_ref)
    torch.testing.assert_close(grad, grad_ref)
    torch.testing.assert_close(surrogate_log_prob(rbm, z, 1e-4), relaxed_log_prob(rbm, z), rtol=1e-4, atol=1e-3)
    # init without z: right orthant, deterministic magnitude sqrt(2 / pi)
    state = RMALA(step_size=0.1, temperature=1.0).init(x, rbm)
    torch.testing.assert_close(state.z.abs(), torch.full_like(x, math.sqrt(2.0 / math.pi)))
    assert torch.equal(state.x, x)


def test_info_and_costs(rbm):
    g = torch.Generator().manual_seed(6)
    x = torch.bernoulli(torch.full((8, D), 0.5), generator=g)
    for sampler, evals in [(RMALA(0.3, 1.0), (4, 2)), (RHMC(0.3, 1.0, num_leapfrog_steps=3), (6, 4))]:
        state = sampler.init(x, rbm, g)
        new, info = sampler.step(state, rbm, g)
        assert (info.energy_evals, info.grad_evals) == evals
        torch.testing.assert_close(info.sites_changed, (new.x != state.x).sum(-1))
        assert info.accepted.shape == (8,) and info.acceptance_prob.shape == (8,)
        assert torch.equal(new.z[~info.accepted], state.z[~info.accepted])
        torch.testing.assert_close(new.log_prob, relaxed_log_prob(rbm, new.z))


@pytest.mark.parametrize("make", [lambda: RMALA(step_size=0.0, temperature=1.0),
                                  lambda: RMALA(step_size=0.1, temperature=-1.0),
                                  lambda: RHMC(step_size=0.1, temperature=1.0, num_leapfrog_steps=0),
                                  lambda: RHMC(step_size=float("nan"), temperature=1.0),
                                  lambda: DSVGD(learning_rate=0.0, temperature=1.0),
                                  lambda: DSVGD(learning_rate=0.1, temperature=0.0),
                                  lambda: DSVGD(learning_rate=0.1, temperature=1.0, betas=(0.9, 1.0))])
def test_bad_arguments(make):
    with pytest.raises(ValueError):
        make()


def test_init_rejects_inconsistent_z(rbm):
    x = torch.ones(3, D)
    sampler = RHMC(step_size=0.1, temperature=1.0)
    with pytest.raises(ValueError, match="1\\[z > 0\\]"):
        sampler.init_from_z(x, rbm, -torch.ones(3, D))
    with pytest.raises(ValueError, match="shape"):
        sampler.init_from_z(x, rbm, torch.ones(3, D + 1))
    with pytest.raises(ValueError, match="finite"):
        sampler.init_from_z(x, rbm, torch.full((3, D), float("inf")))
    with pytest.raises(ValueError):
        sampler.init(torch.full((3, D), 0.5), rbm)
