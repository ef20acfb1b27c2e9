"""GWG paper Table 2 / Fig. 8 / Fig. 14 (EXPERIMENTS.md A7): ResNet EBMs trained by PCD, scored by AIS.

Stages (each a pipeline job):
1. ``train_stage``: one (data set, sampler) training run -> checkpoint ``.pt`` and, beside it, the first
   replay-buffer rows for Fig. 8 (:func:`gradmc.training.ebm_samples.samples_path`: ``model.samples.npz``).
   The sampler is GWG or DMALA (binary or categorical), Gibbs-1 (binary only: categorical Gibbs needs 256
   evaluations per pixel and is reported as infeasible, as in the paper) or ACS (binary only, its cycle over
   training iterations: :class:`gradmc.samplers.discrete.acs_pcd.ACSOverIterations`; :func:`feasible`,
   :mod:`gradmc.specs.ebm_samplers`). With ``equal_time`` every sampler
   other than GWG (Gibbs-1, DMALA, ACS) gets the training time of the GWG run of the same data set (read from its
   checkpoint): the paper's equal wall-clock comparison. Training resumes from ``<out>.partial`` if a previous
   run was interrupted. Each sampler runs ``ebm.train.steps_by_sampler[<sampler>]`` steps per iteration when the
   config names it there, else ``ebm.train.num_steps`` (:func:`gradmc.specs.ebm_samplers.sampler_steps`):
   the paper's Gibbs models needed many more steps than GWG's 40 not to diverge (Sec. 5.5).
2. ``ais_stage``: AIS (GWG transitions, linear schedule, data-fitted base) on the best EMA weights ->
   test log-likelihood rows (nats; and bits per dimension for 256-level data) with their standard error
   (AIS chains and test examples) and the exact log-likelihood of the data-fitted base on the same test
   images, the AIS convergence rows of Fig. 14 (log Z_hat vs number of intermediate distributions), and
   the learning curve of the training run (:func:`learning_curve_rows`: validation log-likelihood vs
   training seconds).

Model: ``ebm.model.base: data`` (the default) makes f(x) = net(x) + log p_0(x) with the data-fitted base
(:func:`build_model`, the GWG authors' code), ``none`` f(x) = net(x). Test / validation images are a
seeded random subset (:func:`subset`) when fewer than all are scored: the static MNIST test file is
ordered, so its first rows are not a fair sample.

Data: prepared ``.npz`` files of :func:`gradmc.data.prepare_images.prepare_image_dataset`. Binary data
are {0,1}; grey training images of dynamic MNIST / Omniglot are re-binarised each batch with the run's
generator; 256-level data are kept as level indices and one-hot encoded per batch.
"""

from __future__ import annotations

import functools
import math
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd
import torch

from gradmc.config import for_dataset
from gradmc.data.prepare_images import load_prepared_images
from gradmc.errors import InputError
from gradmc.evaluation.ais import BernoulliBase, CategoricalBase, ais_log_partition, linear_schedule, log_z_lower_bound
from gradmc.evaluation.mode_search import search_modes
from gradmc.experiments.runner import tidy_frame
from gradmc.models import ResNetEBM
from gradmc.samplers.discrete.acs_pcd import ACSOverIterations
from gradmc.samplers.discrete.registry import make_sampler
from gradmc.seeding import make_generator, seed_from
from gradmc.specs.ebm_samplers import CATEGORICAL_SAMPLERS, SAMPLERS, feasible, sampler_steps
from gradmc.training.ebm import CHECKPOINT_FORMAT, EBMTrainer
from gradmc.training.ebm_samples import samples_path, write_samples

__all__ = ["EXPERIMENT", "META", "SAMPLERS", "CATEGORICAL_SAMPLERS", "feasible", "BASES", "Data",
           "load_data", "build_model", "subset", "train_stage", "ais_stage", "learning_curve_rows"]

