"""GWG paper Appendix J (EXPERIMENTS.md A8): an energy-based model of Penn Treebank sentences, trained by PCD with
categorical Gibbs-With-Gradients and scored by AIS, against an autoregressive LSTM, a unigram and a uniform model.

Stages (each a ``gradmc`` command and a rule of ``workflow/rules/text_ebm.smk``):
1. data (``gradmc data prepare ptb``): :func:`gradmc.data.ptb.prepare_from_config` ->
   :func:`~gradmc.data.ptb.prepare_text` (vocabulary from the train role's file, sentences of at most ``max_length``
   words, padded with ``<eos>``) -> a prepared ``.npz``. With ``text_ebm.data.train_split: valid`` (quick, smoke)
   ``ptb.valid.txt`` trains and ``ptb.test.txt`` tests, so ``ptb.train.txt`` is not needed (the manifest records the
   roles).
2. :func:`train_ebm_stage`: f(x) = net(x) + log p_0(x) (:class:`TextEBM`: a :class:`~gradmc.models.text.BiLSTMEnergy`
   correction over the fixed unigram base p_0, as the image EBMs learn a correction over their data-fitted
   base), trained by replay-buffer PCD (:class:`gradmc.training.ebm.EBMTrainer`, paper: buffer 1,000, 20
   categorical GWG steps per iteration) on one-hot sentences (C, L, V) -> checkpoint and decoded buffer samples.
3. :func:`gradmc.experiments.text_lm.train_lm_stage`: the autoregressive
   :class:`~gradmc.models.text.LSTMLanguageModel` by maximum likelihood -> its weights.
4. :func:`evaluate_stage`: test log-likelihood per sentence (nats) and per token (nats / L) of the EBM (log Z by
   AIS: categorical GWG transitions, linear schedule, unigram base), the LM (exact), the unigram (exact) and the
   uniform model (exact), each with its standard error over test sentences (the EBM's also over AIS chains),
   and the AIS convergence rows (the estimate at each ``ais.convergence`` level count).

All four models are distributions over the same space, the V^L padded sequences of length L, so their
log-likelihoods compare directly (the padding tokens are scored by every model).
"""

from __future__ import annotations

import ast
import math
import time
from collections.abc import Callable
from pathlib import Path

import pandas as pd
import torch
import torch.nn.functional as F

from gradmc.atomic import atomic_path
from gradmc.data.ptb import TextData, decode
from gradmc.errors import InputError, check_output_file
from gradmc.evaluation.ais import ais_log_partition, linear_schedule
from gradmc.evaluation.text_baselines import (
    uniform_log_likelihood,
    unigram_base,
    unigram_log_likelihood,
    unigram_log_probs,
)
from gradmc.experiments.runner import tidy_frame
from gradmc.experiments.text_lm import EXPERIMENT, load_checkpoint, load_data, load_weights, read_lm
from gradmc.experiments.text_lm import spec as _spec
from gradmc.experiments.text_lm import tokens as _tokens
from gradmc.models.text import BiLSTMEnergy
from gradmc.samplers.discrete.registry import make_sampler
from gradmc.seeding import make_generator, seed_from
from gradmc.training.ebm import CHECKPOINT_FORMAT, EBMTrainer

__all__ = ["EXPERIMENT", "META", "MODELS", "TextEBM", "build_ebm", "train_ebm_stage", "evaluate_stage",
           "read_ebm", "samples_path", "sample_lines", "ebm_log_z"]

META = {"stages": {
    "train_text_ebm": ["text_ebm.data", "text_ebm.model", "text_ebm.train"],
    # text_ebm.train and .lm_train: the checkpoints already depend on them; here they put the training settings
    # in the metrics' provenance, so the table lists the run's deviations from the paper's
    "eval_text_ebm": ["text_ebm.data", "text_ebm.model", "text_ebm.train", "text_ebm.lm", "text_ebm.lm_train",
                      "text_ebm.ais"],
}}
#: The ``sampler`` column of the result rows, in table order.
MODELS = ("EBM (GWG)", "LSTM LM", "unigram", "uniform")
UNIGRAM_ALPHA = 1.0  # add-one smoothing of the unigram (base and baseline)


