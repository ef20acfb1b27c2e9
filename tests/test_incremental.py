"""Cached and incremental evaluations (gradmc.core.incremental).

(a) every structured target's incremental methods equal a full evaluation of the changed states;
(b) a cached kernel follows the same chain as the generic, uncached path on the same generator stream,
    across the periodic refreshes, and counts one evaluation per cached GWG step;
(c) several cached steps from exact samples of pi stay at pi (chi-square), and a wrong incremental
    gradient (the teeth) fails that test;
(d) a target changed in place, by an optimiser, by re-assignment or through a scalar attribute is
    detected: the next step equals a step from a fresh ``init``.
"""

from __future__ import annotations

import pytest
import torch
from scipy.stats import chisquare

from gradmc.core.exact import exact_distribution
from gradmc.core.gradients import own_method
from gradmc.core.incremental import (
    REFRESH_EVERY,
    Evaluation,
    RowChoice,
    cache_key,
    flip_bits,
    flipped_entries,
    select,
)
from gradmc.samplers.discrete import make_sampler
from gradmc.samplers.discrete.hamming_ball import BlockHammingBall
from gradmc.targets import RBM
from gradmc.targets.ising import ErdosRenyiIsing, LatticeIsing
from gradmc.targets.potts import LatticePotts, Potts
from gradmc.training.ising_models import IsingModel

torch.set_num_threads(1)


def _rbm(d=9, h=4, seed=11):
    g = torch.Generator().manual_seed(seed)
    model = RBM(d, h, weight_std=1.0, generator=g).double()
    with torch.no_grad():
        model.b.normal_(generator=g)
        model.c.normal_(generator=g)
    return model


def _ising(periodic=True):
    g = torch.Generator().manual_seed(3)
    side = 4 if periodic else 3
    return LatticeIsing(side, theta=0.37, bias=torch.randn(side * side, generator=g) * 0.5,
                        periodic=periodic).double()


def _erdos_renyi():
    return ErdosRenyiIsing(12, 4.0, 0.5, bias_std=0.3, generator=torch.Generator().manual_seed(6)).double()


def _ising_model():
    """The learnable dense model of PCD, with random couplings and bias."""
    g = torch.Generator().manual_seed(7)
    model = IsingModel(10, init_std=0.4, generator=g).double()
    with torch.no_grad():
        model.bias.normal_(generator=g)
    return model


def _potts(d=5, k=3):
    g = torch.Generator().manual_seed(4)
    J = torch.randn(d, d, k, k, generator=g, dtype=torch.float64) * 0.5
    J = J + J.permute(1, 0, 3, 2)
    J[torch.arange(d), torch.arange(d)] = 0.0
    return Potts(torch.randn(d, k, generator=g, dtype=torch.float64), J)


def _lattice_potts(periodic=True):
    g = torch.Generator().manual_seed(5)
    return LatticePotts(3, 3, theta=0.6, h=torch.randn(9, 3, generator=g), periodic=periodic).double()


BINARY = {"rbm": _rbm, "ising": _ising, "ising_free": lambda: _ising(False), "erdos_renyi": _erdos_renyi,
          "ising_model": _ising_model}
CATEGORICAL = {"potts": _potts, "lattice_potts": _lattice_potts, "lattice_potts_free": lambda: _lattice_potts(False)}


def _bits(c, d, seed):
    return torch.bernoulli(torch.full((c, d), 0.5, dtype=torch.float64), generator=torch.Generator().manual_seed(seed))


def _onehot(c, d, k, seed):
    idx = torch.randint(k, (c, d), generator=torch.Generator().manual_seed(seed))
    return torch.nn.functional.one_hot(idx, k).double()


def _assert_same(ev: Evaluation, ref: Evaluation, grad: bool = True):
    torch.testing.assert_close(ev.log_prob, ref.log_prob)
    if grad:
        torch.testing.assert_close(ev.grad, ref.grad)
    if ref.aux is not None:
        torch.testing.assert_close(ev.aux, ref.aux)