EXPERIMENT = "ebm"
META = {"stages": {
    "train_ebm": ["ebm.model", "ebm.train", "ebm.ais.num_chains", "ebm.ais.validation_intermediate",
                  "ebm.ais.validation_examples", "ebm.ais.overrides"],
    # ebm.train: the model file already depends on it; here it puts the training settings in the metrics'
    # provenance, so Table 2 lists the run's deviations from the paper's (experiments.ebm.figure.deviations)
    "ais_ebm": ["ebm.model", "ebm.train", "ebm.ais.num_intermediate", "ebm.ais.num_chains", "ebm.ais.test_examples",
                "ebm.ais.convergence", "ebm.ais.bound_search_steps", "ebm.ais.bound_search_chains",
                "ebm.ais.bound_search_temperature", "ebm.ais.overrides"],
}}
# SAMPLERS (GWG, Gibbs-1, DMALA, ACS), CATEGORICAL_SAMPLERS and feasible(): ebm_samplers
_LOG2 = math.log(2.0)


class Data:
    """Tensors of one prepared data set: ``train`` / ``valid`` / ``test`` (N, D) float {0,1} or int64 levels."""

    def __init__(self, path: str | Path, device: str = "cpu"):
        splits, manifest = load_prepared_images(path)
        self.name, self.levels = manifest["dataset"], int(manifest["levels"])
        self.image_shape = tuple(int(s) for s in manifest["image_shape"])
        self.dynamic = manifest.get("binarization") == "dynamic"
        flat = {s: torch.from_numpy(x.reshape(x.shape[0], -1).astype(np.int64)).to(device) for s, x in splits.items()}
        if self.levels == 2:
            self.splits = {s: (x.float() if not (self.dynamic and s == "train") else x) for s, x in flat.items()}
        else:
            self.splits = flat

    @property
    def dim(self) -> int:
        return self.image_shape[0] * self.image_shape[1]

    def model_input(self, x: torch.Tensor, generator: torch.Generator | None = None) -> torch.Tensor:
        """Stored rows -> what the model reads: one-hot (N, D, K) floats for 256 levels; for grey dynamic
        training images, a fresh Bernoulli(grey / 255) binarisation with ``generator``."""
        if self.levels > 2:
            return torch.nn.functional.one_hot(x.long(), self.levels).float()
        if x.dtype == torch.int64:  # grey dynamic training rows
            return torch.bernoulli(x.float() / 255.0, generator=generator)
        return x

    @functools.cached_property
    def base(self):
        """Data-fitted AIS / buffer base: Bernoulli for binary data, per-pixel categorical otherwise (fitted
        once per data set and reused by training, every validation AIS and every convergence run)."""
        train = self.splits["train"]
        if self.levels > 2:
            return CategoricalBase.fit_indices(train, self.levels)
        probs = train.float() / 255.0 if train.dtype == torch.int64 else train
        return BernoulliBase.fit((probs > 0.5).float() if train.dtype == torch.int64 else probs)


def load_data(path: str | Path, device: str = "cpu") -> Data:
    """Read a prepared image data set (see :class:`Data`)."""
    return Data(path, device)


BASES = ("data", "none")


def build_model(spec: dict, data: Data) -> ResNetEBM:
    """ResNet EBM of ``spec`` (channels, num_blocks, num_strided, embed_dim, base) for the data's shape/levels.

    ``spec["base"]`` (schema default ``"data"``): ``"data"`` adds the data-fitted base log-probability of
    :attr:`Data.base` to the network, f(x) = net(x) + log p_0(x) (the GWG authors' model; the same base AIS
    starts from, so AIS anneals from p_0 to p_0 * exp(net)); ``"none"``: f(x) = net(x).

    Raises:
        InputError: an unknown ``base``.
    """
    kind = spec["base"]  # schema default: data
    if kind not in BASES:
        raise InputError(f"ebm.model.base must be one of {', '.join(BASES)}, got {kind!r}")
    base = None
    if kind == "data":
        base = data.base.logits if data.levels == 2 else data.base.log_probs
    return ResNetEBM(data.image_shape, None if data.levels == 2 else data.levels, channels=spec["channels"],
                     num_blocks=spec["num_blocks"], num_strided=spec["num_strided"],
                     embed_dim=spec["embed_dim"], base=base)


