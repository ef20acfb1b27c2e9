"""The data-fitted base term of the ResNet EBM, f = net + log p_0 (GWG authors' pcd_ebm_ema.py), its AIS and
the ebm experiment's test subset / learning-curve rows (gradmc.models.resnet_ebm, gradmc.experiments.ebm)."""

from __future__ import annotations

import math
from types import SimpleNamespace

import pytest
import torch
from _ebm_data import prepared_images

from gradmc.errors import InputError
from gradmc.evaluation.ais import BernoulliBase, CategoricalBase, ais_log_partition, linear_schedule
from gradmc.experiments.ebm import build_model, learning_curve_rows, subset
from gradmc.models import ResNetEBM
from gradmc.samplers.discrete.registry import make_sampler
from gradmc.seeding import seed_from
from gradmc.training.ebm import EBMTrainer

SPEC = {"channels": 4, "num_blocks": 2, "num_strided": 2, "embed_dim": 2}


def _binary(n=200, shape=(6, 5), seed=0):
    g = torch.Generator().manual_seed(seed)
    p = torch.rand(shape[0] * shape[1], generator=g) * 0.8 + 0.1
    return torch.bernoulli(p.expand(n, -1), generator=g).float()


def _zero_net(model: ResNetEBM) -> ResNetEBM:
    with torch.no_grad():
        model.head.weight.zero_()
        model.head.bias.zero_()
    return model


def test_binary_base_term_is_the_closed_form_bernoulli_log_prob():
    data = _binary()
    base = BernoulliBase.fit(data)
    model = ResNetEBM((6, 5), channels=4, num_blocks=2, base=base.logits)
    x = _binary(7, seed=1)
    p = torch.sigmoid(base.logits.float())
    closed = (x * p.log() + (1 - x) * (1 - p).log()).sum(-1)
    with torch.no_grad():
        assert torch.allclose(model(x) - model.net(x), closed, atol=1e-4)
    # differentiable in x, and grad_x of the base part is the logits
    xr = x.clone().requires_grad_(True)
    grad_full, = torch.autograd.grad(model(xr).sum(), xr)
    grad_net, = torch.autograd.grad(model.net(xr).sum(), xr)
    assert torch.allclose(grad_full - grad_net, base.logits.float().expand_as(x), atol=1e-5)


def test_categorical_base_term_is_the_per_pixel_log_prob():
    g = torch.Generator().manual_seed(3)
    levels = torch.randint(0, 5, (50, 12), generator=g)
    base = CategoricalBase.fit_indices(levels, 5)
    model = ResNetEBM((3, 4), 5, channels=4, num_blocks=2, embed_dim=2, base=base.log_probs)
    x = torch.nn.functional.one_hot(levels[:6], 5).float()
    expected = base.log_probs.float().gather(1, levels[:6].t()).t().sum(-1)  # sum_i log pi_i(x_i)
    with torch.no_grad():
        assert torch.allclose(model(x) - model.net(x), expected, atol=1e-4)
    # unnormalised log-probabilities are normalised per pixel
    shifted = ResNetEBM((3, 4), 5, channels=4, num_blocks=2, embed_dim=2, base=base.log_probs + 3.0)
    assert torch.allclose(shifted.base, model.base, atol=1e-6)


def test_base_validation_and_no_base_model():
    with pytest.raises(ValueError, match="shape"):
        ResNetEBM((6, 5), channels=4, num_blocks=2, base=torch.zeros(29))
    with pytest.raises(ValueError, match="finite"):
        ResNetEBM((6, 5), channels=4, num_blocks=2, base=torch.full((30,), math.inf))
    plain = ResNetEBM((6, 5), channels=4, num_blocks=2)
    x = _binary(3)
    assert plain.base is None and "base" not in plain.state_dict()
    with torch.no_grad():
        assert torch.equal(plain(x), plain.net(x)) and torch.equal(plain.base_log_prob(x), torch.zeros(3))