class TextEBM(torch.nn.Module):
    """f(x) = net(x) + log p_0(x) over one-hot sentences x (C, L, V): a learned correction ``net`` (a
    :class:`~gradmc.models.text.BiLSTMEnergy`) over the fixed unigram base p_0 (``log_probs`` (V,), normalised).

    ``base_log_prob(x)`` is log p_0(x) (C,), so the trainer's ``energy_l2`` penalises the correction only.
    """

    def __init__(self, net: BiLSTMEnergy, log_probs: torch.Tensor):
        super().__init__()
        if log_probs.shape != (net.vocab_size,):
            raise ValueError(f"log_probs must be ({net.vocab_size},), got {tuple(log_probs.shape)}")
        self.net = net
        self.register_buffer("log_probs", log_probs.detach().clone().float())

    def base_log_prob(self, x: torch.Tensor) -> torch.Tensor:
        """log p_0(x) = sum_t <x_t, log pi>, (C, L, V) -> (C,)."""
        return (x * self.log_probs.to(x.dtype)).sum((-1, -2))

    def cache_fingerprint(self):
        """The network's fingerprint (the base is a fixed buffer) for the samplers' caches."""
        return self.net.cache_fingerprint()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """f(x): (C, L, V) one-hot -> (C,) nats."""
        return self.net(x) + self.base_log_prob(x)


def build_ebm(spec: dict, data: TextData, device: str = "cpu") -> TextEBM:
    """The text EBM of ``spec["model"]`` (embed_dim, hidden, proj) over ``data``'s vocabulary, its base the
    add-one unigram of the train split. Weights seeded by the experiment (the same for every run of a config)."""
    train = _tokens(data, "train", device)
    torch.manual_seed(seed_from(EXPERIMENT, "init") % 2**31)
    m = spec["model"]
    net = BiLSTMEnergy(len(data.vocabulary), embed_dim=m["embed_dim"], hidden=m["hidden"], proj=m["proj"])
    return TextEBM(net, unigram_log_probs(train, len(data.vocabulary), UNIGRAM_ALPHA)).to(device)


def _onehot(vocab_size: int):
    def transform(batch: torch.Tensor, _generator) -> torch.Tensor:
        return F.one_hot(batch.long(), vocab_size).to(torch.get_default_dtype())
    return transform


def samples_path(out: str | Path) -> Path:
    """Where :func:`train_ebm_stage` writes the decoded buffer sentences: ``<out>.samples.txt``."""
    return Path(str(out) + ".samples.txt")


def train_ebm_stage(config: dict, data_path: str, out: str, *,
                    progress: Callable[[str], None] | None = print) -> dict:
    """Train the text EBM by PCD with categorical GWG (GWG App. J); write the checkpoint atomically to ``out``
    and ``text_ebm.train.num_samples`` decoded buffer sentences to :func:`samples_path`.

    Returns {"iterations", "seconds", "acceptance_rate"} (the last iteration's mean acceptance rate).

    Raises:
        InputError: no ``text_ebm`` section, or a data file without a train split.
    """
    check_output_file(samples_path(out), "--out (its .samples.txt)")  # written last: checked before the work
    spec, device = _spec(config), config["device"]
    data = load_data(spec, data_path)
    V, L = len(data.vocabulary), data.max_length
    model = build_ebm(spec, data, device)
    train = _tokens(data, "train", device)
    t = spec["train"]
    base = unigram_base(train, V, L, UNIGRAM_ALPHA)
    gen = make_generator(seed_from(EXPERIMENT, "train"), device)
    trainer = EBMTrainer(model, make_sampler("GWG", state="categorical"), train, base, num_steps=t["num_steps"],
                         batch_size=t["batch_size"], buffer_size=t["buffer_size"], lr=float(t["lr"]),
                         warmup=t["warmup"], ema_decay=float(t["ema_decay"]), generator=gen,
                         data_transform=_onehot(V), energy_l2=float(t["energy_l2"]),
                         tag={"experiment": EXPERIMENT, "model": spec["model"], "train": t, "vocab": V, "length": L})
    if progress:
        progress(f"[text_ebm] PCD with categorical GWG: V = {V} words, L = {L} tokens, {train.shape[0]} sentences, "
                 f"{t['iterations']} iterations x {t['num_steps']} steps")
    trainer.train(t["iterations"], progress=progress, log_every=t["log_every"])
    trainer.save(out)
    with atomic_path(samples_path(out)) as tmp:
        tokens = trainer.buffer[:t["num_samples"]].argmax(-1).cpu().numpy()
        Path(tmp).write_text("\n".join(decode(tokens, data.vocabulary)) + "\n")
    return {"iterations": trainer.iteration, "seconds": trainer.seconds,
            "acceptance_rate": trainer.history[-1]["acceptance_rate"]}


