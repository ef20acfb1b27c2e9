"""Replay-buffer PCD for deep EBMs (gradmc.training.ebm) and the ResNet EBM (gradmc.models)."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
import torch

from gradmc.evaluation.ais import BernoulliBase
from gradmc.models import ResNetEBM
from gradmc.samplers.base import Info
from gradmc.samplers.discrete.registry import make_sampler
from gradmc.training.ebm import EBMTrainer, NonFiniteTrainingError


class Independent(torch.nn.Module):
    """f(x) = b^T x: p(x) = prod Bernoulli(sigmoid(b)); maximum likelihood sets sigmoid(b) = data means."""

    def __init__(self, d):
        super().__init__()
        self.b = torch.nn.Parameter(torch.zeros(d, dtype=torch.float64))

    def forward(self, x):
        return x @ self.b


def _trainer(model, data, seed=0, **kw):
    g = torch.Generator().manual_seed(seed)
    settings = dict(num_steps=2, batch_size=64, buffer_size=256, lr=0.05, warmup=5, ema_decay=0.9)
    settings.update(kw)
    return EBMTrainer(model, make_sampler("Gibbs-1"), data, BernoulliBase(torch.zeros(data.shape[1])),
                      generator=g, **settings)


def test_pcd_learns_maximum_likelihood_of_independent_model():
    """The gradient sign and the buffer mechanics: PCD drives sigmoid(b) to the data means (0.8 / 0.2)."""
    g = torch.Generator().manual_seed(1)
    p = torch.tensor([0.8, 0.2, 0.8, 0.2], dtype=torch.float64)
    data = torch.bernoulli(p.expand(4000, 4), generator=g)
    trainer = _trainer(Independent(4), data, lr=0.02, ema_decay=0.99)
    trainer.train(500)
    learned = torch.sigmoid(trainer.ema_model().b.detach())
    assert torch.allclose(learned, data.mean(0), atol=0.06), learned
    assert trainer.history[-1]["iteration"] == 500 and 0 < trainer.history[-1]["acceptance_rate"] <= 1


def test_resume_from_checkpoint_gives_identical_result(tmp_path):
    g = torch.Generator().manual_seed(2)
    data = torch.bernoulli(torch.full((50, 64), 0.3), generator=g)

    def model():
        torch.manual_seed(0)
        return ResNetEBM((8, 8), channels=4, num_blocks=2)

    straight = _trainer(model(), data, batch_size=8, buffer_size=16, lr=1e-3)
    straight.train(6)
    first = _trainer(model(), data, batch_size=8, buffer_size=16, lr=1e-3)
    first.train(3)
    first.save(tmp_path / "ckpt.pt")
    resumed = _trainer(model(), data, seed=99, batch_size=8, buffer_size=16, lr=1e-3)  # other seed: state wins
    resumed.load(tmp_path / "ckpt.pt")
    resumed.train(6)
    for a, b in zip(straight.model.state_dict().values(), resumed.model.state_dict().values(), strict=True):
        assert torch.equal(a, b)
    for a, b in zip(straight.ema_model().state_dict().values(), resumed.ema_model().state_dict().values(),
                    strict=True):
        assert torch.equal(a, b)
    assert torch.equal(straight.buffer, resumed.buffer)
    other = _trainer(model(), data, batch_size=4, buffer_size=16, lr=1e-3)
    with pytest.raises(ValueError, match="batch_size"):
        other.load(tmp_path / "ckpt.pt")
    (tmp_path / "bad.pt").write_bytes(b"not a checkpoint")
    with pytest.raises(ValueError, match="bad.pt"):
        other.load(tmp_path / "bad.pt")


def test_validation_keeps_best_weights():
    data = torch.bernoulli(torch.full((100, 4), 0.7, dtype=torch.float64), generator=torch.Generator().manual_seed(3))
    trainer = _trainer(Independent(4), data)
    scores = iter([1.0, 3.0, 2.0])
    trainer.train(9, evaluate=lambda m: next(scores), eval_every=3)
    assert trainer.best["iteration"] == 6 and trainer.best["score"] == 3.0
    assert [r.get("validation") for r in trainer.history if "validation" in r] == [1.0, 3.0, 2.0]


def test_resnet_ebm_shapes_and_errors():
    torch.manual_seed(0)
    m = ResNetEBM((28, 20), channels=4, num_blocks=3)
    x = torch.bernoulli(torch.full((5, 560), 0.5))
    assert m(x).shape == (5,)
    cat = ResNetEBM((4, 4), num_levels=256, channels=4, num_blocks=2)
    onehot = torch.nn.functional.one_hot(torch.randint(0, 256, (3, 16)), 256).float()
    xr = onehot.clone().requires_grad_(True)
    (grad,) = torch.autograd.grad(cat(xr).sum(), xr)
    assert grad.shape == (3, 16, 256)
    with pytest.raises(ValueError, match=r"\(C, 560\)"):
        m(torch.zeros(2, 784))
    with pytest.raises(ValueError, match="one-hot"):
        cat(torch.zeros(2, 16))
    with pytest.raises(ValueError, match="num_levels"):
        ResNetEBM(num_levels=1)
    with pytest.raises(ValueError, match="buffer_size"):
        _trainer(Independent(4), torch.zeros(10, 4, dtype=torch.float64), batch_size=32, buffer_size=16)


class _TagChains:
    """Stand-in kernel: chain c ends at the 8-bit binary code of c, so a written-back row names its chain."""

    def init(self, x, log_prob):
        return SimpleNamespace(x=x)

    def step(self, state, log_prob, generator):
        c, d = state.x.shape
        codes = ((torch.arange(c)[:, None] >> torch.arange(d)) & 1).to(state.x.dtype)
        ones = torch.ones(c)
        return SimpleNamespace(x=codes), Info(ones, ones.bool(), torch.zeros(c, dtype=torch.long), 1, 0)


def test_each_iteration_draws_distinct_buffer_rows():
    """Root cause of the frey/GWG crash: with a repeated buffer index, ``buffer[idx] = samples`` is a data race
    under intra-op threads that can interleave two one-hot chains into a non-one-hot row. Rows must be distinct,
    so every chain of an iteration survives in the buffer (with draws with replacement, 32 of 40 always repeat)."""
    data = torch.bernoulli(torch.full((100, 8), 0.5, dtype=torch.float64), generator=torch.Generator().manual_seed(4))
    trainer = EBMTrainer(Independent(8), _TagChains(), data, BernoulliBase(torch.zeros(8)), num_steps=1,
                         batch_size=32, buffer_size=40, lr=0.01, warmup=0, ema_decay=0.9,
                         generator=torch.Generator().manual_seed(0))
    for _ in range(5):
        trainer.buffer.fill_(1.0)  # all-ones is no chain's code (codes 0..31 use 5 bits)
        trainer.step()
        written = trainer.buffer[(trainer.buffer != 1).any(1)]
        codes = (written * (2 ** torch.arange(8, dtype=torch.float64))).sum(1).long()
        assert sorted(codes.tolist()) == list(range(32))


class _PoisonedInTraining(Independent):
    """f finite for the sampler (eval mode), NaN in the loss (train mode) from train-mode call ``after + 1`` on."""

    def __init__(self, d, after):
        super().__init__(d)
        self.after, self.calls = after, 0

    def forward(self, x):
        out = super().forward(x)
        if self.training:
            self.calls += 1
            if self.calls > self.after:
                out = out * float("nan")
        return out


def test_nonfinite_loss_stops_training_and_keeps_last_good_checkpoint(tmp_path):
    data = torch.bernoulli(torch.full((100, 4), 0.7, dtype=torch.float64), generator=torch.Generator().manual_seed(3))
    trainer = _trainer(_PoisonedInTraining(4, after=2 * 6), data)  # 2 train-mode calls per iteration: iteration 7
    ckpt = tmp_path / "model.pt.partial"
    with pytest.raises(NonFiniteTrainingError, match=r"iteration 7: non-finite f\(data batch\)") as err:
        trainer.train(10, checkpoint_path=ckpt, checkpoint_every=3)
    assert err.value.iteration == 7
    assert trainer.iteration == 6 and len(trainer.history) == 6  # stopped before the update: state of iteration 6
    state = torch.load(ckpt, weights_only=True)
    assert state["iteration"] == 6 and torch.isfinite(state["model"]["b"]).all()
    assert torch.equal(state["model"]["b"], trainer.model.b.detach())  # the failing iteration changed nothing
    resumed = _trainer(Independent(4), data, seed=5)
    resumed.load(ckpt)  # the kept checkpoint resumes
    resumed.train(8)
    assert resumed.iteration == 8 and all(torch.isfinite(p).all() for p in resumed.model.parameters())


@pytest.mark.parametrize("poison_at, fails_at", [(4, 5), (6, 6)])
def test_nonfinite_weights_stop_training_and_are_never_checkpointed(tmp_path, poison_at, fails_at):
    """Weights set to NaN after iteration 4: iteration 5 stops (in the sampler or on the energies); after
    iteration 6, a checkpoint iteration: the save is refused. Either way the file holds iteration 3."""
    data = torch.bernoulli(torch.full((100, 4), 0.7, dtype=torch.float64), generator=torch.Generator().manual_seed(3))
    trainer = _trainer(Independent(4), data)
    ckpt = tmp_path / "model.pt.partial"

    def progress(line):  # runs after each iteration, before that iteration's checkpoint
        if f"iteration {poison_at}/" in line:
            with torch.no_grad():
                trainer.model.b[1] = float("nan")

    with pytest.raises(NonFiniteTrainingError, match=rf"iteration {fails_at}: non-finite") as err:
        trainer.train(10, checkpoint_path=ckpt, checkpoint_every=3, progress=progress, log_every=1)
    assert err.value.iteration == fails_at
    state = torch.load(ckpt, weights_only=True)
    assert state["iteration"] == 3
    assert all(torch.isfinite(v).all() for v in state["model"].values())
    assert all(torch.isfinite(v).all() for v in state["ema"].values() if v.is_floating_point())


def test_fig8_samples_file_holds_the_checkpoint_buffer(tmp_path):
    """train_ebm writes the first buffer rows beside the checkpoint; they are the checkpoint's buffer rows
    (what Fig. 8 used to read from model.pt), as grey images."""
    from gradmc.training.ebm_samples import read_samples, samples_path, write_samples

    data = torch.bernoulli(torch.full((50, 64), 0.3), generator=torch.Generator().manual_seed(2))
    torch.manual_seed(0)
    trainer = _trainer(ResNetEBM((8, 8), channels=4, num_blocks=2), data, batch_size=8, buffer_size=40, lr=1e-3)
    trainer.train(2)
    ckpt = trainer.save(tmp_path / "model.pt")
    path = write_samples(trainer.buffer, samples_path(ckpt))
    assert path == tmp_path / "model.samples.npz"
    buffer = torch.load(ckpt, map_location="cpu", weights_only=True)["buffer"]
    images = read_samples(path, (8, 8))
    assert images.shape == (32, 8, 8)
    assert (images == buffer[:32].reshape(-1, 8, 8).numpy()).all()
    with pytest.raises(ValueError, match="8x4"):
        read_samples(path, (8, 4))
    with pytest.raises(ValueError, match="not an EBM samples file"):
        read_samples(ckpt, (8, 8))


def test_one_hot_buffer_rows_become_grey_levels():
    from gradmc.training.ebm_samples import buffer_images

    levels = torch.tensor([[0, 3, 1], [2, 2, 0]])
    images = buffer_images(torch.nn.functional.one_hot(levels, 4).double(), num=1)
    assert images.dtype == np.float32 and images.tolist() == [[0.0, 1.0, pytest.approx(1 / 3)]]


def test_figure_ebm_draws_fig8_from_samples_files(tmp_path, monkeypatch):
    import gradmc.experiments.ebm.figure as figures_ebm
    from gradmc.experiments.ebm.figure import figure
    from gradmc.experiments.runner import tidy_frame
    from gradmc.results import provenance, write_parquet
    from gradmc.training.ebm_samples import write_samples

    drawn = {}
    save = figures_ebm.save_figure
    monkeypatch.setattr(figures_ebm, "save_figure",
                        lambda fig, out: drawn.setdefault(Path(out).name, fig) and save(fig, out))
    rows = [("GWG", 0, 0, 10, "test_log_likelihood", -90.0, 0, 0, 1.0), ("GWG", 0, 0, 10, "log_z_se", 0.5, 0, 0, 1.0),
            ("GWG", 0, 0, 10, "test_log_likelihood_se", 0.6, 0, 0, 1.0),
            ("GWG", 0, 0, 10, "train_seconds", 30.0, 0, 0, 1.0),
            ("GWG", 0, 0, 3, "convergence_log_likelihood", -95.0, 0, 0, 1.0),
            ("GWG", 0, 0, 10, "convergence_log_likelihood", -90.0, 0, 0, 1.0),
            ("GWG", 0, 0, 100, "learning_curve_log_likelihood", -120.0, 0, 0, 12.0),
            ("GWG", 0, 0, 200, "learning_curve_log_likelihood", -70.0, 0, 0, 30.0)]
    metrics = write_parquet(tidy_frame(rows, "ebm", "static_mnist"), tmp_path / "metrics.parquet",
                            provenance({"name": "test"}), validate=True)
    samples = write_samples(torch.bernoulli(torch.full((40, 28 * 28), 0.5)), tmp_path / "model.samples.npz")
    paths = figure([metrics], tmp_path / "gwg", tmp_path / "table", config_name="test",
                   samples={"static_mnist/GWG": (str(samples), (28, 28))})
    assert {p.name for p in paths} == {"table.csv", "table.md", "gwg_fig14_ais.pdf", "gwg_fig14_ais.png",
                                       "gwg_fig8_samples.pdf", "gwg_fig8_samples.png", "gwg_ebm_learning_curve.pdf",
                                       "gwg_ebm_learning_curve.png"}
    # the learning curve: validation points at their training seconds, the test estimate at the end of training
    ax = drawn["gwg_ebm_learning_curve"].axes[0]
    curve, test = ax.lines[0], ax.lines[1]
    assert list(curve.get_xdata()) == [12.0, 30.0] and list(curve.get_ydata()) == [-120.0, -70.0]
    assert list(test.get_xdata()) == [30.0] and list(test.get_ydata()) == [-90.0]
    assert "GWG: test, 10 levels" in [t.get_text() for t in ax.get_legend().get_texts()]


def test_cosine_lr_decay_follows_the_closed_form_and_resumes_identically(tmp_path):
    """lr after k updates = lr * min(1, (k + 1) / warmup) * (1 + cos(pi k / N)) / 2 over an N-iteration run;
    a time-budgeted run decays by its share of the budget; a resumed run is the uninterrupted one."""
    data = torch.bernoulli(torch.full((200, 4), 0.7, dtype=torch.float64), generator=torch.Generator().manual_seed(4))
    trainer = _trainer(Independent(4), data, lr=0.01, warmup=5, lr_decay="cosine")
    seen = []
    trainer._horizon = (20, None)  # what train(20) sets; stepping by hand reads the lr after each update
    for _ in range(20):
        trainer.step()
        seen.append(trainer.optimizer.param_groups[0]["lr"])
    want = [0.01 * min(1.0, (k + 1) / 5) * 0.5 * (1 + np.cos(np.pi * k / 20)) for k in range(1, 21)]
    assert np.allclose(seen, want, rtol=1e-12) and seen[-1] == pytest.approx(0.0, abs=1e-18)
    trainer.seconds, trainer._horizon = 5.0, (10_000, 10.0)  # half the time budget, few iterations
    assert trainer._lr_factor(100) == pytest.approx(0.5)
    assert _trainer(Independent(4), data, warmup=5)._lr_factor(100) == 1.0  # no decay: constant after warm-up
    with pytest.raises(ValueError, match="lr_decay"):
        _trainer(Independent(4), data, lr_decay="linear")

    straight = _trainer(Independent(4), data, lr=0.01, lr_decay="cosine")
    straight.train(12)
    first = _trainer(Independent(4), data, lr=0.01, lr_decay="cosine")
    first._horizon = (12, None)  # a train(12) run killed after 5 iterations
    for _ in range(5):
        first.step()
    first.save(tmp_path / "ckpt.pt")
    resumed = _trainer(Independent(4), data, seed=7, lr=0.01, lr_decay="cosine")
    resumed.load(tmp_path / "ckpt.pt")
    resumed.train(12)
    assert torch.equal(straight.model.b, resumed.model.b)
    with pytest.raises(ValueError, match="lr_decay"):  # a constant-lr trainer refuses the cosine checkpoint
        _trainer(Independent(4), data, lr=0.01).load(tmp_path / "ckpt.pt")


def test_table2_lists_the_runs_deviations_from_the_papers_settings_and_the_base():
    from gradmc.experiments.ebm.figure import deviations, table

    config = {"ebm": {"train": {"iterations": 2000, "num_steps": 40, "batch_size": 100, "buffer_size": 10_000,
                                "buffer_sizes": {"frey": 500}, "lr": 1e-4, "warmup": 10_000, "ema_decay": 0.999,
                                "energy_l2": 0.005, "lr_decay": "none", "overrides": {"frey": {"iterations": 120}}},
                      "model": {"channels": 64, "num_blocks": 8},
                      "ais": {"num_intermediate": 300_000, "overrides": {"frey": {"num_intermediate": 200}}}}}
    assert deviations(config, "static_mnist") == "iterations 2,000 (paper 50,000); energy_l2 0.005 (paper 0)"
    # per-data-set overrides and the paper's smaller buffer of the small data sets
    assert deviations(config, "frey") == ("iterations 120 (paper 50,000); buffer 500 (paper 1,000); energy_l2 0.005 "
                                          "(paper 0); AIS levels 200 (paper 300,000)")
    assert deviations({}, "static_mnist") == ""
    # a sampler's own steps per iteration (ebm.train.steps_by_sampler): listed for Gibbs-1, GWG keeps num_steps
    gibbs = {"ebm": {**config["ebm"], "train": {**config["ebm"]["train"], "steps_by_sampler": {"Gibbs-1": 200}}}}
    assert deviations(gibbs, "static_mnist", sampler="Gibbs-1") == (
        "iterations 2,000 (paper 50,000); Gibbs steps 200 (paper: count lost from its text); energy_l2 0.005 (paper 0)")
    assert deviations(gibbs, "static_mnist", sampler="GWG") == deviations(config, "static_mnist")
    rows = [("GWG", "test_log_likelihood", 4000, -104.0), ("GWG", "base_test_log_likelihood", 4000, -205.8),
            ("GWG", "convergence_log_likelihood", 2000, -103.0), ("GWG", "convergence_log_likelihood", 4000, -104.0),
            ("GWG", "test_log_likelihood_upper_bound", 4000, -70.0)]
    df = pd.DataFrame(rows, columns=["sampler", "metric", "step", "value"]).assign(target="static_mnist")
    tab = table(df, {("static_mnist", "GWG"): config})
    ours = tab[(tab["model"] == "EBM (GWG)") & (tab["source"] == "this run")].iloc[0]
    assert ours["hard_upper_bound"] == -70.0
    assert ours["ais_doubling"] == "2000 -> 4000 levels: -1 nats" and ours["note"].startswith("iterations 2,000")
    # an equal wall-clock run that stopped at its own count, whose AIS value lies above its hard bound
    gibbs = pd.DataFrame([("Gibbs-1", "test_log_likelihood", 4000, -11.0),
                          ("Gibbs-1", "train_iterations", 4000, 3742.0),
                          ("Gibbs-1", "test_log_likelihood_upper_bound", 4000, -97.0)],
                         columns=["sampler", "metric", "step", "value"]).assign(target="static_mnist")
    row = table(gibbs, {("static_mnist", "Gibbs-1"): config}).iloc[0]
    assert row["note"].startswith("INVALID: the AIS estimate lies above the hard bound -97.00 nats")
    assert "iterations 3,742 (equal wall-clock with GWG; paper 50,000)" in row["note"]
    # bits per dimension (256-level data): the bound and the doubling on the same scale, D log 2 nats per bpd
    d_log2 = 560 * np.log(2.0)
    frey = pd.DataFrame([("GWG", "test_log_likelihood", 200, -2470.0),
                         ("GWG", "test_bits_per_dim", 200, 2470.0 / d_log2),
                         ("GWG", "test_log_likelihood_upper_bound", 200, -300.0),
                         ("GWG", "convergence_log_likelihood", 100, -2469.0),
                         ("GWG", "convergence_log_likelihood", 200, -2470.0)],
                        columns=["sampler", "metric", "step", "value"]).assign(target="frey")
    row = table(frey).iloc[0]
    assert row["hard_upper_bound"] == pytest.approx(300.0 / d_log2)
    assert row["ais_doubling"] == f"100 -> 200 levels: {1.0 / d_log2:+.3g} bits/dim"
    base = tab[tab["model"] == "data-fitted Bernoulli base"]
    assert list(base["value"]) == [-205.8] and list(base["source"]) == ["this run (exact)"]