@pytest.mark.parametrize("name", BINARY)
def test_binary_incremental_methods_equal_full_evaluations(name):
    target = BINARY[name]()
    D = target.num_visible if name == "rbm" else target.num_dims
    C = 16
    x = _bits(C, D, 1)
    ev = target.eval_state(x, True)
    with torch.enable_grad():
        xr = x.clone().requires_grad_(True)
        (auto,) = torch.autograd.grad(target(xr).sum(), xr)
    torch.testing.assert_close(ev.log_prob, target(x))
    torch.testing.assert_close(ev.grad, auto)
    g = torch.Generator().manual_seed(2)
    for X in (1, 3):
        sites = torch.stack([torch.randperm(D, generator=g)[:X] for _ in range(C)])  # (C, X) distinct
        mask = torch.rand(C, X, generator=g) < 0.7
        mask[:, 0] = True
        _assert_same(target.eval_flips(x, ev, sites, mask, True), target.eval_state(flip_bits(x, sites, mask), True))
        masks = torch.rand(C, 5, X, generator=g) < 0.5  # (C, B, X) candidate flips
        want = torch.stack([target(flip_bits(x, sites, masks[:, b])) for b in range(5)], 1)
        torch.testing.assert_close(target.eval_flip_candidates(x, ev, sites, masks), want)
    # a site drawn twice (GWG-N) with all but one entry masked flips once
    sites = torch.tensor([[2, 2, 5]] * C)
    mask = torch.tensor([[True, False, True]] * C)
    _assert_same(target.eval_flips(x, ev, sites, mask, True), target.eval_state(flip_bits(x, sites, mask), True))
    assert bool((flip_bits(x, sites, mask) != x).sum(1).eq(2).all())


@pytest.mark.parametrize("density", [0.05, 0.9])  # the RBM's sparse column update, and its full evaluation
def test_rbm_eval_flip_mask_equals_full_evaluation(density):
    target = _rbm(d=40, h=6)
    x = _bits(16, 40, 3)
    ev = target.eval_state(x, True)
    mask = torch.rand(16, 40, generator=torch.Generator().manual_seed(4)) < density
    mask[0] = False  # a chain with no flip
    x_new = torch.where(mask, 1.0 - x, x)
    _assert_same(target.eval_flip_mask(x, ev, x_new, mask, True), target.eval_state(x_new, True))
    _assert_same(target.eval_flip_mask(x, ev._replace(aux=None), x_new, mask, True), target.eval_state(x_new, True))
    # the same mask as 0/1 floats, as the logit kernels pass it (a -0.0 entry is not a flip)
    floats = mask.float()
    floats[1, ~mask[1]] = -0.0
    _assert_same(target.eval_flip_mask(x, ev, x_new, floats, True), target.eval_state(x_new, True))


@pytest.mark.parametrize("dtype", [torch.bool, torch.float32, torch.float64])
def test_flipped_entries_are_the_nonzero_entries_in_row_major_order(dtype):
    mask = torch.rand(7, 13, generator=torch.Generator().manual_seed(5)) < 0.3
    expected = mask.reshape(-1).nonzero().squeeze(1)
    given = mask.to(dtype)
    if dtype.is_floating_point:
        given[~mask] = -0.0  # a negative zero is zero
    assert torch.equal(flipped_entries(given), expected)


@pytest.mark.parametrize("shape", [(100, 784), (5, 3), (100,), (64, 10, 8)])
def test_a_row_choice_equals_where(shape):
    gen = torch.Generator().manual_seed(6)
    new, old = torch.randn(shape, generator=gen), torch.randn(shape, generator=gen)
    new[0] = float("nan")  # values are copied, never compared
    accepted = torch.rand(shape[0], generator=gen) < 0.9
    accepted[0] = False
    expected = torch.where(accepted.reshape(-1, *([1] * (len(shape) - 1))), new, old)
    got = RowChoice(accepted)(new, old)
    assert torch.equal(got.nan_to_num(), expected.nan_to_num())
    assert torch.equal(got.isnan(), expected.isnan())
    assert got.data_ptr() not in (new.data_ptr(), old.data_ptr())