def read_ebm(path: str | Path, spec: dict, data: TextData, device: str = "cpu") -> tuple[TextEBM, dict]:
    """The EMA weights of a :func:`train_ebm_stage` checkpoint, in a fresh :class:`TextEBM`.

    Raises:
        InputError: an unreadable file, or one whose weights do not fit ``spec`` and ``data``.
    """
    maker = "`gradmc run train_text_ebm`"
    state = load_checkpoint(path, "--model", CHECKPOINT_FORMAT, maker)
    settings = state.get("settings")
    tag = settings.get("tag") if isinstance(settings, dict) else None
    try:  # EBMTrainer stores its caller's tag as repr(dict)
        tag = ast.literal_eval(tag) if isinstance(tag, str) else tag
    except (ValueError, SyntaxError):
        tag = None
    if not isinstance(tag, dict) or tag.get("experiment") != EXPERIMENT:
        got = tag.get("experiment") if isinstance(tag, dict) else None
        raise InputError(f"--model {path} is an EBM checkpoint of experiment {got!r}, not the text EBM's "
                         f"(expected one from {maker})")
    want = {"model": dict(spec["model"]), "vocab": len(data.vocabulary), "length": data.max_length}
    if diff := [f"{k} {tag.get(k)!r} (now {want[k]!r})" for k in want if tag.get(k) != want[k]]:
        raise InputError(f"--model {path} was trained with other sizes: {', '.join(diff)}; retrain it with this "
                         "config and data")
    model = build_ebm(spec, data, device)
    ema = state["ema"] if isinstance(state.get("ema"), dict) else {}
    load_weights(model, {k.removeprefix("module."): v for k, v in ema.items() if k.startswith("module.")}, path,
                 "--model", f"text_ebm.model {want['model']}")
    return model, state


def _mean_se(values: torch.Tensor) -> tuple[float, float]:
    v = values.double()
    return float(v.mean()), float(v.std() / math.sqrt(v.numel())) if v.numel() > 1 else 0.0


def ebm_log_z(model: TextEBM, base, num_intermediate: int, num_chains: int, seed: int, device: str = "cpu"):
    """log Z of the text EBM by AIS (categorical GWG transitions, linear schedule, the unigram ``base``):
    an :class:`~gradmc.evaluation.ais.AISResult`."""
    model.requires_grad_(False)
    try:
        return ais_log_partition(model, base, make_sampler("GWG", state="categorical"), num_chains=num_chains,
                                 betas=linear_schedule(num_intermediate), generator=make_generator(seed, device),
                                 device=device)
    finally:
        model.requires_grad_(True)


