"""AIS (gradmc.evaluation.ais) against exactly computable log Z.

Tolerance: log Z_hat has delta-method standard error se (reported by AIS) plus a small negative Jensen
bias of about se^2 / 2; we require |log Z_hat - log Z| < 4 se + 0.01 (se itself must be small, so the
check has teeth: a wrong weight update, e.g. using the state after the move or a non-normalised base,
shifts log Z by far more than that).
"""

from __future__ import annotations

import pytest
import torch

from gradmc.core.exact import enumerate_binary
from gradmc.evaluation.ais import BernoulliBase, CategoricalBase, ais_log_partition, linear_schedule
from gradmc.samplers.discrete.registry import make_sampler
from gradmc.targets import DenseIsing, Potts
from gradmc.targets.rbm import RBM


def _check(result, exact, max_se=0.08):
    assert result.log_z_se < max_se, result
    assert abs(result.log_z - exact) < 4 * result.log_z_se + 0.01, (result.log_z, exact, result.log_z_se)


@pytest.mark.parametrize("sampler,steps_per_level", [("Gibbs-1", 1), ("GWG", 1), ("GWG", 3), ("HB-4-1", 2)])
def test_ais_matches_exact_rbm_log_partition(sampler, steps_per_level):
    """With several steps per level the kernels' caches serve the later steps of a level (the target
    object is new at every level, so the first step re-evaluates)."""
    g = torch.Generator().manual_seed(0)
    rbm = RBM(20, 10, weight_std=0.5, generator=g).double().requires_grad_(False)
    with torch.no_grad():
        rbm.b.normal_(0.0, 0.5, generator=g)
        rbm.c.normal_(0.0, 0.5, generator=g)
    exact = rbm.log_partition()
    data = torch.bernoulli(torch.full((50, 20), 0.4, dtype=torch.float64), generator=g)
    base = BernoulliBase.fit(data)
    result = ais_log_partition(rbm, base, make_sampler(sampler), num_chains=300, betas=linear_schedule(200),
                               generator=g, dtype=torch.float64, steps_per_level=steps_per_level)
    _check(result, exact)
    assert 1 < result.weights_ess <= 300


def test_ais_matches_exact_ising_log_partition_with_checkpoints():
    g = torch.Generator().manual_seed(1)
    d = 12
    J = torch.randn(d, d, generator=g, dtype=torch.float64) * 0.3
    J = torch.triu(J, 1)
    target = DenseIsing(J + J.t(), bias=torch.randn(d, generator=g, dtype=torch.float64) * 0.2).double()
    states = enumerate_binary(d, dtype=torch.float64)
    with torch.no_grad():
        exact = float(torch.logsumexp(target(states), 0))
    base = BernoulliBase(torch.zeros(d, dtype=torch.float64))
    result = ais_log_partition(target, base, make_sampler("GWG"), num_chains=400, betas=linear_schedule(200),
                               generator=g, dtype=torch.float64, checkpoints=(1, 100))
    _check(result, exact)
    assert set(result.checkpoints) == {1, 100}


def test_ais_categorical_potts_matches_exact():
    g = torch.Generator().manual_seed(2)
    L, K = 5, 3
    h = torch.randn(L, K, generator=g, dtype=torch.float64) * 0.5
    J = torch.randn(L, L, K, K, generator=g, dtype=torch.float64) * 0.3
    J = 0.5 * (J + J.permute(1, 0, 3, 2))
    J[torch.arange(L), torch.arange(L)] = 0.0
    target = Potts(h, J).double()
    idx = torch.cartesian_prod(*[torch.arange(K)] * L)
    states = torch.nn.functional.one_hot(idx, K).double()
    with torch.no_grad():
        exact = float(torch.logsumexp(target(states), 0))
    base = CategoricalBase(torch.zeros(L, K, dtype=torch.float64))
    result = ais_log_partition(target, base, make_sampler("GWG", state="categorical"), num_chains=300,
                               betas=linear_schedule(100), generator=g, dtype=torch.float64)
    _check(result, exact)


def test_bases_are_normalised_and_fit_data():
    g = torch.Generator().manual_seed(3)
    data = torch.bernoulli(torch.full((1000, 6), 0.3, dtype=torch.float64), generator=g)
    base = BernoulliBase.fit(data)
    states = enumerate_binary(6, dtype=torch.float64)
    assert float(torch.logsumexp(base.log_prob(states), 0)) == pytest.approx(0.0, abs=1e-12)
    assert torch.allclose(torch.sigmoid(base.logits), (data.sum(0) + 1) / 1002)
    onehot = torch.nn.functional.one_hot(torch.randint(0, 4, (200, 3), generator=g), 4).double()
    cat = CategoricalBase.fit(onehot)
    assert torch.allclose(cat.log_probs.exp().sum(-1), torch.ones(3, dtype=torch.float64))
    draws = cat.sample(5, g)
    assert draws.shape == (5, 3, 4) and torch.equal(draws.sum(-1), torch.ones(5, 3, dtype=torch.float64))