def test_a_row_choice_finds_the_rejected_rows_once(monkeypatch):
    """One RowChoice serves every tensor of a step: equal to torch.where for each, with one search for the
    rejected rows however many large tensors it copies (small ones take torch.where)."""
    gen = torch.Generator().manual_seed(8)
    accepted = torch.rand(64, generator=gen) < 0.7
    pairs = [(torch.randn(64, 100, generator=gen), torch.randn(64, 100, generator=gen)),  # row copies
             (torch.randn(64, 3, 50, generator=gen), torch.randn(64, 3, 50, generator=gen)),
             (torch.randn(64, generator=gen), torch.randn(64, generator=gen))]  # torch.where
    searches = []
    real_nonzero = torch.Tensor.nonzero
    monkeypatch.setattr(torch.Tensor, "nonzero", lambda t, *a, **k: searches.append(1) or real_nonzero(t, *a, **k))
    choose = RowChoice(accepted)
    for new, old in pairs:
        expected = torch.where(accepted.reshape(-1, *([1] * (new.dim() - 1))), new, old)
        assert torch.equal(choose(new, old), expected)
    assert len(searches) == 1
    ev_new, ev_old = Evaluation(*pairs[2][::-1], pairs[0][0]), Evaluation(pairs[2][0], None, pairs[0][1])
    out = select(choose, ev_new, ev_old)
    assert out.grad is None and len(searches) == 1
    assert torch.equal(out.aux, torch.where(accepted[:, None], pairs[0][0], pairs[0][1]))


@pytest.mark.parametrize("name", CATEGORICAL)
def test_categorical_incremental_methods_equal_full_evaluations(name):
    target = CATEGORICAL[name]()
    D, K = target.num_sites, target.num_states
    C = 24
    x = _onehot(C, D, K, 6)
    ev = target.eval_state(x)
    torch.testing.assert_close(ev.log_prob, target(x))
    g = torch.Generator().manual_seed(7)
    site = torch.randint(D, (C,), generator=g)
    value = torch.randint(K, (C,), generator=g)  # includes the current value for some chains
    rows = torch.arange(C)
    changed = x.clone()
    changed[rows, site] = 0.0
    changed[rows, site, value] = 1.0
    _assert_same(target.eval_change(x, ev, site, value), target.eval_state(changed))
    want = []
    for v in range(K):
        y = x.clone()
        y[rows, site] = 0.0
        y[rows, site, v] = 1.0
        want.append(target(y))
    torch.testing.assert_close(target.eval_change_candidates(x, ev, site), torch.stack(want, 1))


CHAIN_CASES = [("GWG", "rbm"), ("GWG", "ising"), ("DMALA", "rbm"), ("DMALA", "ising"), ("GWG-3", "rbm"),
               ("GWG-3", "ising"), ("Gibbs-1", "rbm"), ("Gibbs-2", "ising"), ("HB-3-1", "rbm"), ("HB-4-2", "ising"),
               ("Block-HB", "rbm"), ("GWG", "erdos_renyi"), ("GWG-3", "ising_model"), ("Gibbs-1", "erdos_renyi"),
               ("Gibbs-1", "ising_model"), ("HB-3-1", "ising_model")]


def _binary_sampler(name, D):
    return BlockHammingBall.contiguous(D - D % 3, 3) if name == "Block-HB" else make_sampler(name)


@pytest.mark.parametrize("sampler_name,target_name", CHAIN_CASES)
def test_cached_chain_equals_uncached_chain(sampler_name, target_name):
    target = BINARY[target_name]()
    D = target.num_visible if target_name == "rbm" else target.num_dims
    sampler = _binary_sampler(sampler_name, D)
    plain = lambda x: target(x)  # noqa: E731 -- a closure: never cached, no incremental methods
    x0 = _bits(32, D, 8)
    runs = []
    for log_prob in (target, plain):
        g = torch.Generator().manual_seed(9)
        state, xs, evals = sampler.init(x0, log_prob), [], []
        for _ in range(2 * REFRESH_EVERY + 10):
            state, info = sampler.step(state, log_prob, g)
            xs.append(state.x)
            evals.append(info.energy_evals)
        runs.append((torch.stack(xs), evals, state))
    (xs_c, evals_c, state_c), (xs_u, evals_u, state_u) = runs
    assert torch.equal(xs_c, xs_u)
    assert state_c.cache is not None and state_u.cache is None
    torch.testing.assert_close(state_c.cache.log_prob, target(state_c.x))  # no drift after 266 steps
    if sampler_name.startswith("GWG"):
        # 2 where x is evaluated: the first step (init's evaluation) and the refreshes; 1 elsewhere
        twos = {0, REFRESH_EVERY, 2 * REFRESH_EVERY}
        assert evals_c == [2 if i in twos else 1 for i in range(len(evals_c))] and set(evals_u) == {2}


