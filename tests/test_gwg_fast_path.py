"""GWG's single-flip fast path (targets with incremental evaluations, ``eval_flips``: RBM, lattice Ising)
samples the same kernel as the enumerated transition matrix of the general path."""

from __future__ import annotations

import pytest
import torch
from scipy.stats import chisquare

from gradmc.core.exact import exact_distribution
from gradmc.samplers.discrete import GWG
from gradmc.samplers.enumerate import transition_matrix
from gradmc.targets import RBM
from gradmc.targets.ising import LatticeIsing

NUM_CHAINS = 200_000


def _lattice():
    return LatticeIsing(3, theta=0.3, bias=0.2).double()


def _rbm():
    g = torch.Generator().manual_seed(11)
    model = RBM(9, 4, weight_std=1.0, generator=g).double()
    with torch.no_grad():
        model.b.normal_(generator=g)
    return model


@pytest.mark.parametrize("build", [_lattice, _rbm], ids=["lattice_ising_3x3", "rbm_9x4"])
def test_fast_step_matches_enumerated_kernel(build):
    target = build()
    assert hasattr(target, "eval_flips")
    states, pi = exact_distribution(target, 9)  # (512, 9), (512,)
    sampler = GWG()
    P = transition_matrix(lambda x: sampler.transition_probabilities(x, target), states)  # general path
    assert float((pi @ P - pi).abs().max()) < 1e-10
    g = torch.Generator().manual_seed(5)
    # one fast step from exact samples of pi must stay at pi ...
    start = torch.multinomial(pi, NUM_CHAINS, replacement=True, generator=g)
    state, _ = sampler.step(sampler.init(states[start], target), target, g)
    weights = 2 ** torch.arange(8, -1, -1, dtype=torch.float64)
    counts = torch.bincount((state.x @ weights).long(), minlength=512).double()
    assert chisquare(counts.numpy(), (NUM_CHAINS * pi).numpy()).pvalue > 1e-4
    # ... and from one fixed state it must follow that state's enumerated row
    x0 = int(pi.argmin())
    state, _ = sampler.step(sampler.init(states[x0].expand(NUM_CHAINS, -1).clone(), target), target, g)
    counts = torch.bincount((state.x @ weights).long(), minlength=512).double()
    row = P[x0]
    support = row > 0
    assert counts[~support].sum() == 0
    assert chisquare(counts[support].numpy(), (NUM_CHAINS * row[support]).numpy()).pvalue > 1e-4
