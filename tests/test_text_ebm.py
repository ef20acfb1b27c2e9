"""The text EBM experiment of GWG App. J (gradmc.experiments.text_ebm) on tiny prepared data: AIS with
categorical GWG and the unigram base against the exact log Z of the experiment's own model (base term
included) by enumeration, the stages' outputs, and the baselines' closed forms."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F

from gradmc.data.ptb import load_prepared_text, prepare_text
from gradmc.errors import InputError
from gradmc.evaluation.text_baselines import unigram_base, unigram_log_probs
from gradmc.experiments import text_ebm as exp
from gradmc.experiments import text_lm
from gradmc.samplers.discrete.onehot import enumerate_onehot

TRAIN = ["a b", "a", "b a a", "a c", "c", "a b c", "b", "a a"]
TEST = ["a", "b b", "c a", "a b", "d"]


def _config(iterations=4):
    return {"device": "cpu", "text_ebm": {
        "data": {"train_split": "valid", "vocab_size": 4, "max_length": 3},  # as `prepared` below
        "model": {"embed_dim": 4, "hidden": 4, "proj": 8},
        "train": {"iterations": iterations, "num_steps": 3, "batch_size": 4, "buffer_size": 8, "lr": 1e-3,
                  "warmup": 2, "ema_decay": 0.9, "energy_l2": 0.01, "log_every": 2, "num_samples": 5},
        "lm": {"embed_dim": 4, "hidden": 8},
        "lm_train": {"iterations": 30, "batch_size": 4, "lr": 0.01},
        "ais": {"num_intermediate": 20, "num_chains": 16, "convergence": [5, 20]}}}


@pytest.fixture
def prepared(tmp_path):
    (tmp_path / "train.txt").write_text("\n".join(TRAIN) + "\n")
    (tmp_path / "test.txt").write_text("\n".join(TEST) + "\n")
    out = tmp_path / "text.npz"
    prepare_text(tmp_path / "train.txt", tmp_path / "test.txt", out, vocab_size=4, max_length=3)
    return out


def test_ais_agrees_with_the_exact_log_z_of_the_experiments_model(prepared):
    """V = 4 words, L = 3: 64 sentences. The experiment's model (BiLSTM correction + unigram base, weights
    redrawn so the correction spans > 2 nats) and its AIS (categorical GWG, linear schedule, unigram base) against
    logsumexp f over all 64 one-hot sentences: within 4 AIS standard errors + 0.01 (the AIS tests' rule)."""
    data = load_prepared_text(prepared)
    assert data.vocabulary == ("<eos>", "<unk>", "a", "b") and data.max_length == 3
    model = exp.build_ebm(_config()["text_ebm"], data).double()
    gen = torch.Generator().manual_seed(3)
    with torch.no_grad():  # every weight N(0, 1), the output layer's N(0, 2^2)
        for p in model.net.parameters():
            p.copy_(torch.randn(p.shape, generator=gen, dtype=torch.float64))
        model.net.out.weight.mul_(2.0)
    states = enumerate_onehot(3, 4, torch.float64)
    with torch.no_grad():
        f, correction = model(states), model.net(states)
        exact = float(torch.logsumexp(f, 0))
    print(f"correction range {float(correction.max() - correction.min()):.2f} nats")
    assert float(correction.max() - correction.min()) > 2.0  # the model is not its base
    train = torch.as_tensor(data.splits["train"])
    base = unigram_base(train, 4, 3, exp.UNIGRAM_ALPHA)
    result = exp.ebm_log_z(model, base, 200, 400, seed=11)
    print(f"AIS {result.log_z:.4f} +- {result.log_z_se:.4f} vs exact {exact:.4f}")
    assert result.log_z_se < 0.08
    assert abs(result.log_z - exact) < 4 * result.log_z_se + 0.01


def test_the_stages_train_evaluate_and_score_the_baselines_exactly(prepared, tmp_path):
    config = _config()
    ebm_out, lm_out = tmp_path / "ebm.pt", tmp_path / "lm.pt"
    summary = exp.train_ebm_stage(config, str(prepared), str(ebm_out), progress=None)
    assert summary["iterations"] == 4 and 0.0 <= summary["acceptance_rate"] <= 1.0
    lines = exp.sample_lines(ebm_out)
    assert len(lines) == 5 and all(set(line.split()) <= {"<unk>", "a", "b"} for line in lines)
    assert text_lm.train_lm_stage(config, str(prepared), str(lm_out), progress=None)["iterations"] == 30
    df = exp.evaluate_stage(config, str(prepared), str(ebm_out), str(lm_out), progress=None)
    assert set(df["experiment"]) == {"text_ebm"} and set(df["target"]) == {"ptb"}
    assert tuple(dict.fromkeys(df["sampler"])) == exp.MODELS

    def value(model, metric, step=None):
        rows = df[(df["sampler"] == model) & (df["metric"] == metric)]
        if step is not None:
            rows = rows[rows["step"] == step]
        (v,) = rows["value"].tolist()
        return v

    data = load_prepared_text(prepared)
    test = torch.as_tensor(data.splits["test"])
    n = test.shape[0]
    assert value("uniform", "test_sentences") == n
    assert value("uniform", "test_log_likelihood") == pytest.approx(-3 * math.log(4))
    assert value("uniform", "test_log_likelihood_se") == 0.0
    log_pi = unigram_log_probs(torch.as_tensor(data.splits["train"]), 4, 1.0)
    per_sentence = F.one_hot(test, 4).double().mul(log_pi).sum((-1, -2))
    assert value("unigram", "test_log_likelihood") == pytest.approx(float(per_sentence.mean()))
    assert value("unigram", "test_log_likelihood_se") == pytest.approx(float(per_sentence.std()) / math.sqrt(n))
    assert value("unigram", "test_log_likelihood_per_token") == pytest.approx(float(per_sentence.mean()) / 3)
    for model in exp.MODELS:
        assert math.isfinite(value(model, "test_log_likelihood"))
        assert value(model, "test_log_likelihood") < 0  # a normalised distribution over discrete sentences
    assert value("EBM (GWG)", "train_iterations", 20) == 4
    assert sorted(df[df["metric"] == "convergence_log_likelihood"]["step"]) == [5, 20]
    assert value("EBM (GWG)", "convergence_log_likelihood", 20) == pytest.approx(
        value("EBM (GWG)", "test_log_likelihood", 20))  # the estimate's own run is reused at its level count


def test_missing_section_and_bad_checkpoints_are_named(prepared, tmp_path):
    with pytest.raises(InputError, match="no 'text_ebm' section"):
        exp.train_ebm_stage({"device": "cpu"}, str(prepared), str(tmp_path / "x.pt"), progress=None)
    (tmp_path / "bad.pt").write_bytes(b"not a checkpoint")
    with pytest.raises(InputError, match="bad.pt"):
        exp.read_ebm(tmp_path / "bad.pt", _config()["text_ebm"], load_prepared_text(prepared))
    assert not (tmp_path / "x.pt").exists()