def _sampler(name: str, levels: int):
    """The PCD kernel ``name`` for ``levels``-level data (:func:`feasible`); InputError if it cannot train.
    ACS is the registry's ACS with its cycle over training iterations (:class:`ACSOverIterations`)."""
    if not feasible(name, levels):
        why = ("ACS has no categorical form here" if name == "ACS" else
               f"{levels} evaluations per pixel, as the paper reports")
        raise InputError(f"ebm: {name} on {levels}-level data is infeasible ({why}); categorical models train "
                         f"with {', '.join(CATEGORICAL_SAMPLERS)}")
    if name == "ACS":
        return ACSOverIterations(make_sampler("ACS"))
    return make_sampler(name, state="categorical") if levels > 2 else make_sampler(name)


def read_checkpoint(path: str | Path) -> dict:
    """A checkpoint written by :class:`EBMTrainer` (``torch.load``, weights only).

    Raises:
        ValueError: unreadable, truncated or not an EBM training checkpoint (names the file).
    """
    try:
        state = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as err:  # noqa: BLE001 - torch raises many types for corrupt files
        raise InputError(f"cannot read EBM checkpoint {path}: {type(err).__name__}: {err}") from err
    if not isinstance(state, dict) or state.get("format") != CHECKPOINT_FORMAT:
        raise InputError(f"{path} is not an EBM training checkpoint (format {CHECKPOINT_FORMAT!r}); "
                         "give a model.pt written by `gradmc run train_ebm`")
    return state


def train_stage(config: dict, dataset: str, sampler: str, data_path: str, out: str, *,
                budget_from: str | None = None, progress: Callable[[str], None] | None = print) -> dict:
    """Train one (data set, sampler) model; write the final checkpoint atomically to ``out`` and the Fig. 8
    replay-buffer samples to ``samples_path(out)``.

    Returns a summary dict (iterations, seconds, best validation score).

    Raises:
        InputError: a sampler that cannot train on this data (:func:`feasible`: unknown, Gibbs-1 or ACS on
            categorical data), a data file of another data set, or an unreadable ``budget_from`` checkpoint.
    """
    spec, device = config["ebm"], config["device"]
    data = load_data(data_path, device)
    if data.name != dataset:
        raise InputError(f"{data_path} holds {data.name!r}, not {dataset!r}")
    sampler_obj = _sampler(sampler, data.levels)
    torch.manual_seed(seed_from(EXPERIMENT, "init", dataset) % 2**31)  # same initial weights for every sampler
    model = build_model(spec["model"], data).to(device)
    t = for_dataset(spec["train"], dataset)
    gen = make_generator(seed_from(EXPERIMENT, "train", dataset, sampler), device)
    train = data.splits["train"]
    buffer_size = int(t["buffer_sizes"][dataset] if dataset in t["buffer_sizes"] else t["buffer_size"])
    # the sampler's own steps per iteration (ebm.train.steps_by_sampler, else num_steps); the tag holds this
    # run's resolved settings only, so another sampler's count leaves this run's resume checkpoint valid
    t = {**{k: v for k, v in t.items() if k != "steps_by_sampler"}, "num_steps": sampler_steps(t, sampler)}
    trainer = EBMTrainer(model, sampler_obj, train, data.base, num_steps=t["num_steps"],
                         batch_size=t["batch_size"], buffer_size=buffer_size, lr=float(t["lr"]),
                         warmup=t["warmup"], ema_decay=float(t["ema_decay"]), generator=gen,
                         data_transform=data.model_input, energy_l2=float(t["energy_l2"]),
                         lr_decay=t.get("lr_decay", "none"),  # schema default; hand-built configs may omit it
                         tag={"dataset": dataset, "sampler": sampler, "model": spec["model"], "train": t,
                              "budget_from": budget_from})
    max_seconds = None
    if budget_from is not None:
        budget = read_checkpoint(budget_from)
        max_seconds = float(budget["seconds"])
        if progress:
            progress(f"[ebm] equal wall-clock budget from {budget_from}: {max_seconds:.1f}s of training")
        _match_threads(budget.get("threads"), budget_from, progress)
    partial = Path(str(out) + ".partial")
    if partial.exists():
        try:
            trainer.load(partial)
        except ValueError as err:
            raise InputError(f"{err}; delete {partial} to restart this training from scratch") from err
        if progress:
            progress(f"[ebm] resuming {partial} at iteration {trainer.iteration}")
    ais = for_dataset(spec["ais"], dataset)
    valid = subset(data.splits["valid"], ais["validation_examples"], seed_from(EXPERIMENT, "valid_rows", dataset))

    def evaluate(model_eval: torch.nn.Module) -> float:
        return validation_log_likelihood(model_eval, data, valid, ais, seed_from(EXPERIMENT, "valid", dataset))

    # equal wall-clock: the time budget decides how many iterations a non-GWG run makes (cap: 100x)
    num_iterations = t["iterations"] if max_seconds is None else 100 * t["iterations"]
    trainer.train(num_iterations, evaluate=evaluate, eval_every=t["eval_every"], checkpoint_path=partial,
                  checkpoint_every=t["checkpoint_every"], progress=progress, log_every=t["log_every"],
                  max_seconds=max_seconds)
    trainer.save(out)
    write_samples(trainer.buffer, samples_path(out))
    partial.unlink(missing_ok=True)
    return {"iterations": trainer.iteration, "seconds": trainer.seconds,
            "best_validation": trainer.best["score"] if trainer.best else float("nan")}


