"""RBM target: closed-form gradient equals autograd; exact log Z equals brute-force enumeration."""

from __future__ import annotations

import pytest
import torch

from gradmc.core.exact import enumerate_binary
from gradmc.core.gradients import log_prob_and_grad
from gradmc.targets import RBM


@pytest.fixture
def rbm():
    g = torch.Generator().manual_seed(3)
    model = RBM(10, 6, weight_std=1.0, generator=g).double()
    with torch.no_grad():
        model.b.normal_(generator=g)
        model.c.normal_(generator=g)
    return model


def test_closed_form_gradient_matches_autograd(rbm):
    x = enumerate_binary(10, torch.float64)[::7]
    f, grad = rbm.log_prob_and_grad(x)
    x_req = x.clone().requires_grad_(True)
    f_auto = rbm(x_req)
    (grad_auto,) = torch.autograd.grad(f_auto.sum(), x_req)
    torch.testing.assert_close(f, f_auto.detach())
    torch.testing.assert_close(grad, grad_auto)
    f2, grad2 = log_prob_and_grad(rbm, x)  # the samplers' entry point takes the closed form
    torch.testing.assert_close(grad2, grad)


def test_log_partition_matches_enumeration(rbm):
    # sum over visibles of exp(log p~(x)) (hiddens already summed out), versus the hidden-side formula
    with torch.no_grad():
        brute = torch.logsumexp(rbm(enumerate_binary(10, torch.float64)), 0)
    assert rbm.log_partition() == pytest.approx(float(brute), abs=1e-9)
    wide = RBM(6, 10, weight_std=1.0, generator=torch.Generator().manual_seed(4)).double()
    with torch.no_grad():
        brute_wide = torch.logsumexp(wide(enumerate_binary(6, torch.float64)), 0)
    assert wide.log_partition() == pytest.approx(float(brute_wide), abs=1e-9)


def test_bad_input_shapes_are_named():
    rbm = RBM(8, 3)
    with pytest.raises(ValueError, match=r"shape \(num_chains, 8\)"):
        rbm(torch.zeros(2, 7))
    with pytest.raises(ValueError, match="floating"):
        rbm(torch.zeros(2, 8, dtype=torch.long))