@pytest.mark.parametrize("sampler_name,target_name", [("GWG", "potts"), ("GWG", "lattice_potts"),
                                                      ("Gibbs-1", "potts"), ("Gibbs-1", "lattice_potts")])
def test_cached_categorical_chain_equals_uncached_chain(sampler_name, target_name):
    target = CATEGORICAL[target_name]()
    sampler = make_sampler(sampler_name, state="categorical")
    plain = lambda x: target(x)  # noqa: E731
    x0 = _onehot(32, target.num_sites, target.num_states, 10)
    runs = []
    for log_prob in (target, plain):
        g = torch.Generator().manual_seed(11)
        state, xs = sampler.init(x0, log_prob), []
        for _ in range(REFRESH_EVERY + 20):
            state, _ = sampler.step(state, log_prob, g)
            xs.append(state.x)
        runs.append(torch.stack(xs))
    assert torch.equal(runs[0], runs[1])


class _StaleAuxRBM(RBM):
    """WRONG (the teeth): the cached pre-activations are not updated with the flip, so every later
    incremental evaluation starts from the wrong intermediate results."""

    def eval_flips(self, x, ev, sites, mask, grad=True, known_log_prob=None):
        return super().eval_flips(x, ev, sites, mask, grad, known_log_prob)._replace(aux=ev.aux)


def _stationarity_pvalue(target, sampler, steps, seed):
    states, pi = exact_distribution(target, 9)
    g = torch.Generator().manual_seed(seed)
    n = 100_000
    state = sampler.init(states[torch.multinomial(pi, n, replacement=True, generator=g)], target)
    for _ in range(steps):
        state, _ = sampler.step(state, target, g)
    weights = 2 ** torch.arange(8, -1, -1, dtype=torch.float64)
    counts = torch.bincount((state.x @ weights).long(), minlength=512).double()
    return chisquare(counts.numpy(), (n * pi).numpy()).pvalue


@pytest.mark.parametrize("sampler_name", ["GWG", "GWG-3", "Gibbs-2", "HB-3-1"])
@pytest.mark.parametrize("target_name", ["rbm", "ising_3x3", "dense_ising"])
def test_cached_steps_keep_pi_invariant(sampler_name, target_name):
    if target_name == "dense_ising":
        # couplings weak enough that every state expects >= 2.7 of the 100,000 draws (chi-square's approximation)
        target = IsingModel(9, init_std=0.1, generator=torch.Generator().manual_seed(16)).double()
    else:
        target = _rbm() if target_name == "rbm" else LatticeIsing(3, theta=0.3, bias=0.2).double()
    assert _stationarity_pvalue(target, make_sampler(sampler_name), steps=4, seed=12) > 1e-4


class _GenericIsingModel(IsingModel):
    """The same density with a forward of its own: its incremental methods are not used (the generic path)."""

    def forward(self, x):
        return super().forward(x)


@pytest.mark.parametrize("sampler_name", ["Gibbs-1", "GWG"])
def test_pcd_on_the_cached_dense_model_equals_the_generic_path(sampler_name):
    """PCD changes the model after every iteration: the cached kernels follow the generic path's chains and
    updates exactly (the Adam step between iterations invalidates the cache)."""
    from gradmc.training.pcd import PCD

    data = _bits(40, 10, 17)
    cached = IsingModel(10).double()
    generic = _GenericIsingModel(10).double()
    assert own_method(cached, "eval_flips") is not None and own_method(generic, "eval_flips") is None
    runs = []
    for model in (cached, generic):
        trainer = PCD(model, make_sampler(sampler_name), data, num_steps=7, batch_size=16, buffer_size=32, lr=0.05,
                      generator=torch.Generator().manual_seed(18))
        for _ in range(6):
            trainer.step()
        runs.append((trainer.buffer, model.J.detach()))
    assert torch.equal(runs[0][0], runs[1][0])
    torch.testing.assert_close(runs[0][1], runs[1][1])
    assert runs[0][1].abs().max() > 0.05  # the model did move


def test_stale_aux_fails_stationarity():
    bad = _StaleAuxRBM(9, 4)
    bad.load_state_dict(_rbm().float().state_dict())
    assert _stationarity_pvalue(bad.double(), make_sampler("GWG"), steps=4, seed=12) < 1e-10


def _adam_step(rbm):
    opt = torch.optim.Adam(rbm.parameters(), lr=0.1)
    for p in rbm.parameters():
        p.grad = torch.ones_like(p)
    opt.step()


