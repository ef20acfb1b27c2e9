"""Text models of the GWG paper's App. J (gradmc.models.text) and their closed-form baselines
(gradmc.evaluation.text_baselines), against exact values on spaces small enough to enumerate.

Tolerances:
- AIS: as tests/test_ais.py, |log Z_hat - log Z| < 4 se + 0.01 with se < 0.08 (se: AIS's delta-method
  standard error; the 0.01 covers the Jensen bias of about se^2 / 2). A mutation (the weights scored with
  the uniform base while the chains start from and anneal along the unigram base) must break it.
- LM samples: Pearson's chi-square over all 27 sequences (26 degrees of freedom) below its 0.999 quantile
  (54.05), every expected count >= 5 (the usual validity condition); a fixed seed, so deterministic.
- LM training: the exact cross-entropy E_p[-log q] over all 81 sequences of a known Markov chain p is
  >= its closed-form entropy H (always, for any normalised q) and within 0.05 nats of it after training.
"""

from __future__ import annotations

import math

import pytest
import torch
from scipy.stats import chi2

import gradmc.evaluation.ais as ais_module
from gradmc.core.incremental import fingerprint
from gradmc.evaluation.ais import CategoricalBase, ais_log_partition, linear_schedule
from gradmc.evaluation.text_baselines import (
    uniform_log_likelihood,
    unigram_base,
    unigram_log_likelihood,
    unigram_log_probs,
)
from gradmc.models import BiLSTMEnergy, LSTMLanguageModel, train_language_model
from gradmc.samplers.discrete.registry import make_sampler