def test_base_is_saved_and_restored_with_the_weights(tmp_path):
    logits = BernoulliBase.fit(_binary()).logits
    model = ResNetEBM((6, 5), channels=4, num_blocks=2, base=logits)
    torch.save(model.state_dict(), tmp_path / "m.pt")
    other = ResNetEBM((6, 5), channels=4, num_blocks=2, base=torch.zeros(30))
    other.load_state_dict(torch.load(tmp_path / "m.pt", weights_only=True))
    assert torch.equal(other.base, logits.float())
    x = _binary(4, seed=5)
    with torch.no_grad():
        assert torch.equal(other(x), model(x))
    with pytest.raises(RuntimeError, match="base"):  # a base checkpoint does not load into a no-base model
        ResNetEBM((6, 5), channels=4, num_blocks=2).load_state_dict(model.state_dict())


def test_trainer_ema_keeps_the_base_and_energy_l2_penalises_only_the_network():
    data = _binary(300)
    base = BernoulliBase.fit(data)

    def run(energy_l2):
        torch.manual_seed(0)
        model = _zero_net(ResNetEBM((6, 5), channels=4, num_blocks=2, base=base.logits))
        trainer = EBMTrainer(model, make_sampler("GWG"), data, base, num_steps=2, batch_size=16, buffer_size=32,
                             lr=1e-3, warmup=0, ema_decay=0.9, generator=torch.Generator().manual_seed(1),
                             energy_l2=energy_l2)
        return trainer, trainer.step()

    t0, r0 = run(0.0)
    t1, r1 = run(5.0)
    # net = 0 at the first step: the regulariser on net is exactly 0 although f is about -20 nats
    assert r1["f_data"] < -5 and r1["loss"] == r0["loss"]
    t1.step()
    assert torch.equal(t1.ema_model().base, base.logits.float())


def test_ais_of_the_base_only_model_is_exactly_zero_and_gives_the_base_likelihood():
    """net = 0: f = log p_0 term for term, every AIS increment is 0, log Z_hat = 0 and the test
    log-likelihood is the base's exact one."""
    data = _binary(400)
    base = BernoulliBase.fit(data)
    model = _zero_net(ResNetEBM((6, 5), channels=4, num_blocks=2, base=base.logits)).requires_grad_(False)
    result = ais_log_partition(model, base, make_sampler("GWG"), num_chains=8, betas=linear_schedule(5),
                               generator=torch.Generator().manual_seed(0))
    assert torch.equal(result.log_weights, torch.zeros(8, dtype=torch.float64))
    assert abs(result.log_z) < 1e-12 and result.log_z_se == 0.0
    test = _binary(50, seed=9)
    with torch.no_grad():
        ll = float(model(test).double().mean()) - result.log_z
    assert ll == pytest.approx(float(base.log_prob(test.double()).mean()), abs=1e-4)


def test_build_model_base_option():
    data = SimpleNamespace(image_shape=(6, 5), levels=2, base=BernoulliBase.fit(_binary()))
    assert torch.equal(build_model({**SPEC, "base": "data"}, data).base, data.base.logits.float())
    assert build_model({**SPEC, "base": "none"}, data).base is None
    with pytest.raises(InputError, match="base"):
        build_model({**SPEC, "base": "uniform"}, data)