def _reassign(rbm):
    rbm.W.data = rbm.W.detach() * 1.5


def _in_place(rbm):
    with torch.no_grad():
        rbm.W.mul_(1.5)


@pytest.mark.parametrize("change", [_in_place, _adam_step, _reassign], ids=["in_place", "adam", "reassigned"])
@pytest.mark.parametrize("sampler_name", ["GWG", "GWG-3", "Gibbs-1", "HB-3-1"])
def test_changed_target_is_detected(change, sampler_name):
    target = _rbm()
    sampler = make_sampler(sampler_name)
    g = torch.Generator().manual_seed(13)
    state = sampler.init(_bits(64, 9, 14), target)
    for _ in range(3):
        state, _ = sampler.step(state, target, g)
    key = cache_key(target)
    change(target)
    assert not key.matches(cache_key(target))
    g_fresh = torch.Generator().manual_seed(15)
    g_cached = torch.Generator().manual_seed(15)
    fresh, _ = sampler.step(sampler.init(state.x, target)._replace(
        **({"order": state.order, "position": state.position} if hasattr(state, "order") else {})), target, g_fresh)
    stale, info = sampler.step(state, target, g_cached)
    assert torch.equal(stale.x, fresh.x)
    torch.testing.assert_close(stale.cache.log_prob, target(stale.x))
    # the stale cache costs one evaluation of x: GWG 1 + 1; Gibbs-1 the flipped value + 1; HB-3-1 4 + 1
    assert info.energy_evals == {"GWG": 2, "GWG-3": 2, "Gibbs-1": 2, "HB-3-1": 5}[sampler_name]


def test_scalar_attribute_change_is_detected():
    target = LatticeIsing(4, theta=0.2)
    key = cache_key(target)
    target.theta = 0.3
    assert not key.matches(cache_key(target))


def test_what_is_cached():
    target = _rbm()
    x = _bits(8, 9, 16)
    gwg = make_sampler("GWG")
    g = torch.Generator().manual_seed(17)
    # a bound method of a module: cached (a new bound-method object on every access, same key)
    assert cache_key(target.forward).matches(cache_key(target.forward))
    state, first = gwg.step(gwg.init(x, target.forward), target.forward, g)
    _, second = gwg.step(state, target.forward, g)
    assert (first.energy_evals, second.energy_evals) == (2, 1)  # the first step counts init's evaluation
    # a plain function: never cached
    plain = lambda y: target(y)  # noqa: E731
    state = gwg.init(x, plain)
    assert state.cache is None and cache_key(plain) is None
    _, info = gwg.step(state, plain, g)
    assert info.energy_evals == 2
    # a different module object with equal numbers is a different target
    other = _rbm()
    assert not cache_key(target).matches(cache_key(other))
    _, info = gwg.step(gwg.init(x, target), other, g)
    assert info.energy_evals == 2


def test_ais_intermediate_targets_are_keyed_by_level_and_model():
    """AIS passes a new intermediate target per level: its key never matches the previous level's, and a
    change of the model inside it is seen too."""
    from gradmc.evaluation.ais import BernoulliBase, _Intermediate, _TermMemo

    target = _rbm()
    base = BernoulliBase(torch.zeros(9, dtype=torch.float64))
    memo = _TermMemo(target, base)
    level = _Intermediate(target, base, 0.5, memo)
    key = cache_key(level)
    assert key is not None and key.matches(cache_key(level))
    assert not key.matches(cache_key(_Intermediate(target, base, 0.5, memo)))  # another level object
    _in_place(target)
    assert not key.matches(cache_key(level))
    assert cache_key(_Intermediate(lambda x: target(x), base, 0.5, memo)) is None  # a closure model: never cached


# ---------------------------------------------------------------------------------------------------
# misuse found by a new user's tries: each must be detected (a fresh evaluation), never a silent cache


def _fresh_agrees(sampler, state, target, seed=21):
    """One step of ``state`` equals one step from a fresh init of its x, and the cache is target(x)."""
    fresh = sampler.init(state.x, target)
    if hasattr(state, "order"):
        fresh = fresh._replace(order=state.order, position=state.position)
    a, _ = sampler.step(fresh, target, torch.Generator().manual_seed(seed))
    b, info = sampler.step(state, target, torch.Generator().manual_seed(seed))
    assert torch.equal(a.x, b.x)
    torch.testing.assert_close(b.cache.log_prob, target(b.x))
    return info