@pytest.fixture(autouse=True)
def _one_thread():
    """Tiny LSTMs: thread start-up dominates, and the machine's 2 cores are shared."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


def _all_sequences(vocab: int, length: int) -> torch.Tensor:
    """All vocab**length token sequences (vocab**length, length) int64."""
    return torch.cartesian_prod(*[torch.arange(vocab)] * length).reshape(-1, length)


def _random_energy(seed: int = 0, out_scale: float = 2.0) -> BiLSTMEnergy:
    """A tiny float64 BiLSTMEnergy (V = 3) with every parameter N(0, 1) and the output layer scaled: f spans
    about 4 nats over the 27 sentences of length 3 (entropy 2.56 nats vs log 27 = 3.30: far from flat)."""
    g = torch.Generator().manual_seed(seed)
    model = BiLSTMEnergy(3, embed_dim=4, hidden=4, proj=8).double()
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(torch.randn(p.shape, generator=g, dtype=p.dtype))
        model.out.weight.mul_(out_scale)
    return model.requires_grad_(False)


# ----------------------------------------------------------------------------------------------- energy


def test_energy_shapes_gradient_and_embedding():
    model = _random_energy()
    x = torch.nn.functional.one_hot(torch.tensor([[0, 2, 1, 1], [2, 2, 0, 1]]), 3).double().requires_grad_(True)
    f = model(x)
    assert f.shape == (2,) and f.dtype == torch.float64
    (grad,) = torch.autograd.grad(f.sum(), x)
    assert grad.shape == (2, 4, 3) and bool(torch.isfinite(grad).all())
    # x @ E on one-hot rows is the embedding lookup: the same f as an explicit nn.Embedding-style index
    with torch.no_grad():
        emb = model.embedding[torch.tensor([[0, 2, 1, 1], [2, 2, 0, 1]])]
        _, (h_n, _) = model.lstm(emb)
        want = model.out(model.act(model.proj(torch.cat([h_n[0], h_n[1]], -1)))).squeeze(-1)
    assert torch.allclose(f.detach(), want, atol=1e-12)
    # a float32 model on float64 input computes in float32 and answers in x's dtype
    assert BiLSTMEnergy(3, embed_dim=2, hidden=2, proj=2)(x.detach()).dtype == torch.float64
    for bad in (torch.zeros(2, 4), torch.zeros(2, 4, 5), torch.zeros(0, 4, 3), torch.zeros(2, 0, 3)):
        with pytest.raises(ValueError, match=r"\(C, L, 3\)"):
            model(bad)
    with pytest.raises(ValueError, match="vocab_size"):
        BiLSTMEnergy(1)
    with pytest.raises(ValueError, match="sizes"):
        BiLSTMEnergy(3, hidden=0)


def test_energy_paper_sizes_and_cache_fingerprint():
    """Paper sizes (App. J): 256-d embedding, 512 hidden per direction, 1024 -> 512 -> 1. The fingerprint
    (samplers' caches) is stable while nothing changes and moves after an optimiser step."""
    model = BiLSTMEnergy(10)
    assert model.embedding.shape == (10, 256) and model.lstm.hidden_size == 512 and model.lstm.bidirectional
    assert model.proj.in_features == 1024 and model.proj.out_features == 512 and model.out.in_features == 512
    small = BiLSTMEnergy(3, embed_dim=2, hidden=2, proj=2)
    before = fingerprint(small)
    assert before is not None and before == fingerprint(small)
    opt = torch.optim.SGD(small.parameters(), lr=0.1)
    small(torch.nn.functional.one_hot(torch.tensor([[0, 1]]), 3).float()).sum().backward()
    opt.step()
    assert fingerprint(small) != before
    small.eval()
    assert fingerprint(small) != fingerprint(small.train())


# ----------------------------------------------------------------------------------------- language model


def _tiny_lm(seed: int = 0) -> LSTMLanguageModel:
    torch.manual_seed(seed)
    model = LSTMLanguageModel(3, embed_dim=4, hidden=5).double()
    with torch.no_grad():
        model.head.weight.mul_(4.0)  # a clearly non-uniform distribution
    return model


def test_language_model_is_normalised_over_all_sequences():
    model = _tiny_lm()
    seqs = _all_sequences(3, 3)
    with torch.no_grad():
        logp = model.log_prob(seqs)
    assert logp.shape == (27,) and logp.dtype == torch.float64
    assert abs(float(torch.logsumexp(logp, 0))) < 1e-6
    assert float(logp.max() - logp.min()) > 1.0  # not flat
    for bad in (torch.zeros(3, dtype=torch.long), torch.zeros(2, 3), torch.full((2, 3), 3), torch.full((2, 3), -1)):
        with pytest.raises(ValueError, match="tokens"):
            model.log_prob(bad)


def test_language_model_samples_follow_log_prob():
    model = _tiny_lm(1)
    seqs = _all_sequences(3, 3)
    with torch.no_grad():
        probs = model.log_prob(seqs).exp()
    n = 20_000
    draws = model.sample(n, 3, torch.Generator().manual_seed(5))
    assert draws.shape == (n, 3) and draws.dtype == torch.long
    counts = torch.bincount(draws[:, 0] * 9 + draws[:, 1] * 3 + draws[:, 2], minlength=27).double()
    expected = n * probs
    assert float(expected.min()) >= 5.0
    stat = float(((counts - expected) ** 2 / expected).sum())
    critical = float(chi2.ppf(0.999, 26))
    assert stat < critical, (stat, critical)
    # teeth: the same counts against the probabilities of the reversed sequences fail the test
    reversed_probs = probs.reshape(3, 3, 3).permute(2, 1, 0).reshape(27)
    assert not torch.allclose(reversed_probs, probs, atol=1e-3)
    wrong = float(((counts - n * reversed_probs) ** 2 / (n * reversed_probs)).sum())
    assert wrong > critical, wrong
    with pytest.raises(ValueError, match="sizes"):
        model.sample(0, 3, torch.Generator())


def _markov_chain():
    p0 = torch.tensor([0.6, 0.3, 0.1], dtype=torch.float64)
    trans = torch.tensor([[0.8, 0.1, 0.1], [0.2, 0.6, 0.2], [0.3, 0.3, 0.4]], dtype=torch.float64)
    return p0, trans


def test_train_language_model_approaches_exact_entropy():
    """A first-order Markov chain over V = 3 words, sentences of L = 4: its entropy in closed form is
    H = H(p0) + sum_{t=1}^{L-1} sum_s P(x_{t-1} = s) H(T_s); the exact cross-entropy of the LM,
    CE = -sum_x p(x) log q(x) over all 81 sentences, is H + KL(p || q) >= H."""
    p0, trans = _markov_chain()
    length = 4

    def entropy(p):
        return float(-(p * p.log()).sum(-1)) if p.dim() == 1 else -(p * p.log()).sum(-1)

    marg, h_closed = p0, entropy(p0)
    for _ in range(1, length):
        h_closed += float(marg @ entropy(trans))
        marg = marg @ trans
    seqs = _all_sequences(3, length)
    log_p = p0.log()[seqs[:, 0]] + trans.log()[seqs[:, :-1], seqs[:, 1:]].sum(-1)
    assert float(torch.logsumexp(log_p, 0)) == pytest.approx(0.0, abs=1e-12)
    assert float(-(log_p.exp() * log_p).sum()) == pytest.approx(h_closed, abs=1e-12)

    g = torch.Generator().manual_seed(0)
    first = torch.multinomial(p0, 4000, replacement=True, generator=g)
    corpus = [first]
    for _ in range(1, length):
        corpus.append(torch.multinomial(trans[corpus[-1]], 1, generator=g).squeeze(-1))
    corpus = torch.stack(corpus, 1)

    torch.manual_seed(0)
    model = LSTMLanguageModel(3, embed_dim=8, hidden=16).double()

    def cross_entropy():
        with torch.no_grad():
            return float(-(log_p.exp() * model.log_prob(seqs)).sum())

    before = cross_entropy()
    lines = []
    history = train_language_model(model, corpus, iterations=300, batch_size=128, lr=0.02, generator=g,
                                   progress=lines.append)
    after = cross_entropy()
    assert len(history) == 300 and history[-1]["iteration"] == 300 and len(lines) == 10
    assert history[-1]["nll_per_token"] == pytest.approx(history[-1]["nll"] / length)
    assert before - h_closed > 0.3, (before, h_closed)
    assert h_closed <= after < h_closed + 0.05, (after, h_closed)


def test_train_language_model_rejects_non_finite_loss_and_bad_arguments():
    model = _tiny_lm()
    tokens = torch.zeros(4, 3, dtype=torch.long)
    with pytest.raises(ValueError, match="lr"):
        train_language_model(model, tokens, iterations=1, batch_size=2, lr=0.0, generator=torch.Generator())
    with pytest.raises(ValueError, match="sizes"):
        train_language_model(model, tokens, iterations=0, batch_size=2, lr=0.1, generator=torch.Generator())
    with torch.no_grad():
        model.head.bias.fill_(float("nan"))
    with pytest.raises(ValueError, match="iteration 1: non-finite loss"):
        train_language_model(model, tokens, iterations=3, batch_size=2, lr=0.1, generator=torch.Generator())


# --------------------------------------------------------------------------------------------- baselines


def test_uniform_and_unigram_closed_forms():
    tokens = torch.tensor([[0, 1, 1], [2, 1, 0]])
    assert torch.equal(uniform_log_likelihood(tokens, 4),
                       torch.full((2,), -3 * math.log(4), dtype=torch.float64))
    # counts 0: 2, 1: 3, 2: 1, 3: 0; add-one: (3, 4, 2, 1) / (6 + 4)
    log_pi = unigram_log_probs(tokens, 4)
    want = torch.tensor([0.3, 0.4, 0.2, 0.1], dtype=torch.float64).log()
    assert log_pi.dtype == torch.float64 and torch.allclose(log_pi, want, atol=1e-15)
    half = unigram_log_probs(tokens, 4, alpha=0.5)  # (2.5, 3.5, 1.5, 0.5) / 8
    assert torch.allclose(half, torch.tensor([2.5, 3.5, 1.5, 0.5], dtype=torch.float64).log() - math.log(8))
    ll = unigram_log_likelihood(tokens, log_pi)
    assert torch.allclose(ll, torch.tensor([math.log(0.3 * 0.4 * 0.4), math.log(0.2 * 0.4 * 0.3)],
                                           dtype=torch.float64), atol=1e-14)
    base = unigram_base(tokens, 4, length=3)
    assert isinstance(base, CategoricalBase) and base.log_probs.shape == (3, 4)
    assert torch.allclose(base.log_probs, want.expand(3, 4), atol=1e-15)
    onehot = torch.nn.functional.one_hot(tokens, 4).double()
    assert torch.allclose(base.log_prob(onehot), ll, atol=1e-14)
    every = torch.nn.functional.one_hot(_all_sequences(4, 3), 4).double()
    assert float(torch.logsumexp(base.log_prob(every), 0)) == pytest.approx(0.0, abs=1e-12)
    with pytest.raises(ValueError, match="alpha"):
        unigram_log_probs(tokens, 4, alpha=0.0)
    with pytest.raises(ValueError, match=r"\[0, 2\)"):
        uniform_log_likelihood(tokens, 2)
    with pytest.raises(ValueError, match="integer"):
        unigram_log_probs(tokens.double(), 4)
    with pytest.raises(ValueError, match="length"):
        unigram_base(tokens, 4, length=0)
    with pytest.raises(ValueError, match=r"\(V,\)"):
        unigram_log_likelihood(tokens, log_pi.expand(3, 4))


# --------------------------------------------------------------------------------------- AIS vs exact log Z

_TRAIN = torch.tensor([[0, 0, 1], [0, 2, 0], [0, 0, 0], [1, 0, 2]])  # unigram (0.6, 0.2, 0.2) with add-one


def _exact_log_z(model: BiLSTMEnergy) -> float:
    with torch.no_grad():
        return float(torch.logsumexp(model(torch.nn.functional.one_hot(_all_sequences(3, 3), 3).double()), 0))


def _check(result, exact, max_se=0.08):
    assert result.log_z_se < max_se, result
    assert abs(result.log_z - exact) < 4 * result.log_z_se + 0.01, (result.log_z, exact, result.log_z_se)


def _ais(model, base, seed):
    return ais_log_partition(model, base, make_sampler("GWG", state="categorical"), num_chains=300,
                             betas=linear_schedule(100), generator=torch.Generator().manual_seed(seed),
                             dtype=torch.float64)


def test_ais_with_categorical_gwg_and_unigram_base_matches_exact_log_z():
    """The text EBM's evaluation path (App. J): AIS from the unigram base with categorical GWG kernels, on
    a BiLSTMEnergy small enough to enumerate (27 sentences). The uniform base is a valid base too."""
    model = _random_energy()
    exact = _exact_log_z(model)
    result = _ais(model, unigram_base(_TRAIN, 3, length=3), seed=0)
    _check(result, exact)
    assert 1 < result.weights_ess <= 300
    _check(_ais(model, CategoricalBase(torch.zeros(3, 3, dtype=torch.float64)), seed=1), exact)


def test_ais_check_fails_when_weights_use_the_wrong_base(monkeypatch):
    """Mutation: chains drawn from and annealed along the unigram base, but the weights scored with the
    uniform base's log p_0 (the bug of swapping one base for the other in the weight update). The same
    check must reject it (measured: log Z_hat 4.850 vs exact 4.560, off by +0.29 nats against 4 se + 0.01 = 0.067)."""
    model = _random_energy()
    exact = _exact_log_z(model)
    unigram = unigram_base(_TRAIN, 3, length=3)
    uniform = CategoricalBase(torch.zeros(3, 3, dtype=torch.float64))

    class WrongWeights:
        def log_prob(self, x):
            return uniform.log_prob(x)

        def sample(self, num, generator):
            return unigram.sample(num, generator)

    class UnigramPath(ais_module._Intermediate):
        def __init__(self, model, base, beta, memo=None):
            super().__init__(model, unigram, beta, ais_module._TermMemo(model, unigram))  # the path's own base

    monkeypatch.setattr(ais_module, "_Intermediate", UnigramPath)
    result = _ais(model, WrongWeights(), seed=0)
    assert result.log_z_se < 0.08
    assert abs(result.log_z - exact) > 4 * result.log_z_se + 0.01, (result.log_z, exact, result.log_z_se)


# ---------------------------------------------------------------------------------------- PCD smoke (App. J)


def test_pcd_trains_the_energy_on_token_indices():
    """The App. J training path end to end on a toy corpus: EBMTrainer (replay-buffer PCD) with categorical
    GWG on a BiLSTMEnergy, sentences stored as (N, L) token indices and one-hot encoded per batch, the buffer
    initialised from the unigram base. Only a smoke check (finite, shapes, parameters move)."""
    from gradmc.training.ebm import EBMTrainer

    g = torch.Generator().manual_seed(0)
    tokens = torch.randint(0, 4, (64, 5), generator=g)
    torch.manual_seed(0)
    model = BiLSTMEnergy(4, embed_dim=4, hidden=6, proj=6)
    start = [p.detach().clone() for p in model.parameters()]
    trainer = EBMTrainer(model, make_sampler("GWG", state="categorical"), tokens, unigram_base(tokens, 4, length=5),
                         num_steps=3, batch_size=8, buffer_size=16, lr=1e-3, warmup=0, ema_decay=0.9, generator=g,
                         data_transform=lambda batch, _g: torch.nn.functional.one_hot(batch, 4).float())
    rows = [trainer.step() for _ in range(3)]
    assert all(math.isfinite(r["loss"]) and 0.0 <= r["acceptance_rate"] <= 1.0 for r in rows)
    assert trainer.buffer.shape == (16, 5, 4) and torch.equal(trainer.buffer.sum(-1), torch.ones(16, 5))
    assert any(not torch.equal(a, b) for a, b in zip(start, model.parameters(), strict=True))


def test_gwg_caches_the_energy_and_matches_an_uncached_run():
    """With cache_fingerprint, categorical GWG evaluates the BiLSTMEnergy once per step after the first
    (energy_evals 2 then 1), and its chain is the same as with an uncacheable wrapper of the same f (2 per
    step); an optimiser step in between is seen (the next step re-evaluates)."""
    model = _random_energy()
    x0 = torch.nn.functional.one_hot(torch.randint(0, 3, (6, 3), generator=torch.Generator().manual_seed(1)),
                                     3).double()
    runs = {}
    for name, target in (("cached", model), ("plain", lambda x: model(x))):
        sampler = make_sampler("GWG", state="categorical")
        g = torch.Generator().manual_seed(2)
        state = sampler.init(x0.clone(), target)
        evals = []
        for _ in range(4):
            state, info = sampler.step(state, target, g)
            evals.append(info.energy_evals)
        runs[name] = (state.x, evals)
    assert runs["cached"][1] == [2, 1, 1, 1] and runs["plain"][1] == [2, 2, 2, 2]
    assert torch.equal(runs["cached"][0], runs["plain"][0])
    sampler = make_sampler("GWG", state="categorical")
    g = torch.Generator().manual_seed(2)
    state, _ = sampler.step(sampler.init(x0.clone(), model), model, g)
    with torch.no_grad():
        model.out.bias.add_(0.5)  # in place, as an optimiser step
    _, info = sampler.step(state, model, g)
    assert info.energy_evals == 2