def test_subset_is_a_seeded_sample_not_a_prefix():
    x = torch.arange(100).reshape(50, 2)
    assert subset(x, 50, 0) is x and subset(x, 80, 0) is x
    a, b = subset(x, 10, 7), subset(x, 10, 7)
    assert torch.equal(a, b) and a.shape == (10, 2)
    rows = (a[:, 0] // 2).tolist()
    assert rows == sorted(set(rows)) and rows != list(range(10))  # distinct, in order, not the first rows


def test_learning_curve_rows_from_history():
    state = {"history": [{"iteration": 1, "seconds": 0.5}, {"iteration": 2, "seconds": 1.0, "validation": -150.0},
                         {"iteration": 3, "seconds": 1.5}, {"iteration": 4, "seconds": 2.0, "validation": -120.0}]}
    rows = learning_curve_rows(state, "GWG")
    assert rows == [("GWG", 0, 0, 2, "learning_curve_log_likelihood", -150.0, 0, 0, 1.0),
                    ("GWG", 0, 0, 2, "learning_curve_seconds", 1.0, 0, 0, 1.0),
                    ("GWG", 0, 0, 4, "learning_curve_log_likelihood", -120.0, 0, 0, 2.0),
                    ("GWG", 0, 0, 4, "learning_curve_seconds", 2.0, 0, 0, 2.0)]
    assert learning_curve_rows({"history": [{"iteration": 1, "seconds": 0.1}]}, "GWG") == []


def _tiny_config(train: dict, ais: dict) -> dict:
    """A seconds-sized EBM config: the shared small settings with ``train`` / ``ais`` entries put over them."""
    return {"device": "cpu", "ebm": {
        "model": {**SPEC, "base": "data"},
        "train": {"num_steps": 2, "batch_size": 8, "buffer_size": 16, "buffer_sizes": {}, "lr": 1e-3, "warmup": 2,
                  "ema_decay": 0.9, "energy_l2": 0.01, "checkpoint_every": 0, "log_every": 1, **train},
        "ais": {"num_chains": 4, "validation_examples": 10, "bound_search_steps": 3, **ais}}}


def test_train_and_ais_stages_emit_base_se_and_learning_curve_rows(tmp_path):
    from gradmc.experiments.ebm import ais_stage, load_data, train_stage
    from gradmc.results.schema import validate_metrics
    path = prepared_images(tmp_path)
    config = _tiny_config(train={"iterations": 4, "eval_every": 2},
                          ais={"num_intermediate": 4, "validation_intermediate": 3, "test_examples": 25,
                               "convergence": [2, 4], "bound_search_chains": 4, "bound_search_temperature": 0.1})
    out = tmp_path / "model.pt"
    train_stage(config, "static_mnist", "GWG", str(path), str(out), progress=None)
    df = ais_stage(config, "static_mnist", "GWG", str(out), str(path), progress=None)
    validate_metrics(df)
    curve = df[df["metric"] == "learning_curve_log_likelihood"]
    assert curve["step"].tolist() == [2, 4] and bool((curve["wall_time_s"] > 0).all())
    seconds = df[df["metric"] == "learning_curve_seconds"]
    assert seconds["value"].tolist() == curve["wall_time_s"].tolist()
    data = load_data(path)
    test = subset(data.splits["test"], 25, seed_from("ebm", "test_rows", "static_mnist"))
    base = float(data.base.log_prob(test.double()).mean())
    got = df[df["metric"] == "base_test_log_likelihood"]["value"].item()
    assert got == pytest.approx(base, abs=1e-9)
    one = {m: df[df["metric"] == m]["value"].item() for m in ("test_log_likelihood", "log_z", "log_z_lower_bound",
                                                               "test_log_likelihood_upper_bound")}
    # both are mean f(x_test) minus a log Z (AIS's estimate, the hard bound's)
    assert one["test_log_likelihood"] + one["log_z"] == pytest.approx(
        one["test_log_likelihood_upper_bound"] + one["log_z_lower_bound"], abs=1e-9)
    se = df[df["metric"] == "test_log_likelihood_se"]["value"].item()
    assert se >= df[df["metric"] == "log_z_se"]["value"].item() > 0
    # the mode search only adds states: the bound is at least that of the training images and the buffer
    from gradmc.evaluation.ais import log_z_lower_bound
    from gradmc.experiments.ebm import _known_states, load_trained
    model, state = load_trained(str(out), config["ebm"], data)
    assert one["log_z_lower_bound"] >= log_z_lower_bound(model, _known_states(data, state)) - 1e-9
    assert df[df["metric"] == "bound_search_seconds"]["value"].item() > 0


def test_the_mode_search_bound_on_categorical_data(tmp_path):
    """256-level-style data (here 4 levels, stored as level indices, one-hot model input): the search's states
    come back as level indices, join the bound, and the bound is at least that of the known states."""
    from gradmc.evaluation.ais import log_z_lower_bound
    from gradmc.experiments.ebm import _known_states, ais_stage, load_data, load_trained, train_stage
    path = prepared_images(tmp_path, levels=4, name="frey", shape=(4, 3))
    config = _tiny_config(train={"iterations": 3, "eval_every": 0},
                          ais={"num_intermediate": 3, "validation_intermediate": 2, "test_examples": 20,
                               "convergence": [3], "bound_search_chains": 5, "bound_search_temperature": 0.2})
    out = tmp_path / "model.pt"
    train_stage(config, "frey", "GWG", str(path), str(out), progress=None)
    df = ais_stage(config, "frey", "GWG", str(out), str(path), progress=None)
    data = load_data(path)
    model, state = load_trained(str(out), config["ebm"], data)
    known = log_z_lower_bound(model, _known_states(data, state), transform=data.model_input)
    got = df[df["metric"] == "log_z_lower_bound"]["value"].item()
    assert math.isfinite(got) and got >= known - 1e-9
    assert df[df["metric"] == "bound_search_seconds"]["value"].item() > 0


def test_steps_by_sampler_sets_gibbs_steps_and_leaves_gwg_on_num_steps(tmp_path):
    """ebm.train.steps_by_sampler {Gibbs-1: 5}: the Gibbs-1 run takes 5 sampler steps per iteration, GWG the shared
    num_steps (2); the checkpoint's resolved settings say so; a data set's override replaces the mapping."""
    from gradmc.experiments.ebm import read_checkpoint, train_stage
    from gradmc.specs.ebm_samplers import sampler_steps
    path = prepared_images(tmp_path)
    config = _tiny_config(train={"iterations": 1, "eval_every": 0, "steps_by_sampler": {"Gibbs-1": 5}},
                          ais={"validation_intermediate": 2})
    steps = {}
    for sampler in ("GWG", "Gibbs-1"):
        out = tmp_path / f"{sampler}.pt"
        train_stage(config, "static_mnist", sampler, str(path), str(out), progress=None)
        state = read_checkpoint(out)
        steps[sampler] = state["settings"]["num_steps"]
        assert "steps_by_sampler" not in state["settings"]["tag"]  # the run's own count only
    assert steps == {"GWG": 2, "Gibbs-1": 5}
    train = config["ebm"]["train"]
    assert (sampler_steps(train, "Gibbs-1"), sampler_steps(train, "GWG"), sampler_steps(train, "DMALA")) == (5, 2, 2)
    assert sampler_steps({"num_steps": 40}, "Gibbs-1") == 40  # no mapping: every sampler runs num_steps
    with pytest.raises(InputError, match="Gibbs-2"):
        sampler_steps({"num_steps": 4, "steps_by_sampler": {"Gibbs-2": 8}}, "GWG")
    with pytest.raises(InputError, match="int >= 1"):
        sampler_steps({"num_steps": 4, "steps_by_sampler": {"Gibbs-1": 0}}, "Gibbs-1")


@pytest.mark.parametrize(("bad", "expected"), [
    ({"Gibbs-1": 0}, ["ebm.train.steps_by_sampler.Gibbs-1", "got 0", "minimum"]),
    ({"Gibbs-1": "many"}, ["ebm.train.steps_by_sampler.Gibbs-1", "'many'", "integer"]),
    ({"Gibbs-2": 800}, ["ebm.train.steps_by_sampler", "'Gibbs-2'", "Gibbs-1"]),
])
def test_steps_by_sampler_bad_values_are_named_by_the_schema(bad, expected):
    import copy
    from pathlib import Path

    from gradmc.config import ConfigError, load_config, validate_config
    from gradmc.specs.ebm_samplers import SAMPLERS
    config = copy.deepcopy(load_config(Path(__file__).resolve().parents[1] / "config" / "smoke.yaml"))
    assert config["ebm"]["train"]["steps_by_sampler"] == {}  # the schema's default: every sampler runs num_steps
    config["ebm"]["train"]["steps_by_sampler"] = bad
    with pytest.raises(ConfigError) as err:
        validate_config(config)
    for fragment in expected:
        assert fragment in str(err.value)
    import yaml  # the schema's enum of sampler names is the training samplers' list
    spec = yaml.safe_load((Path(__file__).resolve().parents[1] / "pkg" / "gradmc" / "experiments" / "ebm" /
                           "schema.yaml").read_text())
    assert tuple(spec["properties"]["train"]["properties"]["steps_by_sampler"]["propertyNames"]["enum"]) == SAMPLERS
