"""Unit tests of the binary sampler suite: enumeration helpers, flip-proposal probabilities, argument
checks, and structural properties of the steps (which coordinates can change). Exactness (pi P = pi)
is in test_sampler_exactness.py, determinism and Info costs in test_determinism.py."""

from __future__ import annotations

import itertools
import math

import pytest
import torch

from gradmc.core.exact import enumerate_binary
from gradmc.samplers.discrete.flips import draw_flip_counts, log_draws_probability, log_set_probability
from gradmc.samplers.discrete.gibbs import Gibbs
from gradmc.samplers.discrete.gwg import GWG
from gradmc.samplers.discrete.gwg_multi import GWGMulti
from gradmc.samplers.discrete.hamming_ball import BlockHammingBall, HammingBall
from gradmc.samplers.discrete.rwm import RandomWalkMetropolis
from gradmc.samplers.enumerate import ball_patterns, ball_size, combinations, multisets, state_index
from gradmc.targets import RBM

torch.set_num_threads(1)


@pytest.fixture(scope="module")
def rbm():
    g = torch.Generator().manual_seed(3)
    model = RBM(12, 6, weight_std=1.0, generator=g)
    with torch.no_grad():
        model.b.copy_(torch.randn(12, generator=g))
    return model


def _start(num_chains: int, dim: int, seed: int = 0) -> torch.Tensor:
    return torch.bernoulli(torch.full((num_chains, dim), 0.5), generator=torch.Generator().manual_seed(seed))


# ---------------------------------------------------------------------------------------------------
# enumeration helpers


@pytest.mark.parametrize("size,radius,expected", [(10, 1, 11), (4, 2, 11), (3, 1, 4), (3, 3, 8), (2, 5, 4)])
def test_ball_patterns(size, radius, expected):
    masks = ball_patterns(size, radius)
    assert ball_size(size, radius) == expected == masks.shape[0]
    assert masks.shape[1] == size
    assert bool((masks[0] == 0).all())  # the centre first
    assert bool((masks.sum(1) <= radius).all())
    assert len({tuple(r) for r in masks.tolist()}) == expected  # no duplicates


def test_multisets_and_combinations():
    counts, log_coef = multisets(5, 3)
    assert counts.shape == (math.comb(7, 3), 5) and bool((counts.sum(1) == 3).all())
    q = torch.softmax(torch.randn(5, generator=torch.Generator().manual_seed(1), dtype=torch.float64), 0)
    total = torch.exp(log_coef + log_draws_probability(q.log()[None], counts)).sum()
    assert abs(float(total) - 1.0) < 1e-12  # the multinomial distribution sums to 1
    assert combinations(5, 2).shape == (10, 2)
    assert torch.equal(state_index(enumerate_binary(6)), torch.arange(64))


@pytest.mark.parametrize("dim,num_draws", [(4, 3), (3, 5), (2, 3), (5, 1)])
def test_log_set_probability_matches_brute_force(dim, num_draws):
    """Q(A) from the composition sum equals the brute-force sum over all dim**N ordered draws."""
    g = torch.Generator().manual_seed(dim * 10 + num_draws)
    log_q = torch.log_softmax(2 * torch.randn(1, dim, generator=g, dtype=torch.float64), -1)
    brute: dict[tuple, float] = {}
    for seq in itertools.product(range(dim), repeat=num_draws):
        key = tuple(sorted(set(seq)))
        brute[key] = brute.get(key, 0.0) + math.exp(sum(float(log_q[0, i]) for i in seq))
    assert abs(sum(brute.values()) - 1.0) < 1e-12
    for key, p in brute.items():
        counts = torch.zeros(1, dim, dtype=torch.long)
        counts[0, list(key)] = 1
        counts[0, key[0]] += num_draws - len(key)  # any multiset with support A gives the same Q(A)
        assert abs(float(log_set_probability(log_q, counts, num_draws).exp()) - p) < 1e-12


def test_draw_flip_counts_frequencies():
    log_q = torch.log(torch.tensor([[0.5, 0.3, 0.2]], dtype=torch.float64)).expand(200_000, 3)
    counts = draw_flip_counts(log_q, 4, torch.Generator().manual_seed(0))
    assert bool((counts.sum(1) == 4).all())
    freq = counts.double().mean(0) / 4
    assert torch.allclose(freq, torch.tensor([0.5, 0.3, 0.2], dtype=torch.float64), atol=3e-3)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_sample_categorical_frequencies_and_log_probs(dtype):
    """Inverse-CDF draws follow softmax(logits) (-inf entries never drawn; large logits do not overflow)
    and the returned log-probabilities equal log_softmax at the drawn index."""
    from gradmc.samplers.base import sample_categorical

    logits = torch.tensor([[800.0, 800.0 + math.log(3.0), -torch.inf, 799.0]], dtype=dtype).expand(200_000, 4)
    idx, log_p = sample_categorical(logits, torch.Generator().manual_seed(1), return_log_prob=True)
    want = torch.softmax(logits[0].double(), -1)
    freq = torch.bincount(idx, minlength=4).double() / idx.numel()
    assert int(freq[2]) == 0 and torch.allclose(freq, want, atol=4e-3)
    torch.testing.assert_close(log_p, torch.log_softmax(logits, -1).gather(1, idx[:, None]).squeeze(1))