def _match_threads(threads: int | None, budget_from: str, progress: Callable[[str], None] | None) -> None:
    """Run with the intra-op thread count the budget's run trained with, so that equal wall-clock means equal
    compute (a GWG run on 1 thread must not hand its seconds to a Gibbs run on 2). A checkpoint written before
    the count was recorded (no ``threads``) leaves this process's count, and says so."""
    if threads is None:
        if progress:
            progress(f"[ebm] {budget_from} does not record its thread count: training with this process's "
                     f"{torch.get_num_threads()}; the budget is equal compute only if that run used as many")
        return
    if int(threads) != torch.get_num_threads():
        if progress:
            progress(f"[ebm] training on {int(threads)} intra-op thread(s) (this process chose "
                     f"{torch.get_num_threads()}), as the budget's run did: equal wall-clock, equal threads")
        torch.set_num_threads(int(threads))


def subset(x: torch.Tensor, num: int, seed: int) -> torch.Tensor:
    """``num`` rows of ``x`` (N, ...) drawn without replacement by a seeded permutation (all N rows, in order,
    when num >= N). Not the first rows: the static MNIST test file is ordered (its first 1,000 rows score
    -255 nats under the data-fitted base, the whole file -206), so a prefix is a biased sample."""
    n = x.shape[0]
    if num >= n:
        return x
    gen = torch.Generator().manual_seed(int(seed) % 2**63)
    return x[torch.randperm(n, generator=gen)[:int(num)].sort().values.to(x.device)]


def _f_values(model: torch.nn.Module, data: Data, x: torch.Tensor, batch: int = 256) -> torch.Tensor:
    """f(x) of stored rows (N, D), float64 (N,), in batches, without gradients."""
    with torch.no_grad():
        return torch.cat([model(data.model_input(x[i:i + batch])) for i in range(0, x.shape[0], batch)]).double()


def _ais(model, data: Data, num_intermediate: int, chains: int, seed: int, checkpoints=(),
         progress: Callable[[str], None] | None = None) -> object:
    model.requires_grad_(False)
    sampler = make_sampler("GWG", state="categorical") if data.levels > 2 else make_sampler("GWG")
    gen = make_generator(seed, str(data.splits["test"].device))
    return ais_log_partition(model, data.base, sampler, num_chains=chains, betas=linear_schedule(num_intermediate),
                             generator=gen, checkpoints=tuple(checkpoints), progress=progress)


def validation_log_likelihood(model, data: Data, valid: torch.Tensor, ais: dict, seed: int) -> float:
    """Mean validation log-likelihood (nats) with a short AIS run (``ais.validation_intermediate`` levels)."""
    result = _ais(model, data, ais["validation_intermediate"], ais["num_chains"], seed)
    model.requires_grad_(True)
    return float(_f_values(model, data, valid).mean()) - result.log_z


def load_trained(path: str, spec: dict, data: Data) -> tuple[ResNetEBM, dict]:
    """The best EMA weights of a checkpoint (or the final EMA weights if no validation ran)."""
    state = read_checkpoint(path)
    model = build_model(spec["model"], data)
    weights = state["best"]["state"] if state.get("best") else {
        k.removeprefix("module."): v for k, v in state["ema"].items() if k.startswith("module.")}
    model.load_state_dict(weights)
    return model.to(data.splits["test"].device), state


