"""The discrete samplers leave their target invariant (EXPERIMENTS.md A0, "Exactness").

Targets small enough to enumerate (D = 8, 256 states), far from uniform:
- an RBM with 8 visible and 5 hidden units, W ~ N(0, 1), b, c ~ N(0, 1);
- a dense pairwise binary model log p(x) = x^T J x + b^T x (local class below).

Checks:
(a) one-step stationarity: N chains drawn exactly from pi, ONE step of the sampler (all chains in one
    batched call), histogram of the 256 states against N pi: chi-square test and a bound on every
    cell's error from multinomial standard errors;
(b) GWG's exact 256 x 256 transition matrix built from the sampler's public ``proposal_logits`` and
    ``log_prob_and_grad``: rows sum to 1, pi P = pi, detailed balance; and the real ``step`` from a
    fixed state reproduces the matrix row;
(c) teeth: a GWG without the reverse proposal term fails (a) and (b).

(d) every binary kernel's exact one-step matrix P, built from its ``transition_probabilities`` (which
    shares the proposal / acceptance code with ``step``), on three targets: the RBM, the pairwise model
    and a random-coupling Ising model on a 3x3 torus (D = 9): rows sum to 1, pi P = pi and detailed
    balance to 1e-10 (float64; the requirement is 1e-6), and the kernel moves; each scan block of the
    systematic Gibbs sampler separately, and a whole systematic sweep;
(e) the real ``step`` from a fixed state reproduces the enumerated row (chi-square), per kernel;
(f) teeth: GWG / GWG-N with a flipped sign, a different temperature, a dropped or miscounted reverse
    term in the acceptance (shared by step and enumeration) break pi P = pi by far more than 1e-4;
(g) chromatic Gibbs (the sampler of the Fig. 6 true-model data) on the 3x3 torus Ising model: every
    colour-class update is pi-invariant and reversible, a sweep is pi-invariant, ``step`` reproduces the
    sweep's row; teeth: one "class" holding coupled sites breaks invariance.

All seeds are fixed, so the statistical tests are deterministic: a pass is not a flaky pass.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import pytest
import torch
from _exact_targets import PairwiseBinary
from scipy import stats

from gradmc.core.exact import enumerate_binary, exact_distribution
from gradmc.core.gradients import log_prob_and_grad
from gradmc.samplers.base import metropolis_hastings_accept, sample_categorical
from gradmc.samplers.discrete import GWG, make_sampler
from gradmc.samplers.discrete.chromatic_gibbs import ChromaticGibbs, greedy_colouring
from gradmc.samplers.discrete.flips import log_draws_probability, log_flip_probability
from gradmc.samplers.discrete.gibbs import Gibbs
from gradmc.samplers.discrete.gwg import GWGState
from gradmc.samplers.discrete.gwg_multi import GWGMulti
from gradmc.samplers.discrete.hamming_ball import BlockHammingBall, HammingBall
from gradmc.samplers.discrete.rwm import RandomWalkMetropolis
from gradmc.samplers.enumerate import (
    detailed_balance_error,
    state_index,
    stationarity_error,
    transition_matrix,
)
from gradmc.targets import RBM

torch.set_num_threads(1)

D = 8
NUM_STATES = 2**D
N_STATIONARY = 500_000  # chains in the one-step test (cells expecting < 5 counts are pooled)
N_ROW = 100_000  # chains in the single-row test
P_MIN = 1e-4  # smallest accepted chi-square p-value
# Bonferroni bound for the per-cell check: under pi, z_k = (p_hat_k - pi_k) / s_k with
# s_k = sqrt(pi_k (1 - pi_k) / N) is approximately N(0, 1) (each count is Binomial(N, pi_k); CLT), so
# P(max_k |z_k| > Z) <= 256 * 2 * (1 - Phi(Z)) = 256 * 3.8e-8 ~ 1e-5 for Z = 5.5.
Z_MAX = 5.5
# EXPERIMENTS.md A0: the authors' samplers reach max marginal error <= 0.003. A marginal's standard
# error is <= 0.5 / sqrt(N) = 7.1e-4 here, so 0.003 is > 4 standard errors.
MARGINAL_TOL = 0.003
_BIT_WEIGHTS = 2 ** torch.arange(D - 1, -1, -1, dtype=torch.float64)  # enumerate_binary: MSB first


class GWGNoReverse(GWG):
    """Deliberately WRONG GWG: accepts with min(1, exp(f(x') - f(x))), the q(i|x')/q(i|x) term dropped."""

    def step(self, state: GWGState, log_prob, generator: torch.Generator):
        x = state.x
        f_x, grad_x = log_prob_and_grad(log_prob, x)
        idx = sample_categorical(self.proposal_logits(x, grad_x), generator)
        rows = torch.arange(x.shape[0])
        x_new = x.clone()
        x_new[rows, idx] = 1.0 - x_new[rows, idx]
        f_new, _ = log_prob_and_grad(log_prob, x_new)
        accepted, _ = metropolis_hastings_accept(f_new - f_x, generator)
        x_out = torch.where(accepted[:, None], x_new, x)
        return GWGState(x=x_out, log_prob=torch.where(accepted, f_new, f_x)), None


@pytest.fixture(scope="module")
def rbm():
    g = torch.Generator().manual_seed(20210401)
    model = RBM(D, 5, weight_std=1.0, generator=g).double()
    with torch.no_grad():
        model.b.copy_(torch.randn(D, generator=g, dtype=torch.float64))
        model.c.copy_(torch.randn(5, generator=g, dtype=torch.float64))
    return model


@pytest.fixture(scope="module")
def pairwise():
    g = torch.Generator().manual_seed(7)
    A = torch.randn(D, D, generator=g, dtype=torch.float64) * 0.5
    return PairwiseBinary(J=(A + A.T) / 2, b=torch.randn(D, generator=g, dtype=torch.float64))


@pytest.fixture(scope="module")
def exact(rbm, pairwise):
    """name -> (target, states (256, D) float64, pi (256,) float64)."""
    out = {}
    for name, target in (("rbm", rbm), ("pairwise", pairwise)):
        states, pi = exact_distribution(target, D)
        # far from uniform: entropy well below log 256 = 5.55 nats
        assert -(pi * pi.log()).sum() < 4.6
        out[name] = (target, states, pi)
    return out


def _state_index(x: torch.Tensor) -> torch.Tensor:
    """(C, D) binary -> (C,) int64 row index in enumerate_binary's order."""
    return (x.double() @ _BIT_WEIGHTS).round().long()


def _chisquare_pvalue(counts: torch.Tensor, expected: torch.Tensor) -> float:
    """Pearson chi-square p-value; cells with expected count < 5 are pooled into one cell."""
    small = expected < 5
    obs, exp = counts[~small], expected[~small]
    if small.any():
        obs = torch.cat([obs, counts[small].sum()[None]])
        exp = torch.cat([exp, expected[small].sum()[None]])
    return float(stats.chisquare(obs.numpy(), exp.numpy()).pvalue)


def _one_step_from_pi(sampler, target, states, pi, num_chains: int, seed: int):
    """Draw num_chains states from pi, take one batched step; return (256,) counts and the states."""
    gen = torch.Generator().manual_seed(seed)
    x0 = states[torch.multinomial(pi, num_chains, replacement=True, generator=gen)]  # (N, D)
    state = sampler.init(x0, target)
    state, _ = sampler.step(state, target, gen)
    counts = torch.bincount(_state_index(state.x), minlength=NUM_STATES).double()
    return counts, state.x


def _gwg_transition_matrix(sampler: GWG, target, states: torch.Tensor, reverse_term: bool = True):
    """Exact GWG kernel P (256, 256): P[x, flip_i(x)] = q(i|x) min(1, e^{f(y) - f(x)} q(i|y) / q(i|x)).

    Built independently of ``GWG.step``, from the public proposal logits; the diagonal takes the
    rejected mass. ``reverse_term=False`` builds the kernel of the broken variant.
    """
    S = states.shape[0]
    f, grad = log_prob_and_grad(target, states)  # (S,), (S, D)
    log_q = torch.log_softmax(sampler.proposal_logits(states, grad), -1)  # (S, D): log q(i | x)
    src = torch.arange(S)
    flip = 2 ** torch.arange(D - 1, -1, -1)  # bit i of the index sits at position D - 1 - i
    dst = src[:, None] ^ flip[None, :]  # (S, D): index of x with bit i flipped
    cols = torch.arange(D)[None, :].expand(S, D)
    log_alpha = f[dst] - f[:, None]
    if reverse_term:
        log_alpha = log_alpha + log_q[dst, cols] - log_q
    move = log_q.exp() * log_alpha.clamp(max=0.0).exp()  # (S, D)
    P = torch.zeros(S, S, dtype=torch.float64)
    P[src[:, None], dst] = move
    P[src, src] = 1.0 - move.sum(1)
    return P


# ---------------------------------------------------------------------------------------------------
# (a) one-step stationarity

CASES = [
    ("rbm", "Gibbs-1"),
    ("rbm", "Gibbs-2"),
    ("rbm", "GWG"),
    ("rbm", "BlockGibbs"),
    ("pairwise", "Gibbs-1"),
    ("pairwise", "Gibbs-2"),
    ("pairwise", "GWG"),
]


@pytest.mark.parametrize("target_name,sampler_name", CASES)
def test_one_step_leaves_pi_invariant(exact, target_name, sampler_name):
    target, states, pi = exact[target_name]
    seed = 1000 + CASES.index((target_name, sampler_name))
    counts, x1 = _one_step_from_pi(make_sampler(sampler_name), target, states, pi, N_STATIONARY, seed)
    assert counts.sum() == N_STATIONARY
    p_value = _chisquare_pvalue(counts, N_STATIONARY * pi)
    freq = counts / N_STATIONARY
    se = (pi * (1 - pi) / N_STATIONARY).sqrt()  # (256,) multinomial standard errors
    z_max = float(((freq - pi).abs() / se).max())
    abs_err = float((freq - pi).abs().max())
    marginal_err = float((x1.double().mean(0) - pi @ states).abs().max())
    print(f"{target_name}/{sampler_name}: chi2 p={p_value:.3g} max|err|={abs_err:.2e} "
          f"(bound {Z_MAX * float(se.max()):.2e}) max z={z_max:.2f} marginal err={marginal_err:.2e}")
    assert p_value > P_MIN
    assert z_max < Z_MAX
    assert marginal_err < MARGINAL_TOL


# ---------------------------------------------------------------------------------------------------
# (b) exact GWG transition matrix


@pytest.mark.parametrize("target_name", ["rbm", "pairwise"])
def test_gwg_transition_matrix_is_reversible(exact, target_name):
    target, states, pi = exact[target_name]
    P = _gwg_transition_matrix(GWG(temperature=2.0), target, states)
    assert (P >= -1e-12).all()  # the diagonal 1 - sum(moves) may round to -1e-17
    assert torch.allclose(P.sum(1), torch.ones(NUM_STATES, dtype=torch.float64), rtol=0, atol=1e-12)
    stationarity_err = float((pi @ P - pi).abs().max())
    flux = pi[:, None] * P  # (256, 256): pi_x P_xy
    balance_err = float((flux - flux.T).abs().max())
    print(f"{target_name}: max|pi P - pi|={stationarity_err:.2e} max|detailed balance|={balance_err:.2e} "
          f"mean move prob={float(1 - P.diagonal() @ pi):.3f}")
    assert stationarity_err < 1e-12  # well inside the required 1e-6 (float64 round-off only)
    assert balance_err < 1e-12
    assert float(1 - P.diagonal() @ pi) > 0.1  # the kernel actually moves (not P = I)


@pytest.mark.parametrize("target_name,start", [("rbm", "mode"), ("rbm", "rarest"), ("pairwise", "median")])
def test_gwg_step_matches_transition_row(exact, target_name, start):
    target, states, pi = exact[target_name]
    order = torch.argsort(pi)
    x0_index = {"mode": order[-1], "rarest": order[0], "median": order[NUM_STATES // 2]}[start]
    sampler = GWG(temperature=2.0)
    row = _gwg_transition_matrix(sampler, target, states)[x0_index]  # (256,)
    gen = torch.Generator().manual_seed(11)
    state = sampler.init(states[x0_index].expand(N_ROW, D).clone(), target)
    state, _ = sampler.step(state, target, gen)
    counts = torch.bincount(_state_index(state.x), minlength=NUM_STATES).double()
    support = row > 0  # x0 and its 8 one-flip neighbours
    assert int(support.sum()) <= D + 1
    assert counts[~support].sum() == 0
    p_value = _chisquare_pvalue(counts[support], N_ROW * row[support])
    print(f"{target_name}/{start}: row chi2 p={p_value:.3g} stay prob={float(row[x0_index]):.3f}")
    assert p_value > P_MIN


# ---------------------------------------------------------------------------------------------------
# (c) the checks can fail


def test_broken_gwg_fails_one_step_stationarity(exact):
    target, states, pi = exact["pairwise"]
    counts, _ = _one_step_from_pi(GWGNoReverse(), target, states, pi, N_STATIONARY, seed=2000)
    p_value = _chisquare_pvalue(counts, N_STATIONARY * pi)
    z_max = float(((counts / N_STATIONARY - pi).abs() / (pi * (1 - pi) / N_STATIONARY).sqrt()).max())
    print(f"broken GWG: chi2 p={p_value:.3g} max z={z_max:.1f}")
    assert p_value < 1e-30
    assert z_max > Z_MAX


@pytest.mark.parametrize("target_name", ["rbm", "pairwise"])
def test_broken_gwg_transition_matrix_is_not_invariant(exact, target_name):
    target, states, pi = exact[target_name]
    P = _gwg_transition_matrix(GWG(temperature=2.0), target, states, reverse_term=False)
    err = float((pi @ P - pi).abs().max())
    print(f"{target_name}: broken max|pi P - pi|={err:.2e}")
    assert err > 1e-3
    assert math.isfinite(err)


# ---------------------------------------------------------------------------------------------------
# (d) exact transition matrices of every binary kernel

ISING_SIDE = 3
STAT_TOL = 1e-10  # float64 round-off is ~1e-16; EXPERIMENTS.md A0 asks for 1e-6
TEETH_TOL = 1e-4  # a broken kernel must miss pi P = pi by more than this


class TorusIsing:
    """Ising model with random couplings on a cyclic side x side lattice, spins s = 2x - 1:
    log p(x) = sum_{edges ij} J_ij s_i s_j + h^T s + const, x (C, D) in {0, 1}, D = side**2.

    Args:
        side: lattice side (3: D = 9, every site has 4 distinct neighbours).
        generator: draws J_ij ~ N(0.3, 0.5^2) per edge (mostly ferromagnetic) and h ~ N(0, 0.3^2).
    """

    def __init__(self, side: int, generator: torch.Generator):
        edges = []
        for r in range(side):
            for c in range(side):
                i = r * side + c
                edges.append((i, r * side + (c + 1) % side))
                edges.append((i, ((r + 1) % side) * side + c))
        edges = torch.tensor(edges)  # (2 * side**2, 2)
        J = 0.3 + 0.5 * torch.randn(len(edges), generator=generator, dtype=torch.float64)
        # dense symmetric (D, D) couplings with zero diagonal: fine at D = 9, and a matmul is fast
        self.K = torch.zeros(side * side, side * side, dtype=torch.float64)
        self.K[edges[:, 0], edges[:, 1]] = J
        self.K = self.K + self.K.T
        self.h = 0.3 * torch.randn(side * side, generator=generator, dtype=torch.float64)

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        """(C, D) -> (C,) unnormalised log-probability, differentiable in x."""
        s = 2.0 * x - 1.0
        return 0.5 * ((s @ self.K) * s).sum(-1) + s @ self.h


def _rbm_block_gibbs_transition_probabilities(rbm: RBM, x: torch.Tensor):
    """Exact x -> h -> x' kernel: P(x' | x) = sum_h p(h | x) p(x' | h), from the conditionals that
    ``RBM.sample_hidden`` / ``sample_visible`` draw from. Returns all 2**D next states and their probs."""
    with torch.no_grad():
        hs = enumerate_binary(rbm.num_hidden, torch.float64)  # (2**H, H)
        xs = enumerate_binary(rbm.num_visible, torch.float64)  # (2**D, D)
        ph = rbm.hidden_probs(x)  # (C, H)
        p_h = (hs[None] * ph[:, None] + (1 - hs[None]) * (1 - ph[:, None])).prod(-1)  # (C, 2**H)
        pv = rbm.visible_probs(hs)  # (2**H, D)
        p_x = (xs[None] * pv[:, None] + (1 - xs[None]) * (1 - pv[:, None])).prod(-1)  # (2**H, 2**D)
    return xs.expand(x.shape[0], -1, -1), p_h @ p_x


def _block_hb(dim: int, radius: int) -> BlockHammingBall:
    """Block-HB with blocks from the structure: the lattice rows for the 3x3 Ising model (D = 9),
    two halves of the coordinates otherwise (D = 8)."""
    return BlockHammingBall.contiguous(dim, 3 if dim == 9 else 4, radius=radius)


# name -> kernel factory (dim -> sampler)
KERNELS = {
    "Gibbs-1": lambda d: Gibbs(1),
    "Gibbs-2": lambda d: Gibbs(2),
    "Gibbs-1-systematic": lambda d: Gibbs(1, scan="systematic"),
    "Gibbs-2-systematic": lambda d: Gibbs(2, scan="systematic"),
    "GWG": lambda d: GWG(),
    "GWG-T1": lambda d: GWG(temperature=1.0),
    "GWG-3": lambda d: GWGMulti(3),
    "GWG-5": lambda d: GWGMulti(5),
    "GWG-3-set": lambda d: GWGMulti(3, density="set"),
    "GWG-5-set": lambda d: GWGMulti(5, density="set"),
    "HB-3-1": lambda d: HammingBall(3, 1),
    "HB-4-2": lambda d: HammingBall(4, 2),
    "Block-HB": lambda d: _block_hb(d, 1),
    "Block-HB-r2": lambda d: _block_hb(d, 2),
    "RWM": lambda d: RandomWalkMetropolis(),
}
MATRIX_TARGETS = ("rbm", "pairwise", "ising")


@pytest.fixture(scope="module")
def exact_all(exact):
    """exact plus the 3x3 torus Ising model (D = 9, 512 states)."""
    target = TorusIsing(ISING_SIDE, torch.Generator().manual_seed(33))
    states, pi = exact_distribution(target, ISING_SIDE**2)
    return {**exact, "ising": (target, states, pi)}


def _kernel_matrix(kernel_name: str, target, states: torch.Tensor, **kwargs) -> torch.Tensor:
    if kernel_name == "BlockGibbs":
        return transition_matrix(lambda x: _rbm_block_gibbs_transition_probabilities(target, x), states)
    sampler = KERNELS[kernel_name](states.shape[1])
    return transition_matrix(lambda x: sampler.transition_probabilities(x, target, **kwargs), states)


def _check_kernel(P: torch.Tensor, pi: torch.Tensor, label: str, reversible: bool = True) -> None:
    S = pi.shape[0]
    assert (P >= -1e-12).all()
    assert torch.allclose(P.sum(1), torch.ones(S, dtype=torch.float64), rtol=0, atol=1e-12)
    stat, balance = stationarity_error(P, pi), detailed_balance_error(P, pi)
    move = float(1 - P.diagonal() @ pi)
    print(f"{label}: max|pi P - pi|={stat:.1e} max|detailed balance|={balance:.1e} move prob={move:.3f}")
    assert stat < STAT_TOL
    if reversible:
        assert balance < STAT_TOL
    assert move > 0.05  # not the identity kernel


MATRIX_CASES = [(t, k) for t in MATRIX_TARGETS for k in KERNELS] + [("rbm", "BlockGibbs")]


@pytest.mark.parametrize("target_name,kernel_name", MATRIX_CASES)
def test_exact_kernel_is_stationary_and_reversible(exact_all, target_name, kernel_name):
    """Every kernel here is reversible: Gibbs / HB block updates are, MH is, and a uniform mixture of
    reversible kernels is (the random-scan average; for the systematic scan, see the next test)."""
    target, states, pi = exact_all[target_name]
    P = _kernel_matrix(kernel_name, target, states)
    _check_kernel(P, pi, f"{target_name}/{kernel_name}")


@pytest.mark.parametrize("block_size", [1, 2])
def test_systematic_scan_blocks_and_sweep(exact_all, block_size):
    """Each block update of the systematic scan is a reversible, pi-invariant kernel; a full sweep
    (their product, in scan order) is pi-invariant but in general not reversible."""
    target, states, pi = exact_all["ising"]
    sampler = Gibbs(block_size, scan="systematic")
    D = states.shape[1]
    sweep = torch.eye(states.shape[0], dtype=torch.float64)
    position = 0
    for _ in range(D):  # D steps: at least one full cycle of windows
        block = ((position + torch.arange(block_size)) % D)[None]
        P = transition_matrix(lambda x, b=block: sampler.transition_probabilities(x, target, blocks=b), states)
        _check_kernel(P, pi, f"ising/systematic block {block.tolist()}")
        sweep = sweep @ P
        position = (position + block_size) % D
    stat, balance = stationarity_error(sweep, pi), detailed_balance_error(sweep, pi)
    print(f"ising/Gibbs-{block_size} systematic sweep: max|pi P - pi|={stat:.1e} detailed balance={balance:.1e}")
    assert stat < STAT_TOL
    assert balance > 1e-6  # the sweep is genuinely non-reversible, yet invariant


def test_hamming_ball_single_block_is_invariant(exact_all):
    """One fixed HB block update (no averaging over blocks) already leaves pi invariant."""
    target, states, pi = exact_all["ising"]
    for block in ([0, 4, 8], [1, 2, 3]):
        P = transition_matrix(
            lambda x, b=block: HammingBall(3, 1).transition_probabilities(x, target, blocks=torch.tensor([b])),
            states)
        _check_kernel(P, pi, f"ising/HB-3-1 block {block}")


def test_set_density_dominates_draws_density(exact_all):
    """GWG-N with the marginal set probability has every off-diagonal entry >= the Eq. 27 kernel's
    (Peskun order: min of sums >= sum of mins), hence a higher move probability."""
    target, states, pi = exact_all["pairwise"]
    for n in (3, 5):
        P_draws = _kernel_matrix(f"GWG-{n}", target, states)
        P_set = _kernel_matrix(f"GWG-{n}-set", target, states)
        off = ~torch.eye(states.shape[0], dtype=torch.bool)
        print(f"GWG-{n}: move prob draws={float(1 - P_draws.diagonal() @ pi):.3f} "
              f"set={float(1 - P_set.diagonal() @ pi):.3f}")
        assert bool((P_set[off] >= P_draws[off] - 1e-12).all())
        assert float(P_set.diagonal() @ pi) < float(P_draws.diagonal() @ pi)


# ---------------------------------------------------------------------------------------------------
# (e) the real step reproduces the enumerated row

N_ROW_KERNEL = 40_000


def _row_from_enumeration(next_states: torch.Tensor, probs: torch.Tensor) -> torch.Tensor:
    """(1, K, D), (1, K) -> (2**D,) probabilities of the next state."""
    row = torch.zeros(2 ** next_states.shape[-1], dtype=torch.float64)
    return row.scatter_add_(0, state_index(next_states[0]), probs[0].double())


@pytest.mark.parametrize("kernel_name", [*KERNELS, "BlockGibbs"])
def test_step_matches_enumerated_row(exact_all, kernel_name):
    target_name = "rbm" if kernel_name == "BlockGibbs" else "pairwise"
    target, states, pi = exact_all[target_name]
    D = states.shape[1]
    x0 = states[torch.argsort(pi)[3 * states.shape[0] // 4]][None]  # a fairly likely, not modal, state
    if kernel_name == "BlockGibbs":
        sampler = make_sampler("BlockGibbs")
        row = _row_from_enumeration(*_rbm_block_gibbs_transition_probabilities(target, x0))
    else:
        sampler = KERNELS[kernel_name](D)
        kwargs = {}
        if isinstance(sampler, Gibbs) and sampler.scan == "systematic":  # the first step updates window 0
            kwargs = {"blocks": torch.arange(sampler.block_size)[None]}
        row = _row_from_enumeration(*sampler.transition_probabilities(x0, target, **kwargs))
    gen = torch.Generator().manual_seed(500 + [*KERNELS, "BlockGibbs"].index(kernel_name))
    state = sampler.init(x0.expand(N_ROW_KERNEL, D).clone(), target)
    state, _ = sampler.step(state, target, gen)
    counts = torch.bincount(state_index(state.x), minlength=states.shape[0]).double()
    support = row > 1e-15
    assert counts[~support].sum() == 0
    p_value = _chisquare_pvalue(counts[support], N_ROW_KERNEL * row[support])
    print(f"{target_name}/{kernel_name}: row chi2 p={p_value:.3g} support={int(support.sum())} "
          f"stay prob={float(row[state_index(x0)[0]]):.3f}")
    assert p_value > P_MIN


# ---------------------------------------------------------------------------------------------------
# (f) teeth: mutated GWG / GWG-N kernels (the mutation sits in log_acceptance, which step and
# transition_probabilities share, so the exact-matrix check sees exactly what step would do)

MUTATIONS = ("reverse_sign", "reverse_temperature", "no_reverse", "no_ratio", "reverse_distinct")


class _Mutated:
    """Deliberately WRONG acceptance ratios (subclasses set ``mutation``):

    reverse_sign: the reverse proposal uses softmax(-d(x') / T) (sign of d flipped, reverse only);
    reverse_temperature: the reverse proposal uses temperature 1 while the forward one uses T = 2;
    no_reverse: log q(draws | x') dropped (forward term kept);
    no_ratio: both proposal terms dropped, min(1, exp(f(x') - f(x)));
    reverse_distinct: the reverse move scored by each distinct index once, the forward one by all N draws.
    """

    def log_acceptance(self, f_x, log_q_x, f_new, log_q_new, counts):
        m = self.mutation
        if m == "reverse_sign":  # log_softmax is shift invariant: log_softmax(-log q) = log_softmax(-d / T)
            log_q_new = torch.log_softmax(-log_q_new, -1)
        elif m == "reverse_temperature":  # d / 1 = (d / T) * T
            log_q_new = torch.log_softmax(log_q_new * self.temperature / 1.0, -1)
        elif m == "no_reverse":
            return f_new - f_x - log_flip_probability(log_q_x, counts, self.num_draws, self.density)
        elif m == "no_ratio":
            return f_new - f_x
        elif m == "reverse_distinct":
            return (f_new - f_x + log_draws_probability(log_q_new, (counts > 0).long())
                    - log_draws_probability(log_q_x, counts))
        return super().log_acceptance(f_x, log_q_x, f_new, log_q_new, counts)


@dataclass(frozen=True)
class MutatedGWG(_Mutated, GWG):
    mutation: str = "reverse_sign"


@dataclass(frozen=True)
class MutatedGWGMulti(_Mutated, GWGMulti):
    mutation: str = "reverse_sign"


TEETH_CASES = [("GWG", m) for m in MUTATIONS if m != "reverse_distinct"] + [("GWG-3", m) for m in MUTATIONS]


@pytest.mark.parametrize("sampler_name,mutation", TEETH_CASES)
def test_mutated_gwg_fails_exact_check(exact_all, sampler_name, mutation):
    errors = {}
    for target_name in MATRIX_TARGETS:
        target, states, pi = exact_all[target_name]
        if sampler_name == "GWG":
            sampler = MutatedGWG(temperature=2.0, mutation=mutation)
        else:
            sampler = MutatedGWGMulti(num_draws=3, temperature=2.0, mutation=mutation)
        P = transition_matrix(lambda x, s=sampler, t=target: s.transition_probabilities(x, t), states)
        assert torch.allclose(P.sum(1), torch.ones_like(pi), rtol=0, atol=1e-12)  # still a valid kernel
        errors[target_name] = stationarity_error(P, pi)
    print(f"{sampler_name} mutation {mutation}: max|pi P - pi| = "
          + ", ".join(f"{k} {v:.2e}" for k, v in errors.items()))
    for value in errors.values():
        assert value > TEETH_TOL


def test_mutated_gwg_multi_fails_in_step_too(exact_all):
    """The mutation reaches step as well: one step from pi with the reverse_distinct GWG-3 (the
    subtlest mutation) departs from pi by many standard errors."""
    target, states, pi = exact_all["pairwise"]
    sampler = MutatedGWGMulti(num_draws=3, mutation="reverse_distinct")
    counts, _ = _one_step_from_pi(sampler, target, states, pi, N_STATIONARY, seed=2100)
    z_max = float(((counts / N_STATIONARY - pi).abs() / (pi * (1 - pi) / N_STATIONARY).sqrt()).max())
    print(f"mutated GWG-3 reverse_distinct one step from pi: max z={z_max:.1f}")
    assert z_max > Z_MAX


# ---------------------------------------------------------------------------------------------------
# (g) chromatic Gibbs on the 3x3 torus Ising model


def _chromatic_sweep_matrix(kernel: ChromaticGibbs, target, states: torch.Tensor, pi: torch.Tensor,
                            check_classes: bool = True) -> torch.Tensor:
    """The exact sweep matrix: the product of the class updates in colour order (each checked if asked)."""
    sweep = torch.eye(states.shape[0], dtype=torch.float64)
    for colour in range(len(kernel.classes)):
        P = transition_matrix(lambda x, c=colour: kernel.transition_probabilities(x, target, c), states)
        if check_classes:
            _check_kernel(P, pi, f"ising/chromatic class {kernel.classes[colour].tolist()}")
        sweep = sweep @ P
    return sweep


def test_chromatic_gibbs_is_stationary(exact_all):
    target, states, pi = exact_all["ising"]
    classes = greedy_colouring(target.K)
    assert len(classes) >= 3 and sorted(torch.cat(classes).tolist()) == list(range(ISING_SIDE**2))  # odd torus
    assert all(float(target.K[c][:, c].abs().max()) == 0.0 for c in classes)  # a proper colouring
    sweep = _chromatic_sweep_matrix(ChromaticGibbs(tuple(classes)), target, states, pi)
    stat = stationarity_error(sweep, pi)
    print(f"ising/chromatic sweep: max|pi P - pi|={stat:.1e}")
    assert stat < STAT_TOL
    # teeth: updating coupled sites together from their conditionals at the old state is not Gibbs
    broken = ChromaticGibbs((torch.arange(ISING_SIDE**2),))
    assert stationarity_error(_chromatic_sweep_matrix(broken, target, states, pi, check_classes=False), pi) > TEETH_TOL


def test_chromatic_gibbs_step_matches_sweep_row(exact_all):
    target, states, pi = exact_all["ising"]
    kernel = ChromaticGibbs(tuple(greedy_colouring(target.K)))
    sweep = _chromatic_sweep_matrix(kernel, target, states, pi, check_classes=False)
    x0 = states[torch.argsort(pi)[3 * states.shape[0] // 4]][None]
    row = sweep[state_index(x0)[0]]
    gen = torch.Generator().manual_seed(77)
    state = kernel.init(x0.expand(N_ROW_KERNEL, states.shape[1]).clone(), target, gen)
    state, info = kernel.step(state, target, gen)
    assert info.energy_evals == info.grad_evals == len(kernel.classes) and bool(info.accepted.all())
    counts = torch.bincount(state_index(state.x), minlength=states.shape[0]).double()
    support = row > 1e-15
    assert counts[~support].sum() == 0
    p_value = _chisquare_pvalue(counts[support], N_ROW_KERNEL * row[support])
    print(f"ising/chromatic sweep: row chi2 p={p_value:.3g} support={int(support.sum())}")
    assert p_value > P_MIN


def test_transition_matrix_tolerates_round_off_of_the_stay_mass_only():
    """1 - sum(moves) in float32 can come out at -1e-7: tolerated (and counted as that value); a clearly negative
    probability raises, in either precision."""
    states = enumerate_binary(2)

    def rows(stay: float, dtype):
        def enumeration(x):
            flips = x[:, None, :].repeat(1, 3, 1)
            flips[:, 0, 0] = 1 - flips[:, 0, 0]
            flips[:, 1, 1] = 1 - flips[:, 1, 1]
            probs = torch.tensor([0.5, 0.5 - stay, stay], dtype=dtype).expand(x.shape[0], 3)
            return flips, probs
        return enumeration

    P = transition_matrix(rows(-1.2e-7, torch.float32), states)
    assert P.sum(1).sub(1).abs().max() < 1e-6
    for dtype in (torch.float32, torch.float64):
        with pytest.raises(ValueError, match="negative transition probability"):
            transition_matrix(rows(-1e-4, dtype), states)
    with pytest.raises(ValueError, match="negative transition probability"):
        transition_matrix(rows(-1e-10, torch.float64), states)
