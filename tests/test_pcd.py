"""PCD (gradmc.training.pcd) and the learnable Ising model against exact answers.

- Learning: on a 4-spin Ising model the PCD estimate (Gibbs-1 or GWG negatives) must match the exact
  maximum-likelihood J of the same data set, computed by enumerating all 16 states and maximising the
  (concave) log-likelihood with L-BFGS. Tolerance 0.02 on every entry of J and b: the PCD estimate is the
  average of the last 200 iterates at Adam lr 2e-3 (after 300 iterations at 2e-2, batch 1,024); measured
  errors over 3 generator seeds are 0.002-0.006, while the true J differs from the MLE by ~0.015 and J = 0
  by 0.3, so a wrong gradient sign, a missing factor 2 or a biased negative phase fails.
- A categorical model (independent sites) must recover the empirical site frequencies (its closed-form MLE)
  within 0.02 (measured 0.003-0.007 over 3 seeds; averaged iterates as above).
- One PCD step's gradient equals -(Eq. 12 estimate) + the penalty gradient, recomputed by autograd.
- Checkpoints: interrupted + resumed == uninterrupted, bit for bit.
"""

from __future__ import annotations

import pytest
import torch

from gradmc.core.exact import exact_distribution
from gradmc.samplers.discrete import make_sampler
from gradmc.targets import DenseIsing
from gradmc.training.ising_models import IsingModel
from gradmc.training.pcd import PCD, Penalty, block_l1_penalty, l1_penalty


@pytest.fixture(autouse=True)
def _one_thread():
    """Tiny tensors: one intra-op thread (on a loaded 2-core machine two threads are ~8x slower here)."""
    old = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(old)


J_TRUE = torch.tensor([[0.0, 0.3, -0.2, 0.0], [0.3, 0.0, 0.25, 0.1], [-0.2, 0.25, 0.0, -0.15],
                       [0.0, 0.1, -0.15, 0.0]], dtype=torch.float64)
B_TRUE = torch.tensor([0.1, -0.2, 0.0, 0.3], dtype=torch.float64)


def _data(n: int = 4096, seed: int = 1):
    states, p = exact_distribution(DenseIsing(J_TRUE, B_TRUE), 4)
    idx = torch.multinomial(p, n, replacement=True, generator=torch.Generator().manual_seed(seed))
    return states[idx].float(), states, torch.bincount(idx, minlength=16).double() / n


def _exact_mle(states, p_emp):
    model = IsingModel(4).double()
    opt = torch.optim.LBFGS(model.parameters(), lr=1, max_iter=500, tolerance_grad=1e-12, tolerance_change=1e-15,
                            line_search_fn="strong_wolfe")

    def closure():
        opt.zero_grad()
        f = model(states)
        loss = -((p_emp * f).sum() - torch.logsumexp(f, 0))
        loss.backward()
        return loss

    opt.step(closure)
    assert model.W.grad.abs().max() < 1e-6
    return model.J.detach(), model.bias.detach()


@pytest.mark.parametrize("sampler", ["Gibbs-1", "GWG"])
def test_pcd_recovers_exact_maximum_likelihood(sampler):
    torch.manual_seed(0)
    data, states, p_emp = _data()
    J_mle, b_mle = _exact_mle(states, p_emp)
    model = IsingModel(4)
    trainer = PCD(model, make_sampler(sampler), data, num_steps=3, batch_size=1024, lr=0.02,
                  generator=torch.Generator().manual_seed(2))
    trainer.train(300)
    for group in trainer.optimizer.param_groups:
        group["lr"] = 0.002
    iterates = []

    def keep(tr):
        iterates.append((tr.model.J.detach().clone(), tr.model.bias.detach().clone()))
        return {}

    trainer.train(600, callback=keep, callback_every=1)
    J_bar = torch.stack([j for j, _ in iterates[-200:]]).mean(0).double()
    b_bar = torch.stack([b for _, b in iterates[-200:]]).mean(0).double()
    assert (J_bar - J_mle).abs().max() < 0.02
    assert (b_bar - b_mle).abs().max() < 0.02
    assert torch.equal(J_bar, J_bar.T) and not J_bar.diagonal().any()


class IndependentCategorical(torch.nn.Module):
    """log p~(x) = sum_i <h_i, x_i>, x one-hot (C, D, K); MLE: softmax(h_i) = empirical frequencies."""

    def __init__(self, d: int, k: int):
        super().__init__()
        self.h = torch.nn.Parameter(torch.zeros(d, k))

    def forward(self, x):
        return (x * self.h).sum((-1, -2))