@pytest.mark.parametrize("length", [16385, 20_000, 200_000])
def test_blocked_draw_is_the_flat_draw(monkeypatch, length):
    """Rows longer than BLOCKED_DRAW_MIN are drawn from in two levels: the same index as the flat inverse CDF
    from the same uniforms (masked and -inf entries, the short tail block, and rows whose mass sits in one
    entry of the tail or one entry at the front included), and the same log-probabilities to float rounding."""
    from gradmc.samplers import base

    assert length > base.BLOCKED_DRAW_MIN
    g = torch.Generator().manual_seed(length)
    logits = torch.randn(64, length, generator=g) * 4.0
    logits[:, ::7] = -1e30  # categorical GWG's masked logit
    logits[:, -3:] = -torch.inf
    logits[0] = -torch.inf
    logits[0, length - 4] = 0.0  # all mass in the tail block's last drawable entry
    logits[1] = -torch.inf
    logits[1, 0] = 0.0  # all mass in the first entry
    blocked = base.sample_categorical(logits, torch.Generator().manual_seed(7), return_log_prob=True)
    monkeypatch.setattr(base, "BLOCKED_DRAW_MIN", 10**9)
    flat = base.sample_categorical(logits, torch.Generator().manual_seed(7), return_log_prob=True)
    assert torch.equal(blocked[0], flat[0]) and int(blocked[0][0]) == length - 4 and int(blocked[0][1]) == 0
    assert bool(torch.isfinite(logits.gather(1, blocked[0][:, None])).all())
    torch.testing.assert_close(blocked[1], flat[1], rtol=0, atol=2e-6)


def test_blocked_draw_follows_softmax():
    """Frequencies of two-level draws over a long row with a few heavy entries, spread over blocks, match
    softmax(logits) (the flat draw's own test above, at a length that takes the blocked path)."""
    from gradmc.samplers.base import BLOCKED_DRAW_MIN, DRAW_BLOCK, sample_categorical

    length = BLOCKED_DRAW_MIN + DRAW_BLOCK // 2
    heavy = torch.tensor([0, DRAW_BLOCK - 1, DRAW_BLOCK, 5 * DRAW_BLOCK + 3, length - 1])
    row = torch.full((length,), -torch.inf)
    row[heavy] = torch.log(torch.tensor([1.0, 2.0, 3.0, 4.0, 5.0]))
    g = torch.Generator().manual_seed(2)
    idx = torch.cat([sample_categorical(row.expand(10_000, length), g) for _ in range(10)])  # 100,000 draws
    freq = (idx[:, None] == heavy).double().mean(0)
    assert bool(torch.isin(idx, heavy).all())
    assert torch.allclose(freq, torch.tensor([1.0, 2.0, 3.0, 4.0, 5.0], dtype=torch.float64) / 15.0, atol=5e-3)


def test_fast_exp_helpers_match_torch():
    """exp_below_max / log_normaliser / log_softmax equal torch's on -inf, very negative and ordinary logits."""
    from gradmc.samplers.base import EXP_FLOOR, exp_below_max, log_normaliser, log_softmax

    g = torch.Generator().manual_seed(3)
    logits = torch.randn(50, 300, generator=g, dtype=torch.float64) * 30.0  # spreads far beyond -80
    logits[0] = torch.linspace(-500.0, 0.0, 300, dtype=torch.float64)
    logits[:, ::7] = -torch.inf
    top = logits.amax(-1, keepdim=True)
    weights = exp_below_max(logits, top)
    exact = torch.exp(logits - top)
    assert bool((weights[:, ::7] == 0).all()) and bool((weights[exact < math.exp(EXP_FLOOR)] == 0).all())
    assert bool(((weights - exact).abs() <= math.exp(EXP_FLOOR) + 4e-16 * exact).all())  # the shift, plus rounding
    torch.testing.assert_close(log_normaliser(logits), torch.logsumexp(logits, -1), rtol=0, atol=1e-12)
    torch.testing.assert_close(log_softmax(logits), torch.log_softmax(logits, -1), rtol=0, atol=1e-12)
    assert bool(log_normaliser(torch.full((2, 4), -torch.inf)).isnan().all())  # no valid entry: NaN, as torch


# ---------------------------------------------------------------------------------------------------
# argument checks