def evaluate_stage(config: dict, data_path: str, ebm_path: str, lm_path: str, *,
                   progress: Callable[[str], None] | None = print) -> pd.DataFrame:
    """Test log-likelihoods of the four models (module docstring) as tidy rows (target ``ptb``, sampler = the
    model's name in :data:`MODELS`, step = AIS levels for the EBM's rows, else 0).

    Metrics: ``test_log_likelihood`` (nats per sentence), ``test_log_likelihood_se``,
    ``test_log_likelihood_per_token`` (nats per token, / L), for the EBM also ``log_z``, ``log_z_se``,
    ``ais_weights_ess``, ``train_iterations``, ``train_seconds`` and ``convergence_log_likelihood`` /
    ``convergence_log_z_se`` at each ``ais.convergence`` level count; ``test_sentences`` (on the uniform model's rows):
    the number of test sentences every mean is over.

    Raises:
        InputError: unreadable checkpoints or data (named).
    """
    spec, device = _spec(config), config["device"]
    data = load_data(spec, data_path)
    V, L = len(data.vocabulary), data.max_length
    train, test = _tokens(data, "train", device), _tokens(data, "test", device)
    start = time.perf_counter()
    rows = []

    def add(model: str, metric: str, value: float, step: int = 0) -> None:
        rows.append((model, 0, 0, int(step), metric, float(value), 0, 0, time.perf_counter() - start))

    def add_ll(model: str, per_sentence: torch.Tensor, extra_se: float = 0.0, step: int = 0) -> float:
        mean, se = _mean_se(per_sentence)
        se = math.hypot(se, extra_se)
        add(model, "test_log_likelihood", mean, step)
        add(model, "test_log_likelihood_se", se, step)
        add(model, "test_log_likelihood_per_token", mean / L, step)
        return mean

    ebm, state = read_ebm(ebm_path, spec, data, device)
    ais = spec["ais"]
    base = unigram_base(train, V, L, UNIGRAM_ALPHA)
    result = ebm_log_z(ebm, base, ais["num_intermediate"], ais["num_chains"], seed_from(EXPERIMENT, "ais"), device)
    with torch.no_grad():
        f_test = torch.cat([ebm(F.one_hot(test[i:i + 256], V).float()) for i in range(0, test.shape[0], 256)])
    k = ais["num_intermediate"]
    ll = add_ll("EBM (GWG)", f_test.double() - result.log_z, result.log_z_se, k)
    for metric, value in (("log_z", result.log_z), ("log_z_se", result.log_z_se),
                          ("ais_weights_ess", result.weights_ess), ("train_iterations", state["iteration"]),
                          ("train_seconds", state["seconds"])):
        add("EBM (GWG)", metric, value, k)
    for levels in ais["convergence"]:
        r = result if int(levels) == int(k) else ebm_log_z(ebm, base, int(levels), ais["num_chains"],
                                                            seed_from(EXPERIMENT, "convergence", levels), device)
        add("EBM (GWG)", "convergence_log_likelihood", float(f_test.double().mean()) - r.log_z, levels)
        add("EBM (GWG)", "convergence_log_z_se", r.log_z_se, levels)
    lm = read_lm(lm_path, spec, V, device)
    with torch.no_grad():
        add_ll("LSTM LM", torch.cat([lm.log_prob(test[i:i + 256]) for i in range(0, test.shape[0], 256)]))
    add_ll("unigram", unigram_log_likelihood(test, unigram_log_probs(train, V, UNIGRAM_ALPHA)))
    add_ll("uniform", uniform_log_likelihood(test, V))
    add("uniform", "test_sentences", test.shape[0])  # the replicates of every model's mean (the claims' n)
    if progress:
        progress(f"[text_ebm] test log-likelihood per sentence: EBM (GWG) {ll:.2f} nats (AIS se {result.log_z_se:.2f})")
    return tidy_frame(rows, EXPERIMENT, "ptb")


def sample_lines(out: str | Path) -> list[str]:
    """The decoded buffer sentences written by :func:`train_ebm_stage` (for the report)."""
    return Path(samples_path(out)).read_text().splitlines()

