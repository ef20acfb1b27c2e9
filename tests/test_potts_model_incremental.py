"""Incremental evaluations and the cached coupling matrix of the learnable PottsModel (PCD on proteins).

References: direct evaluation of the model (``forward`` on the changed states), the fixed
gradmc.targets.Potts with the same parameters (``to_target``), and the generic (non-incremental) path of the
samplers, reached through a plain function wrapping the model.
"""

from __future__ import annotations

import pytest
import torch

from gradmc.core.incremental import eval_change, eval_change_candidates, evaluate, offers
from gradmc.samplers.discrete import make_sampler
from gradmc.samplers.discrete.categorical_gibbs import CategoricalGibbs
from gradmc.samplers.discrete.onehot import enumerate_onehot
from gradmc.targets.potts import Potts, PottsEvaluations
from gradmc.training.pcd import PCD, Penalty
from gradmc.training.potts_models import PottsModel


@pytest.fixture(autouse=True)
def _one_thread():
    old = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(old)


def _model(L: int, q: int, dtype=torch.float64, seed: int = 0) -> PottsModel:
    g = torch.Generator().manual_seed(seed)
    return PottsModel(L, q, h=torch.randn(L, q, generator=g, dtype=dtype), init_std=0.5, generator=g, dtype=dtype)


def _states(C: int, L: int, q: int, dtype, seed: int = 1) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    return torch.nn.functional.one_hot(torch.randint(q, (C, L), generator=g), q).to(dtype)


def _set(x: torch.Tensor, site: torch.Tensor, value: torch.Tensor) -> torch.Tensor:
    rows = torch.arange(x.shape[0])
    out = x.clone()
    out[rows, site] = 0.0
    out[rows, site, value] = 1.0
    return out


def _grad_autograd(model: PottsModel, x: torch.Tensor) -> torch.Tensor:
    xr = x.clone().requires_grad_(True)
    (g,) = torch.autograd.grad(model(xr).sum(), xr)
    return g


def test_the_potts_models_share_the_public_mixin():
    assert issubclass(PottsModel, PottsEvaluations) and issubclass(Potts, PottsEvaluations)
    m = _model(3, 3)
    assert offers(m, "eval_state") and offers(m, "eval_change") and offers(m, "eval_change_candidates")


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("L,q", [(5, 3), (20, 21)])
def test_incremental_evaluations_equal_direct_evaluation(dtype, L, q):
    model, C = _model(L, q, dtype), 16
    x = _states(C, L, q, dtype)
    tol = dict(rtol=1e-5, atol=1e-4) if dtype == torch.float32 else dict(rtol=1e-12, atol=1e-10)
    with torch.no_grad():
        ev = evaluate(model, x)
        assert ev.log_prob.dtype == dtype and ev.grad.shape == x.shape
        torch.testing.assert_close(ev.log_prob, model(x), **tol)
    torch.testing.assert_close(ev.grad, _grad_autograd(model, x), **tol)
    g = torch.Generator().manual_seed(2)
    site = torch.randint(L, (C,), generator=g)
    value = torch.randint(q, (C,), generator=g)
    with torch.no_grad():
        # candidates: every value of the site, against forward on the changed states
        cand = eval_change_candidates(model, x, ev, site)
        direct = torch.stack([model(_set(x, site, torch.full((C,), v))) for v in range(q)], 1)
        torch.testing.assert_close(cand, direct, **tol)
        # without a gradient in the evaluation the candidates evaluate it first
        torch.testing.assert_close(model.eval_change_candidates(x, ev._replace(grad=None), site), cand, **tol)
        changed = eval_change(model, x, ev, site, value)
        x_new = _set(x, site, value)
        torch.testing.assert_close(changed.log_prob, model(x_new), **tol)
    torch.testing.assert_close(changed.grad, _grad_autograd(model, x_new), **tol)
    # the fixed target with the same parameters gives the same numbers
    target = model.to_target()
    with torch.no_grad():
        torch.testing.assert_close(target.eval_change_candidates(x, target.eval_state(x), site), cand, **tol)