@pytest.mark.parametrize("make", [
    lambda: Gibbs(0), lambda: Gibbs(1, scan="bogus"), lambda: GWG(temperature=0.0),
    lambda: GWGMulti(num_draws=0), lambda: GWGMulti(num_draws=3, density="bogus"),
    lambda: GWGMulti(num_draws=3, temperature=-1.0), lambda: HammingBall(3, 0), lambda: HammingBall(3, 4),
    lambda: HammingBall(40, 20), lambda: BlockHammingBall(blocks=[[0, 1], [2]]),
    lambda: BlockHammingBall(blocks=[[0, 0]]), lambda: BlockHammingBall(blocks=[]),
    lambda: BlockHammingBall(blocks=[[0, 1]], radius=3), lambda: BlockHammingBall.contiguous(10, 4),
])
def test_bad_arguments_raise(make):
    with pytest.raises(ValueError):
        make()


def test_init_checks_dimension(rbm):
    x = _start(4, 12)
    with pytest.raises(ValueError, match="exceeds the dimension"):
        HammingBall(13, 1).init(x, rbm)
    with pytest.raises(ValueError, match="out of range"):
        BlockHammingBall(blocks=[[10, 12]]).init(x, rbm)
    with pytest.raises(ValueError):
        RandomWalkMetropolis().init(x + 0.5, rbm)  # not binary


def test_block_hamming_ball_is_hashable_and_stores_tuples():
    a = BlockHammingBall(blocks=torch.tensor([[0, 1], [2, 3]]))
    b = BlockHammingBall.contiguous(4, 2)
    assert a == b and hash(a) == hash(b) and a.blocks == ((0, 1), (2, 3))


# ---------------------------------------------------------------------------------------------------
# structure of the steps


def test_gwg_is_gwg_multi_with_one_draw(rbm):
    """GWG == GWG-1: same random stream, same trajectory."""
    x0 = _start(32, 12)
    trajs = []
    for sampler in (GWG(), GWGMulti(num_draws=1), GWGMulti(num_draws=1, density="set")):
        gen = torch.Generator().manual_seed(4)
        state = sampler.init(x0, rbm)
        for _ in range(10):
            state, _ = sampler.step(state, rbm, gen)
        trajs.append(state.x)
    assert torch.equal(trajs[0], trajs[1]) and torch.equal(trajs[0], trajs[2])


def test_systematic_gibbs_updates_sites_in_order(rbm):
    sampler = Gibbs(1, scan="systematic")
    gen = torch.Generator().manual_seed(5)
    state = sampler.init(_start(256, 12), rbm)
    for t in range(30):
        x_before = state.x
        state, _ = sampler.step(state, rbm, gen)
        changed = (state.x != x_before).any(0)
        assert not bool(changed[torch.arange(12) != t % 12].any())  # only site t mod D may change
        assert state.position == (t + 1) % 12


def test_systematic_gibbs_block_windows_wrap():
    assert Gibbs(2, scan="systematic").scan_blocks(5).tolist() == [[0, 1], [1, 2], [2, 3], [3, 4], [4, 0]]
    assert Gibbs(2, scan="systematic").scan_blocks(6).tolist() == [[0, 1], [2, 3], [4, 5]]


def test_block_hamming_ball_changes_one_block(rbm):
    sampler = BlockHammingBall.contiguous(12, 4, radius=2)
    gen = torch.Generator().manual_seed(6)
    state = sampler.init(_start(512, 12), rbm)
    for t in range(5):
        x_before = state.x
        state, info = sampler.step(state, rbm, gen)
        diff = (state.x != x_before).reshape(512, 3, 4)
        assert bool((diff.any(2).sum(1) <= 1).all())  # at most one block touched per chain
        # 11 ball points; the first step also counts init's evaluation of x, which the RBM's cache uses
        assert int(info.sites_changed.max()) <= 4 and info.energy_evals == (12 if t == 0 else 11)
        assert int(info.sites_changed.sum()) > 0


def test_hamming_ball_scan_consumes_permutation(rbm):
    sampler = HammingBall(block_size=5, radius=1)
    gen = torch.Generator().manual_seed(7)
    state = sampler.init(_start(64, 12), rbm)
    state, _ = sampler.step(state, rbm, gen)
    assert state.position == 5 and state.order.shape == (64, 12)
    order = state.order
    state, _ = sampler.step(state, rbm, gen)
    assert state.position == 10 and torch.equal(state.order, order)
    state, _ = sampler.step(state, rbm, gen)  # 2 coordinates left < 5: a fresh permutation
    assert state.position == 5 and not torch.equal(state.order, order)


@pytest.mark.parametrize("sampler", [GWGMulti(num_draws=5), GWGMulti(num_draws=3, density="set"),
                                     RandomWalkMetropolis(), HammingBall(10, 1)])
def test_float32_targets_run_and_move(rbm, sampler):
    gen = torch.Generator().manual_seed(8)
    state = sampler.init(_start(64, 12), rbm)
    moved = 0
    for _ in range(20):
        state, info = sampler.step(state, rbm, gen)
        assert state.x.dtype == torch.float32 and bool(torch.isfinite(info.acceptance_prob).all())
        moved += int(info.sites_changed.sum())
    assert moved > 0
    assert bool(((state.x == 0) | (state.x == 1)).all())