@pytest.mark.parametrize("sampler", ["Gibbs-1", "GWG"])
def test_pcd_categorical_recovers_frequencies(sampler):
    probs = torch.tensor([[0.6, 0.3, 0.1], [0.2, 0.2, 0.6], [0.45, 0.1, 0.45]])
    g = torch.Generator().manual_seed(3)
    idx = torch.stack([torch.multinomial(p, 2048, replacement=True, generator=g) for p in probs], 1)  # (N, D)
    data = torch.nn.functional.one_hot(idx, 3).float()
    freq = data.mean(0)
    model = IndependentCategorical(3, 3)
    trainer = PCD(model, make_sampler(sampler, state="categorical"), data, num_steps=3, batch_size=512,
                  buffer_size=1024, lr=0.05, generator=torch.Generator().manual_seed(4))
    trainer.train(150)
    for group in trainer.optimizer.param_groups:
        group["lr"] = 0.005
    acc = []
    trainer.train(300, callback=lambda tr: acc.append(torch.softmax(tr.model.h.detach(), -1)) or {}, callback_every=1)
    assert (torch.stack(acc[-150:]).mean(0) - freq).abs().max() < 0.02


def test_penalties_closed_forms():
    J = torch.tensor([[0.0, -1.5, 2.0], [-1.5, 0.0, 0.0], [2.0, 0.0, 0.0]], requires_grad=True)
    value = l1_penalty(J)
    value.backward()
    assert value.item() == 7.0 and torch.equal(J.grad, torch.sign(J.detach()))
    blocks = torch.zeros(2, 2, 2, 2)
    blocks[0, 1] = torch.tensor([[3.0, 0.0], [0.0, 4.0]])
    blocks[1, 0] = blocks[0, 1].T
    blocks.requires_grad_(True)
    value = block_l1_penalty(blocks)
    value.backward()
    assert value.item() == pytest.approx(10.0)
    assert torch.allclose(blocks.grad[0, 1], blocks.detach()[0, 1] / 5.0) and not blocks.grad[0, 0].any()
    model = IsingModel(3)
    with torch.no_grad():
        model.W[0, 1] = -0.5
    assert Penalty("l1", "J", 0.01)(model).item() == pytest.approx(0.01 * 1.0)


def test_one_step_gradient_is_eq12_plus_penalty():
    data, _, _ = _data(512)
    model = IsingModel(4).double()
    with torch.no_grad():
        model.W.copy_(torch.triu(torch.randn(4, 4, generator=torch.Generator().manual_seed(5), dtype=torch.float64), 1))
    reference = IsingModel(4).double()
    reference.load_state_dict(model.state_dict())
    gen = torch.Generator().manual_seed(6)
    trainer = PCD(model, make_sampler("GWG"), data.double(), num_steps=2, batch_size=64, lr=1e-3, generator=gen,
                  penalties=[Penalty("l1", "J", 0.05)])
    rows = torch.randperm(512, generator=torch.Generator().manual_seed(6).set_state(gen.get_state()))[:64]
    trainer.step()
    negatives = trainer.buffer  # buffer_size == batch_size: the buffer holds this step's negatives
    loss = -(reference(data.double()[rows]).mean() - reference(negatives).mean()) + 0.05 * reference.J.abs().sum()
    loss.backward()
    exp_avg = trainer.optimizer.state[model.W]["exp_avg"] / 0.1  # Adam m_1 = (1 - beta1) g
    assert torch.allclose(exp_avg, reference.W.grad, atol=1e-12)


def _trainer(sampler: str, seed: int = 7) -> PCD:
    data, _, _ = _data(300, seed=8)
    model = IsingModel(4, init_std=0.1, generator=torch.Generator().manual_seed(9))
    return PCD(model, make_sampler(sampler), data, num_steps=3, batch_size=24, buffer_size=48, lr=0.01,
               generator=torch.Generator().manual_seed(seed), penalties=[Penalty("l1", "J", 0.01)])


def _rmse(tr):
    return {"norm": float(tr.model.J.detach().norm())}


def _strip_times(history):
    return [{k: v for k, v in h.items() if not k.endswith("time_s")} for h in history]


