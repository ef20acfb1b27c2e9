"""Targets against brute-force formulas: lattice/dense/Erdos-Renyi Ising, dense/lattice Potts, factorial HMM.

Every reference here is written from the definitions with explicit loops (not the operators under test).
"""

from __future__ import annotations

import itertools
import math

import pytest
import torch

from gradmc.core.exact import enumerate_binary, exact_distribution
from gradmc.core.validation import validate_onehot
from gradmc.targets import (
    THETA_CRITICAL,
    DenseIsing,
    ErdosRenyiIsing,
    FactorialHMM,
    FHMMPosterior,
    LatticeIsing,
    LatticePotts,
    Potts,
)
from gradmc.targets.lattice import lattice_adjacency, lattice_edges


@pytest.fixture(autouse=True)
def _float64():
    """Exact comparisons in float64; the previous default dtype is restored after each test."""
    previous = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    yield
    torch.set_default_dtype(previous)


def _gen(seed: int = 0) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def _autograd(target, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    x = x.detach().clone().requires_grad_(True)
    f = target(x)
    (g,) = torch.autograd.grad(f.sum(), x)
    return f.detach(), g


def _adjacency_loops(side: int, periodic: bool) -> torch.Tensor:
    """0/1 lattice adjacency built site by site from the definition (4 neighbours)."""
    d = side * side
    A = torch.zeros(d, d)
    for r, c in itertools.product(range(side), range(side)):
        for dr, dc in ((1, 0), (-1, 0), (0, 1), (0, -1)):
            rr, cc = r + dr, c + dc
            if periodic:
                rr, cc = rr % side, cc % side
            elif not (0 <= rr < side and 0 <= cc < side):
                continue
            A[r * side + c, rr * side + cc] = 1.0
    return A


def _random_onehot(num: int, sites: int, states: int, gen: torch.Generator) -> torch.Tensor:
    idx = torch.randint(states, (num, sites), generator=gen)
    return torch.nn.functional.one_hot(idx, states).double()


# ------------------------------------------------------------------------------------------------ Ising


@pytest.mark.parametrize("side", [3, 4, 5])
@pytest.mark.parametrize("periodic", [True, False])
def test_lattice_ising_matches_dense_formula_and_autograd(side, periodic):
    gen = _gen(side)
    d = side * side
    bias = torch.randn(d, generator=gen)
    model = LatticeIsing(side, theta=0.37, bias=bias, periodic=periodic)
    x = torch.bernoulli(torch.full((64, d), 0.5), generator=gen)
    s = 2 * x - 1
    J = 0.37 * _adjacency_loops(side, periodic)
    expected = ((s @ J) * s).sum(-1) + s @ bias
    torch.testing.assert_close(model(x), expected)
    torch.testing.assert_close(model.couplings_dense(), J)
    f, g = model.log_prob_and_grad(x)
    f_ag, g_ag = _autograd(model, x)
    torch.testing.assert_close(f, expected)
    torch.testing.assert_close(g, g_ag)
    torch.testing.assert_close(g, 4 * s @ J + 2 * bias)
    # same model as a DenseIsing with the explicit J
    torch.testing.assert_close(DenseIsing(J, bias)(x), expected)


def test_lattice_ising_flip_estimate_is_exact():
    """J has a zero diagonal, so (1 - 2x) * grad f equals f(x with bit i flipped) - f(x) exactly (Eq. 3)."""
    model = LatticeIsing(4, theta=-0.2, bias=0.3)
    x = torch.bernoulli(torch.full((5, 16), 0.5), generator=_gen(1))
    f, g = model.log_prob_and_grad(x)
    flipped = x[:, None, :].repeat(1, 16, 1)
    flipped[:, torch.arange(16), torch.arange(16)] = 1 - flipped[:, torch.arange(16), torch.arange(16)]
    exact = model(flipped.reshape(-1, 16)).view(5, 16) - f[:, None]
    torch.testing.assert_close((1 - 2 * x) * g, exact)


def test_lattice_ising_exact_enumeration_3x3():
    model = LatticeIsing(3, theta=0.3)
    states, probs = exact_distribution(model, 9)
    assert states.shape == (512, 9) and probs.shape == (512,)
    torch.testing.assert_close(probs.sum(), torch.tensor(1.0))
    s = 2 * states - 1
    J = 0.3 * _adjacency_loops(3, True)
    torch.testing.assert_close(probs, torch.softmax(((s @ J) * s).sum(-1), 0))
    # zero field: spin-flip symmetry p(x) = p(1 - x); ferromagnet: the two uniform states are the modes
    torch.testing.assert_close(probs, probs.flip(0))
    assert set(probs.topk(2).indices.tolist()) == {0, 511}


def test_lattice_helpers_and_convention():
    assert 0.22 < THETA_CRITICAL < 0.221
    A = lattice_adjacency(5)
    torch.testing.assert_close(A, _adjacency_loops(5, True).float())
    assert lattice_edges(5).shape == (2, 50) and lattice_edges(5, periodic=False).shape == (2, 40)
    # every edge counted twice: one bond aligned vs anti-aligned changes log p by 2 * theta * 2
    model = LatticeIsing(3, theta=0.5)
    x = torch.ones(1, 9)
    assert float(model(x)) == pytest.approx(0.5 * 2 * 18)  # 18 edges, each +1 counted twice
    with pytest.raises(ValueError, match="side <= 10"):
        LatticeIsing(11, 0.1).couplings_dense()


def test_lattice_ising_large_runs_without_dense_matrix():
    model = LatticeIsing(40, theta=0.4, bias=0.1)
    x = torch.bernoulli(torch.full((32, 1600), 0.5), generator=_gen(2))
    f, g = model.log_prob_and_grad(x)
    f_ag, g_ag = _autograd(model, x)
    assert f.shape == (32,) and g.shape == (32, 1600)
    torch.testing.assert_close(f, f_ag)
    torch.testing.assert_close(g, g_ag)


def test_erdos_renyi_graph_degree_and_symmetry():
    degrees, weights = [], []
    for seed in range(5):
        model = ErdosRenyiIsing(200, avg_degree=4.0, weight_std=0.5, generator=_gen(seed))
        J, adj = model.J, model.adjacency
        torch.testing.assert_close(J, J.t(), rtol=0, atol=0)
        assert bool((J.diagonal() == 0).all()) and not bool(adj.diagonal().any())
        assert torch.equal(J != 0, adj)
        assert torch.equal(model.bias, torch.zeros(200))  # the coupling scale is never used as the bias
        edges = model.edge_index()
        assert edges.shape[0] == 2 and bool((edges[0] < edges[1]).all())
        degrees.append(adj.sum(1).double().mean())
        weights.append(J[edges[0], edges[1]])
    # mean degree over 5 graphs: 4 +- 0.09 (std of one graph's mean degree ~0.2)
    assert abs(float(torch.stack(degrees).mean()) - 4.0) < 0.3
    w = torch.cat(weights)
    assert abs(float(w.std()) - 0.5) < 0.05 and abs(float(w.mean())) < 0.05
    same = ErdosRenyiIsing(200, 4.0, 0.5, generator=_gen(0))
    again = ErdosRenyiIsing(200, 4.0, 0.5, generator=_gen(0))
    assert torch.equal(same.J, again.J)
    biased = ErdosRenyiIsing(50, 3.0, 0.5, bias_std=1.0, generator=_gen(3))
    assert bool((biased.bias != 0).all())
    x = torch.bernoulli(torch.full((8, 50), 0.5), generator=_gen(4))
    f, g = biased.log_prob_and_grad(x)
    f_ag, g_ag = _autograd(biased, x)
    torch.testing.assert_close(f, f_ag)
    torch.testing.assert_close(g, g_ag)


def test_ising_input_validation():
    model = LatticeIsing(3, 0.2)
    with pytest.raises(ValueError, match="shape"):
        model(torch.zeros(4, 10))
    with pytest.raises(ValueError, match="floating"):
        model(torch.zeros(4, 9, dtype=torch.long))
    with pytest.raises(ValueError, match="only 0 and 1"):
        model.validate(torch.full((2, 9), 0.5))
    model.validate(torch.ones(2, 9))
    with pytest.raises(ValueError, match="side"):
        LatticeIsing(2, 0.2)
    with pytest.raises(ValueError, match="bias"):
        LatticeIsing(3, 0.2, bias=torch.zeros(8))
    with pytest.raises(ValueError, match="symmetric"):
        DenseIsing(torch.tensor([[0.0, 1.0], [0.0, 0.0]]))
    with pytest.raises(ValueError, match="diagonal"):
        DenseIsing(torch.eye(2))
    with pytest.raises(ValueError, match="avg_degree"):
        ErdosRenyiIsing(10, 12.0, 0.5)


# ------------------------------------------------------------------------------------------------ Potts


def _random_potts(d: int, k: int, gen: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
    h = torch.randn(d, k, generator=gen)
    J = torch.randn(d, d, k, k, generator=gen)
    J = J + J.permute(1, 0, 3, 2)  # J_ji = J_ij^T
    J[torch.arange(d), torch.arange(d)] = 0.0
    return h, J


def test_potts_matches_double_loop_and_autograd():
    d, k = 5, 3
    h, J = _random_potts(d, k, _gen(5))
    model = Potts(h, J)
    x = _random_onehot(20, d, k, _gen(6))
    expected = torch.stack([
        sum(h[i] @ xc[i] for i in range(d)) + sum(xc[i] @ J[i, j] @ xc[j] for i in range(d) for j in range(i + 1, d))
        for xc in x
    ])
    torch.testing.assert_close(model(x), expected)
    torch.testing.assert_close(model.J, J)
    f, g = model.log_prob_and_grad(x)
    f_ag, g_ag = _autograd(model, x)
    torch.testing.assert_close(f, expected)
    torch.testing.assert_close(g, g_ag)
    assert g.shape == (20, d, k)


@pytest.mark.parametrize("periodic", [True, False])
def test_lattice_potts_matches_explicit_potts(periodic):
    side, k = 3, 3
    h = torch.randn(side * side, k, generator=_gen(7))
    lattice = LatticePotts(side, k, theta=0.8, h=h, periodic=periodic)
    dense = Potts(*lattice.couplings_dense())
    x = _random_onehot(50, side * side, k, _gen(8))
    torch.testing.assert_close(lattice(x), dense(x))
    # theta * number of equal neighbouring pairs, from the definition
    labels = x.argmax(-1)
    edges = lattice_edges(side, periodic)
    agree = (labels[:, edges[0]] == labels[:, edges[1]]).double().sum(-1)
    torch.testing.assert_close(lattice(x), 0.8 * agree + (x * h).sum((1, 2)))
    f, g = lattice.log_prob_and_grad(x)
    f_ag, g_ag = _autograd(lattice, x)
    torch.testing.assert_close(f, f_ag)
    torch.testing.assert_close(g, g_ag)
    torch.testing.assert_close(g, dense.log_prob_and_grad(x)[1])


def test_two_state_lattice_potts_is_lattice_ising_with_quarter_theta():
    potts = LatticePotts(4, 2, theta=0.6)
    ising = LatticeIsing(4, theta=0.15)
    x = torch.bernoulli(torch.full((30, 16), 0.5), generator=_gen(9))
    onehot = torch.stack([1 - x, x], -1)
    diff = potts(onehot) - ising(x)
    torch.testing.assert_close(diff, diff[:1].expand(30))


def test_potts_input_validation():
    h, J = _random_potts(3, 2, _gen(10))
    model = Potts(h, J)
    with pytest.raises(ValueError, match="shape"):
        model(torch.zeros(2, 3, 3))
    with pytest.raises(ValueError, match="one-hot"):
        model(torch.zeros(2, 6))
    bad = _random_onehot(2, 3, 2, _gen(11))
    bad[0, 0] = torch.tensor([1.0, 1.0])
    with pytest.raises(ValueError, match="exactly one 1"):
        model.validate(bad)
    with pytest.raises(ValueError, match="only 0 and 1"):
        validate_onehot(torch.full((1, 3, 2), 0.5), check_values=True)
    asym = J.clone()
    asym[0, 1, 0, 1] += 1.0
    with pytest.raises(ValueError, match="symmetric"):
        Potts(h, asym)
    diag = J.clone()
    diag[1, 1] = torch.eye(2)
    with pytest.raises(ValueError, match="diagonal blocks"):
        Potts(h, diag)
    with pytest.raises(ValueError, match="h must have shape"):
        Potts(h[:2], J)
    with pytest.raises(ValueError, match="num_states"):
        LatticePotts(3, 1, 0.5)
    with pytest.raises(ValueError, match="side <= 10"):
        LatticePotts(11, 2, 0.5).couplings_dense()


# ------------------------------------------------------------------------------------------------ FHMM


def _fhmm_log_joint_loops(model: FactorialHMM, x: torch.Tensor, y: torch.Tensor) -> float:
    """log p(x, y) from Eq. 32, one scalar at a time; x (L*K,) time-major."""
    L, K = model.L, model.K
    W, b, s = model.W.tolist(), float(model.b), model.sigma
    a, be = model.alpha.tolist(), model.beta.tolist()
    bits = [[int(x[t * K + k]) for k in range(K)] for t in range(L)]
    total = 0.0
    for k in range(K):
        total += math.log(a[k] if bits[0][k] else 1 - a[k])
        for t in range(1, L):
            p_one = be[k] if bits[t - 1][k] == 1 else 1 - be[k]  # Bernoulli(beta^x (1 - beta)^(1 - x))
            total += math.log(p_one if bits[t][k] else 1 - p_one)
    for t in range(L):
        mean = sum(W[k] * bits[t][k] for k in range(K)) + b
        total += -0.5 * math.log(2 * math.pi * s * s) - (float(y[t]) - mean) ** 2 / (2 * s * s)
    return total


def _tiny_fhmm() -> tuple[FactorialHMM, torch.Tensor, torch.Tensor]:
    model = FactorialHMM(3, 2, W=torch.tensor([1.3, -0.7]), b=0.4, sigma=0.5,
                         alpha=torch.tensor([0.1, 0.3]), beta=torch.tensor([0.95, 0.8])).double()
    gen = _gen(12)
    x_true = model.sample_prior(1, gen)
    y = model.sample_observations(x_true, gen)[0]
    return model, x_true, y


def test_fhmm_log_joint_matches_definition_and_posterior_normalises():
    model, _, y = _tiny_fhmm()
    states = enumerate_binary(6, dtype=torch.float64)  # all 64 latent paths
    expected = torch.tensor([_fhmm_log_joint_loops(model, xs, y) for xs in states])
    torch.testing.assert_close(model.log_joint(states, y), expected)
    # the joint is a normalised density over x and y: summing over x gives p(y), and p(x, y) / p(y) = p(x | y)
    post = model.posterior(y)
    _, probs = exact_distribution(post, 6)
    torch.testing.assert_close(probs, torch.exp(expected) / torch.exp(expected).sum())
    torch.testing.assert_close(probs.sum(), torch.tensor(1.0))
    torch.testing.assert_close(torch.exp(model.log_prior(states)).sum(), torch.tensor(1.0))
    f, g = post.log_prob_and_grad(states)
    f_ag, g_ag = _autograd(post, states)
    torch.testing.assert_close(f, expected)
    torch.testing.assert_close(g, g_ag)


def test_fhmm_layout_blocks_and_reconstruction():
    model, x_true, y = _tiny_fhmm()
    blocks = model.blocks()
    assert blocks.dtype == torch.long and blocks.tolist() == [[0, 1], [2, 3], [4, 5]]
    assert torch.equal(model.posterior(y).blocks(), blocks)
    x = torch.bernoulli(torch.full((7, 6), 0.5), generator=_gen(13))
    err = torch.tensor([
        sum((float(model.W @ x[c, blocks[t]]) + float(model.b) - float(y[t])) ** 2 for t in range(3))
        for c in range(7)
    ])
    torch.testing.assert_close(model.reconstruction_error(x, y), err)
    torch.testing.assert_close(model.posterior(y).reconstruction_error(x), err)


def test_fhmm_prior_sampling_statistics():
    model = FactorialHMM.random(200, 3, generator=_gen(14), alpha=torch.tensor([0.1, 0.5, 0.9]), beta=0.9)
    x = model.sample_prior(3000, _gen(15)).view(3000, 200, 3)
    assert set(x.unique().tolist()) <= {0.0, 1.0}
    torch.testing.assert_close(x[:, 0].mean(0), torch.tensor([0.1, 0.5, 0.9]), atol=0.03, rtol=0)
    flip_rate = (x[:, 1:] != x[:, :-1]).double().mean()
    assert abs(float(flip_rate) - 0.1) < 0.005  # persistence beta = 0.9: flip with probability 0.1
    y = model.sample_observations(x[:5].reshape(5, 600), _gen(16))
    assert y.shape == (5, 200)
    resid = y - model.emission_mean(x[:5].reshape(5, 600))
    assert abs(float(resid.std()) - 0.5) < 0.05


def test_fhmm_input_validation():
    model, _, y = _tiny_fhmm()
    with pytest.raises(ValueError, match="shape"):
        model.log_joint(torch.zeros(2, 5), y)
    with pytest.raises(ValueError, match="y must have shape"):
        model.log_joint(torch.zeros(2, 6), torch.zeros(4))
    with pytest.raises(ValueError, match="y must have shape"):
        FHMMPosterior(model, torch.zeros(2, 3))
    with pytest.raises(ValueError, match="only 0 and 1"):
        model.posterior(y).validate(torch.full((1, 6), 0.5))
    with pytest.raises(ValueError, match="alpha"):
        FactorialHMM(3, 2, torch.ones(2), alpha=1.0)
    with pytest.raises(ValueError, match="beta"):
        FactorialHMM(3, 2, torch.ones(2), beta=torch.tensor([0.5, 0.5, 0.5]))
    with pytest.raises(ValueError, match="W must"):
        FactorialHMM(3, 2, torch.ones(3))
    with pytest.raises(ValueError, match="sigma"):
        FactorialHMM(3, 2, torch.ones(2), sigma=0.0)