def test_cached_M_is_reused_without_grad_and_fresh_with_grad():
    model = _model(4, 3)
    with torch.no_grad():
        M1, M2 = model.M, model.M
    assert M1 is M2 and not M1.requires_grad
    M3 = model.M  # grad enabled and W requires grad: a fresh, differentiable matrix
    assert M3 is not M1 and M3.requires_grad
    M3.sum().backward()
    assert model.W.grad is not None and model.W.grad.abs().sum() > 0
    torch.testing.assert_close(M3.detach(), M1, rtol=0, atol=0)
    model.W.requires_grad_(False)
    assert model.M is M1  # nothing to differentiate: the cache serves grad mode too


def _fresh_M(model: PottsModel) -> torch.Tensor:
    upper = model.W.detach() * model.upper
    return upper + upper.T


def _check_cache_current(model: PottsModel, x: torch.Tensor) -> None:
    with torch.no_grad():
        torch.testing.assert_close(model.M, _fresh_M(model), rtol=0, atol=0)
        torch.testing.assert_close(model.eval_state(x).log_prob, model.to_target()(x), rtol=1e-12, atol=1e-10)


def test_cached_M_never_goes_stale():
    model, x = _model(4, 3), _states(8, 4, 3, torch.float64)
    opt = torch.optim.Adam(model.parameters(), lr=0.1)
    with torch.no_grad():
        old_M, old_f = model.M.clone(), model.eval_state(x).log_prob
    # an optimiser step changes W in place
    loss = -model(x).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    with torch.no_grad():
        assert not torch.equal(model.M, old_M)
        assert not torch.allclose(model.eval_state(x).log_prob, old_f)
    _check_cache_current(model, x)
    # load_state_dict copies into W in place
    other = _model(4, 3, seed=5)
    model.load_state_dict(other.state_dict())
    _check_cache_current(model, x)
    with torch.no_grad():
        torch.testing.assert_close(model.M, other.M, rtol=0, atol=0)
    # an in-place edit under no_grad and a write into the returned matrix
    with torch.no_grad():
        model.W.mul_(2.0)
    _check_cache_current(model, x)
    with torch.no_grad():
        model.M.zero_()
    _check_cache_current(model, x)
    # a new W tensor, and a change of dtype (new storage)
    model.W = torch.nn.Parameter(torch.randn_like(model.W) * model.upper)
    _check_cache_current(model, x)
    model.float()
    with torch.no_grad():
        assert model.M.dtype == torch.float32
        torch.testing.assert_close(model.M, _fresh_M(model), rtol=0, atol=0)
    model.double()
    _check_cache_current(model, x)


def test_gibbs1_transition_matrix_equals_the_fixed_target():
    """Exact one-step kernel of categorical Gibbs-1 on PottsModel (through its incremental candidates, as
    ``step`` uses them) and on gradmc.targets.Potts (enumerated candidates) with the same parameters."""
    L, q = 3, 3
    model = _model(L, q, seed=3)
    target = model.to_target()
    states = enumerate_onehot(L, q, torch.float64)  # (S, L, q)
    S = states.shape[0]
    index = {tuple(s.argmax(-1).tolist()): n for n, s in enumerate(states)}

    def matrix(next_states: torch.Tensor, probs: torch.Tensor) -> torch.Tensor:
        cols = torch.tensor([[index[tuple(y.argmax(-1).tolist())] for y in row] for row in next_states])
        return torch.zeros(S, S, dtype=torch.float64).scatter_add_(1, cols, probs)

    sampler = CategoricalGibbs(1)
    P_target = matrix(*sampler.transition_probabilities(states, target))
    P_model = matrix(*sampler.transition_probabilities(states, model))
    # the incremental path: for a uniform site i, the softmax of eval_change_candidates over its values
    P_inc = torch.zeros(S, S, dtype=torch.float64)
    with torch.no_grad():
        ev = evaluate(model, states, grad=False)
        for i in range(L):
            site = torch.full((S,), i)
            probs = torch.softmax(eval_change_candidates(model, states, ev, site), -1) / L
            nxt = torch.stack([_set(states, site, torch.full((S,), v)) for v in range(q)], 1)
            P_inc += matrix(nxt, probs)
    pi = torch.softmax(target(states), 0)
    for P in (P_model, P_inc):
        torch.testing.assert_close(P, P_target, rtol=0, atol=1e-12)
    assert float((pi @ P_inc - pi).abs().max()) < 1e-12


