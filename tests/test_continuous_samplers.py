"""Continuous kernels of the Kernel HMC paper (B0) and their targets (B1, B2).

Tolerances from Monte Carlo error (``assert_moments``): C independent chains start from exact draws of
the target and run T steps; for a statistic h, chain c's time average a_c = mean_t h(x_t^c) is an
unbiased estimate of E_pi[h] when the kernel leaves pi invariant, and the a_c are i.i.d. across chains
(one batch mean per chain). So the grand mean has standard error SE = sd(a_c) / sqrt(C) (autocorrelation
inside a chain is absorbed in sd(a_c)); we require |mean - E_pi[h]| < 5 SE for every statistic (false
alarm probability 6e-7 each under the CLT) and also that SE is small enough for the check to have teeth.

Checks: (a) HMC, KMC with the exact score, and KMC with a WRONG surrogate (wrong mean and scale) match
the mean and covariance of a correlated 2-D Gaussian (true-target acceptance keeps KMC exact; teeth:
accepting with the surrogate's own Hamiltonian is detected, |z| about 48); (b) RW
Metropolis: one-step stationarity from exact draws, KS test (teeth: without the MH correction it
fails); (c) adaptive Metropolis matches the moments and learns the covariance; (d) HMC on the 8-D banana
recovers E[y] = 0; (e) pseudo-marginal MH with log-normal mean-one noise targets the exact posterior;
(f) determinism; (g) Info accounting; (h) target gradients and argument checks.
"""

from __future__ import annotations

import math

import pytest
import torch
from scipy import stats

from gradmc.samplers.continuous import (
    HMC,
    KMC,
    AdaptiveMetropolis,
    GaussianRandomWalkMetropolis,
    GaussianRandomWalkProposal,
    PseudoMarginalMH,
    adapt_log_scale,
)
from gradmc.targets.continuous import Banana, Gaussian, random_gamma_gaussian

DT = torch.float64
Z_TOL = 5.0


@pytest.fixture(autouse=True, scope="module")
def one_thread():
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)


