"""The shared acceptance rules of samplers/base.py against closed forms, and the kernel contract they serve."""

from __future__ import annotations

import ast
import inspect
import math
from pathlib import Path

import torch

from gradmc.samplers.base import acceptance_probability, hamiltonian_accept, metropolis_hastings_accept

SAMPLERS = Path(__file__).resolve().parents[1] / "pkg" / "gradmc" / "samplers"


def test_acceptance_probability_is_min_one_exp():
    log_alpha = torch.tensor([-2.0, 0.0, 3.0, float("nan"), -float("inf")], dtype=torch.float64)
    expected = [math.exp(-2.0), 1.0, 1.0, 0.0, 0.0]
    assert acceptance_probability(log_alpha).tolist() == expected
    proposal = torch.tensor([0.0, float("nan"), float("inf"), 0.0, 0.0], dtype=torch.float64)
    assert acceptance_probability(log_alpha, proposal).tolist() == [math.exp(-2.0), 0.0, 0.0, 0.0, 0.0]


def test_metropolis_hastings_accept_uses_one_uniform_per_chain():
    log_alpha = torch.full((20000,), math.log(0.3), dtype=torch.float64)
    gen = torch.Generator().manual_seed(0)
    accepted, prob = metropolis_hastings_accept(log_alpha, gen)
    u = torch.rand((20000,), generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    assert torch.equal(accepted, u < 0.3) and torch.allclose(prob, torch.full_like(prob, 0.3))


def test_hamiltonian_accept_closed_form():
    x = torch.tensor([[0.0, 0.0], [1.0, 1.0], [2.0, 0.0]], dtype=torch.float64)
    x_new = x + 1.0
    p = torch.tensor([[1.0, 0.0], [0.0, 2.0], [1.0, 1.0]], dtype=torch.float64)
    p_new = torch.tensor([[0.0, 0.0], [0.0, 0.0], [3.0, 3.0]], dtype=torch.float64)
    f, f_new = torch.tensor([-1.0, -2.0, 0.0], dtype=torch.float64), torch.tensor([-1.0, -4.0, float("nan")],
                                                                                  dtype=torch.float64)
    mass = 2.0
    h_old = -f + (p * p).sum(-1) / (2 * mass)
    h_new = -f_new + (p_new * p_new).sum(-1) / (2 * mass)
    expected = torch.clamp(torch.exp(h_old - h_new), max=1.0).nan_to_num(nan=0.0)
    gen = torch.Generator().manual_seed(3)
    x_out, f_out, accepted, prob, nonfinite = hamiltonian_accept(x, p, f, x_new, p_new, f_new, gen, mass)
    assert torch.allclose(prob, expected) and prob[2] == 0 and not accepted[2]  # a NaN end point is rejected
    u = torch.rand((3,), generator=torch.Generator().manual_seed(3), dtype=torch.float64)
    assert torch.equal(accepted, u < expected)
    assert torch.equal(x_out, torch.where(accepted[:, None], x_new, x))
    assert torch.equal(f_out, torch.where(accepted, f_new, f))
    assert nonfinite.dtype == torch.int64 and nonfinite.tolist() == [0, 0, 1]  # the NaN end point is counted


def _kernel_classes():
    import gradmc.samplers.continuous as cont
    import gradmc.samplers.discrete as disc
    import gradmc.samplers.relaxed as rel

    for module in (cont, disc, rel):
        for name in getattr(module, "__all__", dir(module)):
            obj = getattr(module, name)
            if inspect.isclass(obj) and callable(getattr(obj, "init", None)) and callable(getattr(obj, "step", None)):
                yield obj


def test_every_kernel_has_the_one_init_signature():
    kernels = list(_kernel_classes())
    assert len(kernels) >= 15
    for cls in kernels:
        params = list(inspect.signature(cls.init).parameters.values())
        assert [p.name for p in params] == ["self", "x", "log_prob", "generator"], cls.__name__
        assert params[3].default is None, cls.__name__


def test_class_names_under_samplers_are_unique():
    seen: dict[str, str] = {}
    dupes = []
    for path in sorted(SAMPLERS.rglob("*.py")):
        for node in ast.parse(path.read_text()).body:
            if isinstance(node, ast.ClassDef):
                if node.name in seen:
                    dupes.append(f"{node.name}: {seen[node.name]} and {path.relative_to(SAMPLERS)}")
                seen[node.name] = str(path.relative_to(SAMPLERS))
    assert dupes == []


def test_no_kernel_recomputes_the_hamiltonian_accept():
    """The accept-and-select of a Hamiltonian kernel is written once, in base.hamiltonian_accept."""
    offenders = [str(p.relative_to(SAMPLERS)) for p in SAMPLERS.rglob("*.py")
                 if p.name != "base.py" and "h_old - h_new" in p.read_text()]
    assert offenders == []