def ais_stage(config: dict, dataset: str, sampler: str, model_path: str, data_path: str,
              progress: Callable[[str], None] | None = print) -> pd.DataFrame:
    """Test log-likelihood by AIS and the Fig. 14 convergence rows for one trained model (tidy rows).

    Rows (``step`` = AIS levels unless said): ``test_log_likelihood`` (nats, mean f(x_test) - log Z_hat),
    ``test_log_likelihood_se`` (sqrt(log_z_se^2 + var f(x_test) / n_test)), ``base_test_log_likelihood``
    (exact, the data-fitted base on the same test images), ``log_z``, ``log_z_se``, ``ais_weights_ess``,
    ``train_iterations``, ``train_seconds``, ``log_z_lower_bound`` and ``test_log_likelihood_upper_bound``
    (:func:`gradmc.evaluation.ais.log_z_lower_bound` over the training images, the replay buffer and the
    states of the mode search ``ais.bound_search_*`` (:func:`gradmc.evaluation.mode_search.search_modes`): a hard
    bound an AIS estimate must not exceed), ``bound_search_seconds``, ``test_bits_per_dim`` (256-level data),
    ``convergence_*`` per
    entry of ``ais.convergence`` (the estimate's own run reused for K = num_intermediate) and the
    :func:`learning_curve_rows` (``step`` = training iteration).

    Raises:
        InputError: the data file holds another data set, or an unreadable checkpoint.
    """
    spec = config["ebm"]
    data = load_data(data_path, config["device"])
    if data.name != dataset:
        raise InputError(f"{data_path} holds {data.name!r}, not {dataset!r}")
    model, state = load_trained(model_path, spec, data)
    ais = for_dataset(spec["ais"], dataset)
    test = subset(data.splits["test"], ais["test_examples"], seed_from(EXPERIMENT, "test_rows", dataset))
    seed = seed_from(EXPERIMENT, "test", dataset, sampler)
    start = time.perf_counter()
    label = f"[ebm] {dataset} {sampler}: "
    tagged = (lambda line: progress(label + line)) if progress else None
    result = _ais(model, data, ais["num_intermediate"], ais["num_chains"], seed, progress=tagged)
    f_test = _f_values(model, data, test)
    mean_f = float(f_test.mean())
    ll = mean_f - result.log_z
    # SE of mean f - log Z_hat: test-example sampling and AIS chains are independent
    se = math.hypot(result.log_z_se, float(f_test.std()) / math.sqrt(f_test.numel()) if f_test.numel() > 1 else 0.0)
    base_ll = float(data.base.log_prob(data.model_input(test).double()).mean())
    known = _known_states(data, state)
    search_start = time.perf_counter()
    found = _searched_states(model, data, known, ais, seed_from(EXPERIMENT, "bound_search", dataset, sampler))
    search_seconds = time.perf_counter() - search_start
    if progress and found.shape[0]:
        progress(f"{label}mode search for the hard bound: {ais['bound_search_steps']} GWG steps at T = "
                 f"{ais['bound_search_temperature']:g} on {ais['bound_search_chains']} chains, {found.shape[0]} states "
                 f"in {search_seconds:.1f}s")
    bound = log_z_lower_bound(model, torch.cat([known, found]), batch=1024 if data.levels == 2 else 64,
                              transform=data.model_input if data.levels > 2 else None)  # 64 one-hot rows: ~37 MB
    k = ais["num_intermediate"]
    rows = [("test_log_likelihood", k, ll), ("test_log_likelihood_se", k, se), ("base_test_log_likelihood", k, base_ll),
            ("log_z", k, result.log_z), ("log_z_se", k, result.log_z_se),
            ("ais_weights_ess", ais["num_intermediate"], result.weights_ess),
            ("train_iterations", ais["num_intermediate"], float(state["iteration"])),
            ("train_seconds", ais["num_intermediate"], float(state["seconds"])),
            ("log_z_lower_bound", k, bound), ("test_log_likelihood_upper_bound", k, mean_f - bound),
            ("bound_search_seconds", k, search_seconds)]
    if data.levels > 2:
        rows.append(("test_bits_per_dim", ais["num_intermediate"], -ll / (data.dim * _LOG2)))
    for k in ais["convergence"]:
        # the run of the final estimate is one of K = num_intermediate levels: reused, not repeated
        r = result if int(k) == int(ais["num_intermediate"]) else _ais(
            model, data, int(k), ais["num_chains"], seed_from(EXPERIMENT, "convergence", dataset, sampler, k),
            progress=tagged)
        rows += [("convergence_log_likelihood", int(k), mean_f - r.log_z), ("convergence_log_z_se", int(k), r.log_z_se)]
        if progress:
            progress(f"[ebm] {dataset} {sampler}: AIS with {k} levels -> log-likelihood {mean_f - r.log_z:.2f}")
    seconds = time.perf_counter() - start
    if progress:
        progress(f"[ebm] {dataset} {sampler}: test log-likelihood {ll:.2f} nats (se {se:.2f}, AIS se "
                 f"{result.log_z_se:.2f}; base {base_ll:.2f}; hard upper bound {mean_f - bound:.2f}"
                 + (": the AIS estimate is above it, so it is wrong)" if ll > mean_f - bound else ")"))
    out = [(sampler, 0, 0, int(step), metric, float(value), 0, 0, seconds) for metric, step, value in rows]
    out += learning_curve_rows(state, sampler)
    return tidy_frame(out, EXPERIMENT, dataset)