def test_gibbs1_and_gwg_steps_equal_the_generic_path():
    """Seeded steps through the incremental evaluations give the samples of the generic path (a plain function
    around the model: candidates evaluated by forward) up to float rounding (float64 here: identical)."""
    L, q, C = 6, 4, 32
    model = _model(L, q, seed=4)
    x0 = _states(C, L, q, torch.float64, seed=6)
    for name in ("Gibbs-1", "GWG"):
        sampler = make_sampler(name, state="categorical")
        runs = []
        for target in (model, lambda x: model(x)):
            gen = torch.Generator().manual_seed(7)
            with torch.no_grad():
                state = sampler.init(x0, target)
                for _ in range(40):
                    state, _ = sampler.step(state, target, gen)
            runs.append(state.x)
        assert torch.equal(runs[0], runs[1]), name


def _pcd_run(model_fn, steps: int = 15):
    torch.manual_seed(0)
    model = _model(6, 4, seed=8)
    data = _states(64, 6, 4, torch.float64, seed=9)
    trainer = PCD(model_fn(model), CategoricalGibbs(1), data, num_steps=5, batch_size=16, buffer_size=32, lr=0.05,
                  generator=torch.Generator().manual_seed(10), penalties=[Penalty("block_l1", "J_eq13", 0.01)])
    for _ in range(steps):
        trainer.step()
    return trainer.buffer, trainer.model


class _Generic(PottsModel):
    """The same model without the incremental methods (forward redefined, closed_forms_for not restated)."""

    def forward(self, x):
        return super().forward(x)


def test_seeded_pcd_gibbs_equals_the_generic_path():
    assert not offers(_Generic(3, 3), "eval_change_candidates")

    def generic(m: PottsModel) -> PottsModel:
        g = _Generic(m.num_sites, m.num_states, dtype=m.W.dtype)
        g.load_state_dict(m.state_dict())
        return g

    buf_inc, m_inc = _pcd_run(lambda m: m)
    buf_gen, m_gen = _pcd_run(generic)
    assert torch.equal(buf_inc, buf_gen)
    torch.testing.assert_close(m_inc.W, m_gen.W, rtol=1e-12, atol=1e-12)


def test_pcd_trains_on_the_cached_M():
    """The loss after an optimiser step sees the new parameters (the sampler's cache is rebuilt)."""
    buf, model = _pcd_run(lambda m: m, steps=3)
    with torch.no_grad():
        torch.testing.assert_close(model.M, _fresh_M(model), rtol=0, atol=0)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_forward_paths_agree_in_value_and_parameter_gradient(dtype):
    """The loss path (row sums of U = W * mask), the cached-M path (no grad) and the dense path (x requires grad)
    give the same f; the loss path's gradient to W and h equals that of the dense form through M."""
    model, x = _model(8, 5, dtype, seed=11), _states(32, 8, 5, dtype, seed=12)
    tol = dict(rtol=1e-5, atol=1e-4) if dtype == torch.float32 else dict(rtol=1e-12, atol=1e-10)
    weights = torch.randn(32, generator=torch.Generator().manual_seed(13), dtype=dtype)
    f_loss = model(x)
    (weights * f_loss).sum().backward()
    gW, gh = model.W.grad.clone(), model.h.grad.clone()
    model.zero_grad()
    xf = x.reshape(32, -1)
    f_dense = xf @ model.h.reshape(-1) + 0.5 * ((xf @ model.M) * xf).sum(-1)
    (weights * f_dense).sum().backward()
    torch.testing.assert_close(f_loss, f_dense, **tol)
    torch.testing.assert_close(gW, model.W.grad, **tol)
    torch.testing.assert_close(gh, model.h.grad, **tol)
    with torch.no_grad():
        torch.testing.assert_close(model(x), f_loss.detach(), **tol)
    torch.testing.assert_close(model(x.clone().requires_grad_(True)).detach(), f_loss.detach(), **tol)