def _stepped(sampler, target, steps=3):
    g = torch.Generator().manual_seed(20)
    state = sampler.init(_bits(32, 9, 19), target)
    for _ in range(steps):
        state, _ = sampler.step(state, target, g)
    return state


@pytest.mark.parametrize("sampler_name", ["GWG", "Gibbs-1", "HB-3-1"])
def test_replaced_parameter_at_a_reused_address_is_detected(sampler_name):
    """A new Parameter may land at the freed address of the old one with version 0: identity, not the
    address, tells them apart (the kernel key and the RBM's transposed-weight cache)."""
    target, sampler = _rbm(), make_sampler(sampler_name)
    state = _stepped(sampler, target)
    g = torch.Generator().manual_seed(22)
    target.W = torch.nn.Parameter(torch.empty(1, dtype=torch.float64))
    target.W = torch.nn.Parameter(torch.randn(4, 9, generator=g, dtype=torch.float64))
    assert _fresh_agrees(sampler, state, target).energy_evals >= 2
    del target.W
    target.W = torch.nn.Parameter(torch.randn(4, 9, generator=g, dtype=torch.float64))
    chain = _stepped(sampler, target)  # a new chain on the new weights
    torch.testing.assert_close(chain.cache.log_prob, target(chain.x))


def test_numpy_scalar_attribute_change_is_detected():
    import numpy as np

    target = LatticeIsing(3, theta=0.3, bias=0.2).double()
    sampler = make_sampler("GWG")
    state = _stepped(sampler, target)
    target.theta = np.float32(0.9)
    assert _fresh_agrees(sampler, state, target).energy_evals == 2


class _Holder(torch.nn.Module):
    """A wrapper whose numbers the fingerprint cannot see: a plain list and a bound method."""

    def __init__(self, rbm):
        super().__init__()
        self.scales = [1.0]
        self.fn = rbm.forward

    def forward(self, x):
        return self.scales[0] * self.fn(x)


def test_module_with_unseeable_attributes_is_not_cached():
    holder = _Holder(_rbm())
    assert cache_key(holder) is None
    sampler = make_sampler("GWG")
    state = sampler.init(_bits(8, 9, 23), holder)
    holder.scales[0] = 3.0
    _, info = sampler.step(state, holder, torch.Generator().manual_seed(24))
    assert state.cache is None and info.energy_evals == 2


class _TemperedRBM(RBM):
    """A subclass with another density: the RBM's closed forms and incremental methods do not apply."""

    def forward(self, x):
        return 0.5 * super().forward(x)


@pytest.mark.parametrize("sampler_name", ["GWG", "Gibbs-1", "HB-3-1"])
def test_subclass_with_its_own_forward_uses_the_generic_path(sampler_name):
    from gradmc.core.gradients import own_method

    target = _TemperedRBM(9, 4, weight_std=1.0, generator=torch.Generator().manual_seed(25)).double()
    assert own_method(target, "eval_flips") is None and own_method(target, "log_prob_and_grad") is None
    assert own_method(_rbm(), "eval_flips") is not None
    state = _stepped(make_sampler(sampler_name), target)
    if state.cache is not None:
        torch.testing.assert_close(state.cache.log_prob, target(state.x))


@pytest.mark.parametrize("sampler_name", ["GWG", "Gibbs-1"])
def test_replaced_or_edited_state_x_is_evaluated_afresh(sampler_name):
    target, sampler = _rbm(), make_sampler(sampler_name)
    state = _stepped(sampler, target)
    replaced = state._replace(x=_bits(32, 9, 26))
    assert _fresh_agrees(sampler, replaced, target).energy_evals >= 2
    edited = _stepped(sampler, target)
    edited.x[:4] = 1.0 - edited.x[:4]
    assert _fresh_agrees(sampler, edited, target).energy_evals >= 2


def test_categorical_gwg_with_a_float64_model_and_float32_states():
    target = _potts()  # float64
    sampler = make_sampler("GWG", state="categorical")
    state = sampler.init(_onehot(8, target.num_sites, target.num_states, 27).float(), target)
    for _ in range(3):
        state, _ = sampler.step(state, target, torch.Generator().manual_seed(28))
    assert state.x.dtype == torch.float32 and bool((state.x.sum(-1) == 1).all())