def _searched_states(model, data: Data, known: torch.Tensor, ais: dict, seed: int) -> torch.Tensor:
    """States of :func:`gradmc.evaluation.mode_search.search_modes` (``ais.bound_search_*``), started at the
    ``bound_search_chains`` highest-f rows of ``known``, in ``known``'s encoding (binary floats or level
    indices); an empty (0, ...) tensor when ``bound_search_steps`` is 0."""
    steps, chains = int(ais["bound_search_steps"]), int(ais["bound_search_chains"])
    if steps == 0:
        return known[:0]
    f = _f_values(model, data, known)
    start = data.model_input(known[f.topk(min(chains, known.shape[0])).indices])
    sampler = make_sampler("GWG", state="categorical") if data.levels > 2 else make_sampler("GWG")
    model.requires_grad_(False)
    found = search_modes(model, start, sampler, steps, float(ais["bound_search_temperature"]),
                         make_generator(seed, str(start.device)))
    return (found.long() if data.levels > 2 else found.float()).to(known.device)


def _known_states(data: Data, state: dict) -> torch.Tensor:
    """States for :func:`log_z_lower_bound`: the training images (thresholded at half for grey dynamic data;
    any states give a valid bound) and the final replay buffer; binary rows as model inputs, 256-level rows
    as level indices (one-hot encoded a batch at a time by the bound)."""
    train, buffer = data.splits["train"], state["buffer"].to(data.splits["train"].device)
    if data.levels > 2:
        return torch.cat([train.long(), buffer.argmax(-1).long()])
    if train.dtype == torch.int64:
        train = (train > 127).float()
    return torch.cat([train.float(), buffer.float()])


def learning_curve_rows(state: dict, sampler: str) -> list[tuple]:
    """Learning-curve rows (:data:`gradmc.experiments.runner.ROW_COLUMNS` tuples) from a checkpoint's history.

    For every iteration at which training ran its validation AIS (``ebm.train.eval_every``, and the last
    iteration): ``learning_curve_log_likelihood`` (nats; mean f over ``ebm.ais.validation_examples``
    validation images minus a ``validation_intermediate``-level AIS log Z_hat of the EMA weights) and
    ``learning_curve_seconds`` (training wall time so far, sampler + update, evaluation excluded), both with
    ``step`` = iteration and ``wall_time_s`` = that training time: the cost axis for extrapolating to the
    paper's -80 nats. Empty when no validation ran.
    """
    rows = []
    for h in state.get("history", []):
        if "validation" in h:
            it, sec = int(h["iteration"]), float(h["seconds"])
            rows += [(sampler, 0, 0, it, "learning_curve_log_likelihood", float(h["validation"]), 0, 0, sec),
                     (sampler, 0, 0, it, "learning_curve_seconds", sec, 0, 0, sec)]
    return rows