@pytest.mark.parametrize("sampler", ["Gibbs-1", "GWG"])
def test_checkpoint_resume_is_bit_exact(tmp_path, sampler):
    full = _trainer(sampler)
    full.train(40, callback=_rmse, callback_every=5)
    interrupted = _trainer(sampler)

    def crash(tr):
        if tr.iteration == 25:
            raise KeyboardInterrupt
        return _rmse(tr)

    ckpt = tmp_path / "pcd.pt"
    with pytest.raises(KeyboardInterrupt):
        interrupted.train(40, callback=crash, callback_every=5, checkpoint_path=ckpt, checkpoint_every=10)
    resumed = _trainer(sampler, seed=123)  # a different generator: its state comes from the checkpoint
    resumed.train(40, callback=_rmse, callback_every=5, checkpoint_path=ckpt, checkpoint_every=10)
    assert resumed.iteration == 40 and torch.load(ckpt, weights_only=True)["iteration"] == 40
    for name, p in full.model.state_dict().items():
        assert torch.equal(p, resumed.model.state_dict()[name]), name
    assert torch.equal(full.buffer, resumed.buffer)
    assert torch.equal(full.optimizer.state[full.model.W]["exp_avg_sq"],
                       resumed.optimizer.state[resumed.model.W]["exp_avg_sq"])
    assert _strip_times(full.history) == _strip_times(resumed.history)
    assert [h["iteration"] for h in full.history] == [0, 5, 10, 15, 20, 25, 30, 35, 40]


def test_ising_model_convention_and_gradient():
    model = IsingModel(5, init_std=0.5, generator=torch.Generator().manual_seed(10)).double()
    with torch.no_grad():
        model.bias.copy_(torch.linspace(-1, 1, 5, dtype=torch.float64))
    J = model.J.detach()
    assert torch.equal(J, J.T) and not J.diagonal().any()
    x = torch.bernoulli(torch.full((7, 5), 0.5, dtype=torch.float64), generator=torch.Generator().manual_seed(11))
    target = DenseIsing(J, model.bias.detach())
    assert torch.allclose(model(x), target(x))
    f, grad = model.log_prob_and_grad(x)
    x_req = x.clone().requires_grad_(True)
    (auto,) = torch.autograd.grad(model(x_req).sum(), x_req)
    assert torch.allclose(f, target(x)) and torch.allclose(grad, auto)
    with pytest.raises(ValueError, match="num_dims"):
        IsingModel(1)


def test_bad_inputs_raise_clear_errors(tmp_path):
    data, _, _ = _data(64)
    model = IsingModel(4)
    gwg = make_sampler("GWG")
    g = torch.Generator().manual_seed(0)
    with pytest.raises(ValueError, match="binary"):
        PCD(model, gwg, data * 2, num_steps=1, batch_size=8, lr=1e-3, generator=g)
    with pytest.raises(ValueError, match="batch_size"):
        PCD(model, gwg, data, num_steps=1, batch_size=65, lr=1e-3, generator=g)
    with pytest.raises(ValueError, match="num_steps"):
        PCD(model, gwg, data, num_steps=0, batch_size=8, lr=1e-3, generator=g)
    with pytest.raises(ValueError, match="lr"):
        PCD(model, gwg, data, num_steps=1, batch_size=8, lr=0.0, generator=g)
    with pytest.raises(ValueError, match="init_buffer must have shape"):
        PCD(model, gwg, data, num_steps=1, batch_size=8, lr=1e-3, generator=g, init_buffer=torch.zeros(8, 5))
    with pytest.raises(ValueError, match=r"shape \(C,\)"):
        PCD(lambda_module(), gwg, data, num_steps=1, batch_size=8, lr=1e-3, generator=g)
    with pytest.raises(ValueError, match="kind"):
        Penalty("l2", "J", 0.1)
    with pytest.raises(ValueError, match="strength"):
        Penalty("l1", "J", -1.0)
    with pytest.raises(ValueError, match="no tensor attribute 'K'"):
        Penalty("l1", "K", 0.1)(model)
    with pytest.raises(ValueError, match="blocks"):
        block_l1_penalty(torch.zeros(3, 3))
    trainer = PCD(model, gwg, data, num_steps=1, batch_size=8, lr=1e-3, generator=g)
    trainer.train(3, checkpoint_path=tmp_path / "a.pt")
    with pytest.raises(ValueError, match="num_iterations"):
        trainer.train(2)
    other = PCD(IsingModel(4), gwg, data, num_steps=2, batch_size=8, lr=1e-3, generator=g)
    with pytest.raises(ValueError, match="num_steps=1 vs 2"):
        other.load(tmp_path / "a.pt")


def lambda_module() -> torch.nn.Module:
    class Wrong(IsingModel):
        def forward(self, x):
            return super().forward(x)[:, None]

    return Wrong(4)