def gen(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def gauss2d() -> Gaussian:
    return Gaussian(torch.tensor([1.0, -1.0], dtype=DT), torch.tensor([[1.0, 0.8], [0.8, 1.5]], dtype=DT))


def run(kernel, target, x0, steps, seed, burn=0, **init_kw):
    g = gen(seed)
    state = kernel.init(x0, target, **init_kw)
    xs, acc = [], []
    for t in range(steps):
        state, info = kernel.step(state, target, g)
        if t >= burn:
            xs.append(state.x)
            acc.append(info.acceptance_prob)
    return torch.stack(xs, 1), torch.stack(acc, 1)  # (C, T, d), (C, T)


def moment_stats(xs: torch.Tensor, mean: torch.Tensor) -> torch.Tensor:
    """Per chain time averages of x_i and (x_i - m_i)(x_j - m_j), i <= j: (C, k)."""
    r = xs - mean
    i, j = torch.triu_indices(xs.shape[-1], xs.shape[-1])
    return torch.cat([xs.mean(1), (r[..., i] * r[..., j]).mean(1)], dim=1)


def assert_moments(batch: torch.Tensor, truth: torch.Tensor, max_se: float) -> tuple[torch.Tensor, torch.Tensor]:
    est = batch.mean(0)
    se = batch.std(0) / math.sqrt(batch.shape[0])
    assert (se < max_se).all(), f"MC error too large to test anything: {se}"
    z = (est - truth).abs() / se
    assert (z < Z_TOL).all(), f"estimate {est} vs truth {truth}: |z| = {z}"
    return est - truth, se


def gauss_truth(t: Gaussian) -> torch.Tensor:
    i, j = torch.triu_indices(t.dim, t.dim)
    return torch.cat([t.mean, t.cov[i, j]])


class ScaledWrongScore:
    """A deliberately wrong surrogate: the score of N(mean + 0.7, 3 cov)."""

    def __init__(self, t: Gaussian):
        self.inner = Gaussian(t.mean + 0.7, 3.0 * t.cov)

    def grad(self, x):
        return self.inner.grad(x)


@pytest.mark.parametrize("which", ["hmc", "kmc_exact", "kmc_wrong"])
def test_gaussian_moments(which):
    t = gauss2d()
    x0 = t.sample(400, gen(1))
    if which == "hmc":
        k = HMC((0.2, 0.5), (2, 6))
    else:
        k = KMC(t if which == "kmc_exact" else ScaledWrongScore(t), (0.2, 0.5), (2, 6))
    xs, acc = run(k, t, x0, 100, seed=2)
    assert_moments(moment_stats(xs, t.mean), gauss_truth(t), max_se=0.03)
    if which == "kmc_wrong":
        _, acc_exact = run(KMC(t, (0.2, 0.5), (2, 6)), t, x0, 100, seed=2)
        assert acc.mean() < acc_exact.mean() - 0.05  # the surrogate matters for efficiency, not correctness
        assert acc.mean() > 0.05


def test_teeth_accepting_with_the_surrogate_is_detected():
    # the same wrong surrogate, accepted with ITS OWN Hamiltonian (samples the surrogate, not pi): must fail
    t, sur = gauss2d(), ScaledWrongScore(gauss2d())
    xs, _ = run(KMC(sur, (0.2, 0.5), (2, 6)), sur.inner, t.sample(400, gen(1)), 100, seed=2)
    with pytest.raises(AssertionError):
        assert_moments(moment_stats(xs, t.mean), gauss_truth(t), max_se=0.1)


def test_kmc_wrong_surrogate_moves_chains_from_bad_start():
    t = gauss2d()
    x0 = torch.full((400, 2), 4.0, dtype=DT)
    xs, _ = run(KMC(ScaledWrongScore(t), (0.2, 0.5), (2, 6)), t, x0, 300, seed=3, burn=150)
    assert_moments(moment_stats(xs, t.mean), gauss_truth(t), max_se=0.05)


def test_rwm_one_step_stationarity_ks():
    t = Gaussian(torch.tensor([1.0], dtype=DT), torch.tensor([[4.0]], dtype=DT))
    x0 = t.sample(20000, gen(4))
    cdf = stats.norm(loc=1.0, scale=2.0).cdf
    xs, acc = run(GaussianRandomWalkMetropolis(3.0), t, x0, 3, seed=5)
    assert 0.3 < acc.mean() < 0.9
    for s in range(3):
        assert stats.kstest(xs[:, s, 0].numpy(), cdf).pvalue > 1e-3
    # teeth: the same proposal without the Metropolis-Hastings correction is detected
    x = x0
    g = gen(5)
    for _ in range(3):
        x = x + 3.0 * torch.randn(x.shape, generator=g, dtype=DT)
    assert stats.kstest(x[:, 0].numpy(), cdf).pvalue < 1e-6


def test_adapt_log_scale_reaches_target_acceptance():
    t = Gaussian(torch.zeros(4, dtype=DT), torch.eye(4, dtype=DT))
    x = t.sample(200, gen(6))
    log_s = torch.full((200,), math.log(0.05), dtype=DT)
    g = gen(7)
    state = GaussianRandomWalkMetropolis(1.0).init(x, t)
    for i in range(400):
        state, info = GaussianRandomWalkMetropolis(log_s.exp()).step(state, t, g)
        log_s = adapt_log_scale(log_s, info.acceptance_prob, i)
    _, acc = run(GaussianRandomWalkMetropolis(log_s.exp()), t, state.x, 200, seed=8)  # frozen after burn-in
    assert abs(acc.mean().item() - 0.234) < 0.03


def test_adaptive_metropolis_moments_and_learned_covariance():
    t = gauss2d()
    k = AdaptiveMetropolis(initial_scale=0.5, adapt_start=50)
    xs, _ = run(k, t, t.sample(400, gen(9)), 300, seed=10)
    assert_moments(moment_stats(xs, t.mean), gauss_truth(t), max_se=0.05)
    state = k.init(t.sample(50, gen(11)), t)
    g = gen(12)
    for _ in range(1500):
        state, _ = k.step(state, t, g)
    learned = k.proposal_cov(state).mean(0) / (2.38**2 / 2)
    assert torch.allclose(learned, t.cov, atol=0.25)


def test_hmc_banana_mean_zero():
    t = Banana()
    xs, acc = run(HMC((0.6, 1.3), (10, 20)), t, t.sample(200, gen(13)), 40, seed=14)
    assert acc.mean() > 0.5
    assert_moments(xs.mean(1), torch.zeros(8, dtype=DT), max_se=torch.tensor([2.0] + [1.0] * 7))


def test_pseudo_marginal_targets_exact_posterior():
    # prior N(0, 1), one observation y = 1 ~ N(theta, 1): posterior N(1/2, 1/2)
    sigma = 1.0

    def log_est(x, generator):
        th = x[:, 0]
        noise = sigma * torch.randn(th.shape, generator=generator, dtype=x.dtype) - 0.5 * sigma**2
        return -0.5 * th**2 - 0.5 * (1.0 - th) ** 2 + noise  # log of exact * mean-one log-normal

    post = Gaussian(torch.tensor([0.5], dtype=DT), torch.tensor([[0.5]], dtype=DT))
    k = PseudoMarginalMH(GaussianRandomWalkProposal(1.2))
    xs, acc = run(k, log_est, post.sample(2000, gen(15)), 400, seed=16, burn=100, generator=gen(17))
    assert 0.1 < acc.mean() < 0.6
    assert_moments(moment_stats(xs, post.mean), gauss_truth(post), max_se=0.02)


def make_kernels(t):
    def log_est(x, generator):
        return t(x) + 0.3 * torch.randn(x.shape[0], generator=generator, dtype=x.dtype) - 0.045

    return [
        (HMC((0.1, 0.3), (2, 4)), t, {}),
        (KMC(t, (0.1, 0.3), (2, 4)), t, {}),
        (KMC(t, (0.1, 0.3), (2, 4), pseudo_marginal=True), log_est, {"generator": gen(0)}),
        (GaussianRandomWalkMetropolis(0.5), t, {}),
        (AdaptiveMetropolis(adapt_start=3), t, {}),
        (PseudoMarginalMH(GaussianRandomWalkProposal(0.5)), log_est, {"generator": gen(0)}),
    ]


@pytest.mark.parametrize("idx", range(6))
def test_determinism(idx):
    t = gauss2d()
    k, target, kw = make_kernels(t)[idx]
    x0 = t.sample(8, gen(18))
    a, _ = run(k, target, x0, 5, seed=19, **{n: gen(0) for n in kw})
    b, _ = run(k, target, x0, 5, seed=19, **{n: gen(0) for n in kw})
    c, _ = run(k, target, x0, 5, seed=20, **{n: gen(0) for n in kw})
    assert torch.equal(a, b)
    assert not torch.equal(a, c)


class Counting:
    """Wraps a target; counts evaluations in units of the chain batch C, as Info does."""

    def __init__(self, t, c):
        self.t, self.c, self.energy, self.grads, self.surrogate = t, c, 0, 0, 0

    def __call__(self, x):
        self.energy += x.shape[0] // self.c
        return self.t(x)

    def log_prob_and_grad(self, x):
        self.energy += x.shape[0] // self.c
        self.grads += x.shape[0] // self.c
        return self.t.log_prob_and_grad(x)

    def grad(self, x):  # as a KMC surrogate: not a target evaluation
        self.surrogate += 1
        return self.t.grad(x)


@pytest.mark.parametrize("idx", [0, 1, 3, 4])
def test_info_accounting(idx):
    t = gauss2d()
    counter = Counting(t, 16)
    k, _, _ = make_kernels(t)[idx]
    if isinstance(k, KMC):
        k = KMC(counter, k.step_size_range, k.num_steps_range)
    state = k.init(t.sample(16, gen(21)), t)
    counter.energy = 0
    state, info = k.step(state, counter, gen(22))
    assert (info.energy_evals, info.grad_evals) == (counter.energy, counter.grads)
    # HMC: 1 + max_c L_c on CPU (L in {2..4} here); the others are fixed
    expected = {1: [(2, 0)], 3: [(2, 0)], 4: [(2, 0)]}.get(idx, [(3, 3), (4, 4), (5, 5)])
    assert (info.energy_evals, info.grad_evals) in expected
    if idx == 1:
        assert counter.surrogate == 4 + 1
    assert info.acceptance_prob.shape == (16,) and info.accepted.dtype == torch.bool


def test_pseudo_marginal_recycles_current_estimate():
    calls = []

    def log_est(x, generator):
        calls.append(x.shape[0])
        return torch.randn(x.shape[0], generator=generator, dtype=x.dtype)

    k = PseudoMarginalMH(GaussianRandomWalkProposal(0.5))
    state = k.init(torch.zeros(32, 1, dtype=DT), log_est, gen(23))
    state2, info = k.step(state, log_est, gen(24))
    assert info.energy_evals == 1 and len(calls) == 2  # init + the proposal only
    kept = ~info.accepted
    assert torch.equal(state2.log_prob[kept], state.log_prob[kept])


def test_targets_closed_form_gradients_and_sampling():
    g = gen(25)
    for t in [random_gamma_gaussian(5, g), Banana(d=4), gauss2d()]:
        x = t.sample(64, g)
        xr = x.clone().requires_grad_(True)
        (ga,) = torch.autograd.grad(t(xr).sum(), xr)
        f, gc = t.log_prob_and_grad(x)
        assert torch.allclose(gc, ga) and torch.allclose(f, t(x))
    t = random_gamma_gaussian(6, gen(26))
    ref = torch.distributions.MultivariateNormal(t.mean, t.cov)
    x = t.sample(10, gen(27))
    assert torch.allclose(t(x), ref.log_prob(x))
    # banana: log p(y) is the Gaussian density of the inverse map (unit Jacobian); E[y] = 0
    b = Banana()
    y = b.sample(200000, gen(28))
    x = y.clone()
    x[:, 1] = y[:, 1] - b.b * (y[:, 0] ** 2 - b.V)
    base = torch.distributions.Normal(0.0, torch.tensor([10.0] + [1.0] * 7, dtype=DT))
    assert torch.allclose(b(y[:100]), base.log_prob(x[:100]).sum(-1))
    se = y.std(0) / math.sqrt(y.shape[0])
    assert ((y.mean(0)).abs() < Z_TOL * se).all()


def test_argument_checks():
    t = gauss2d()
    with pytest.raises(ValueError):
        HMC((0.5, 0.1), (1, 2))
    with pytest.raises(ValueError):
        HMC((0.1, 0.5), (0, 2))
    with pytest.raises(ValueError):
        HMC((0.1, 0.5), (1, 2), mass=0.0)
    with pytest.raises(TypeError):
        KMC(object(), (0.1, 0.5), (1, 2))
    with pytest.raises(ValueError):
        KMC(t, (0.1, 0.5), (1, 2), pseudo_marginal=True).init(t.sample(2, gen(0)), t)
    with pytest.raises(ValueError):
        GaussianRandomWalkMetropolis(-1.0)
    with pytest.raises(ValueError):
        AdaptiveMetropolis(adapt_start=1)
    with pytest.raises(ValueError):
        Gaussian(torch.zeros(2, dtype=DT), torch.tensor([[1.0, 2.0], [2.0, 1.0]], dtype=DT))
    with pytest.raises(ValueError):
        Banana(d=1)
    with pytest.raises(ValueError):
        random_gamma_gaussian(0, gen(0))


def test_every_continuous_kernel_init_takes_an_optional_generator():
    """The kernel contract: init(x, log_prob, generator=None) for every kernel of the package."""
    import inspect

    from gradmc.samplers.continuous import HABC, KAMH

    for cls in (HMC, KMC, KAMH, HABC, AdaptiveMetropolis, GaussianRandomWalkMetropolis, PseudoMarginalMH):
        params = inspect.signature(cls.init).parameters
        assert list(params)[:4] == ["self", "x", "log_prob", "generator"], cls.__name__
        assert params["generator"].default is None, cls.__name__
    t = Gaussian(torch.zeros(2, dtype=DT), torch.eye(2, dtype=DT))
    x = t.sample(3, gen(0))
    for kernel in (HMC((0.1, 0.2), (1, 2)), GaussianRandomWalkMetropolis(0.5), AdaptiveMetropolis()):
        a, b = kernel.init(x, t), kernel.init(x, t, gen(1))
        assert torch.equal(a.log_prob, b.log_prob)


def test_leapfrog_path_is_the_textbook_leapfrog_and_ends_where_the_batched_one_does():
    """H = (q^2 + p^2) / 2: each step is p_half = p - eps q / 2, q' = q + eps p_half, p' = p_half - eps q' / 2
    (Neal 2011, Eq. 5.18-5.20), computed here by hand in the same order; a chain with L_c < S repeats its end."""
    from gradmc.samplers.continuous.common import leapfrog

    x = torch.tensor([[1.0, -0.5], [0.3, 2.0]], dtype=DT)
    p = torch.tensor([[0.0, 1.0], [-1.0, 0.25]], dtype=DT)
    eps = torch.tensor([[0.1], [0.3]], dtype=DT)
    num = torch.tensor([[5], [3]])
    grad = lambda z: (None, -z)  # noqa: E731
    x_end, p_end, _, steps, xs, ps = leapfrog(x, p, eps, num, 5, grad, 1.0, -x, path=True)
    assert steps == 5 and xs.shape == ps.shape == (6, 2, 2)
    for c in range(2):
        q, m, e = x[c].clone(), p[c].clone(), float(eps[c])
        assert torch.equal(xs[0, c], q) and torch.equal(ps[0, c], m)
        for t in range(int(num[c])):
            half = m + 0.5 * e * (-q)
            q = q + e * half
            m = half + 0.5 * e * (-q)
            assert torch.equal(xs[t + 1, c], q) and torch.equal(ps[t + 1, c], m)
        for t in range(int(num[c]), 5):  # frozen after its own L_c
            assert torch.equal(xs[t + 1, c], q) and torch.equal(ps[t + 1, c], m)
    assert torch.equal(x_end, xs[-1]) and torch.equal(p_end, ps[-1])
    # the same map as the merged-kick loop of HMC/KMC, up to rounding
    x_b, p_b, _, _ = leapfrog(x, p, eps, num, 5, grad, 1.0, -x)
    torch.testing.assert_close(x_b, x_end, rtol=0, atol=1e-14)
    torch.testing.assert_close(p_b, p_end, rtol=0, atol=1e-14)