def test_ais_rejects_bad_input():
    base = BernoulliBase(torch.zeros(3))
    g = torch.Generator().manual_seed(0)
    model = lambda x: x.sum(-1)  # noqa: E731
    with pytest.raises(ValueError, match="strictly increasing"):
        ais_log_partition(model, base, make_sampler("Gibbs-1"), num_chains=4, betas=torch.tensor([0.0, 0.5]),
                          generator=g)
    with pytest.raises(ValueError, match="num_chains"):
        ais_log_partition(model, base, make_sampler("Gibbs-1"), num_chains=1, betas=linear_schedule(3), generator=g)
    with pytest.raises(ValueError, match="non-finite"):
        ais_log_partition(lambda x: x.sum(-1) * float("nan"), base, make_sampler("Gibbs-1"), num_chains=4,
                          betas=linear_schedule(3), generator=g)
    with pytest.raises(ValueError, match="num_intermediate"):
        linear_schedule(0)
    with pytest.raises(ValueError, match="alpha"):
        BernoulliBase.fit(torch.zeros(2, 3), alpha=0.0)


def test_categorical_base_from_indices_equals_one_hot_fit():
    g = torch.Generator().manual_seed(4)
    idx = torch.randint(0, 5, (300, 7), generator=g)
    a = CategoricalBase.fit(torch.nn.functional.one_hot(idx, 5).double(), alpha=0.5)
    b = CategoricalBase.fit_indices(idx, 5, alpha=0.5)
    assert torch.allclose(a.log_probs, b.log_probs)
    with pytest.raises(ValueError, match="levels must lie"):
        CategoricalBase.fit_indices(idx, 4)


def test_log_z_lower_bound_is_exact_on_all_states_and_counts_each_state_once():
    """Over every state of a 4-bit model the bound IS log Z (exact enumeration); over a subset with repeated
    rows it is the logsumexp over the distinct rows only, below log Z; a one-hot transform of index rows
    gives the same number as the one-hot rows themselves."""
    import itertools

    from gradmc.evaluation.ais import log_z_lower_bound

    w = torch.tensor([[0.0, 1.5, -0.7, 0.3], [1.5, 0.0, 0.4, -1.1], [-0.7, 0.4, 0.0, 0.8], [0.3, -1.1, 0.8, 0.0]],
                     dtype=torch.float64)
    b = torch.tensor([0.2, -0.5, 1.0, -0.3], dtype=torch.float64)

    def log_f(x):
        return ((x @ w) * x).sum(-1) / 2 + x @ b

    every = torch.tensor(list(itertools.product([0.0, 1.0], repeat=4)), dtype=torch.float64)
    exact = float(torch.logsumexp(log_f(every), 0))
    assert log_z_lower_bound(log_f, every, batch=3) == pytest.approx(exact, abs=1e-12)
    some = every[[1, 5, 5, 9, 1, 15]]
    want = float(torch.logsumexp(log_f(every[[1, 5, 9, 15]]), 0))
    assert log_z_lower_bound(log_f, some) == pytest.approx(want, abs=1e-12) and want < exact
    # categorical: 2 sites x 3 levels, indices expanded per batch
    theta = torch.tensor([[0.1, -0.4, 0.9], [1.2, 0.0, -0.6]], dtype=torch.float64)

    def log_g(x):  # (C, 2, 3) one-hot
        return (x * theta).sum((-1, -2)) + 0.5 * (x[:, 0, 2] * x[:, 1, 0])

    idx = torch.tensor([[0, 0], [2, 0], [2, 0], [1, 2]])
    one_hot = torch.nn.functional.one_hot(idx, 3).double()
    via_idx = log_z_lower_bound(log_g, idx, transform=lambda r: torch.nn.functional.one_hot(r, 3).double())
    assert via_idx == pytest.approx(log_z_lower_bound(log_g, one_hot), abs=1e-12)
    assert via_idx == pytest.approx(float(torch.logsumexp(log_g(one_hot[[0, 1, 3]]), 0)), abs=1e-12)
    with pytest.raises(ValueError, match="at least one state"):
        log_z_lower_bound(log_f, every[:0])
    with pytest.raises(ValueError, match="non-finite"):
        log_z_lower_bound(lambda x: log_f(x) / 0.0 * 0.0, every)


def test_ais_evaluates_the_model_once_per_level_and_matches_fresh_evaluations(monkeypatch):
    """Every level's target is (1 - beta) log p_0 + beta f, so the run reuses f and grad f of the state and of
    the last proposal: a GWG level evaluates the model once (at its proposal), not three times, and the
    estimate equals a run that evaluates every request afresh (same draws, float64)."""
    import gradmc.evaluation.ais as ais_module

    g = torch.Generator().manual_seed(3)
    rbm = RBM(16, 8, weight_std=0.5, generator=g).double().requires_grad_(False)
    base = BernoulliBase.fit(torch.bernoulli(torch.full((40, 16), 0.3, dtype=torch.float64), generator=g))
    calls = []

    def model(x):
        calls.append(x.shape[0])
        return rbm(x)

    def run():
        calls.clear()
        result = ais_log_partition(model, base, make_sampler("GWG"), num_chains=50, betas=linear_schedule(60),
                                   generator=torch.Generator().manual_seed(0), dtype=torch.float64)
        return result, len(calls)

    reused, reused_calls = run()
    assert reused_calls == 60 + 1  # level 1: the weight (no gradient) and the state's gradient; then 1 per step

    class FreshMemo(ais_module._TermMemo):
        def _lookup(self, x, grad):
            return None

    monkeypatch.setattr(ais_module, "_TermMemo", FreshMemo)
    fresh, fresh_calls = run()
    assert fresh_calls == 1 + 3 * 59 + 1  # per level: the weight, the state at the new beta, the proposal
    assert torch.allclose(reused.log_weights, fresh.log_weights, rtol=0, atol=1e-10)
    _check(reused, rbm.log_partition(), max_se=0.3)
