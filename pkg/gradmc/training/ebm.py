"""PCD training of deep EBMs with a replay buffer (GWG paper Sec. 5.5, Appendix I; EXPERIMENTS.md A7).

Each iteration:
  1. draw ``batch_size`` DISTINCT buffer rows uniformly, without replacement (with the trainer's
     generator; the reference code's ``np.random.choice(buffer_size, batch_size, replace=False)``), and run
     ``num_steps`` sampler steps (GWG: 40 in the paper) on the current model from them; write the results
     back (the buffer is initialised once from the data-fitted base distribution and never re-initialised).
     Distinct rows matter: ``buffer[idx] = samples`` with a repeated index is a data race under intra-op
     threads (torch splits the element-wise copy across threads, so two chains written to one row can
     interleave into a state that is not one-hot, or not binary-consistent with either chain);
  2. loss = mean f(model samples) - mean f(data batch), whose gradient is minus the log-likelihood
     gradient (GWG paper eq. 12); one Adam step, learning rate warmed up linearly over ``warmup``
     iterations (paper: 1e-4, 10,000), then constant (the paper) or, with ``lr_decay="cosine"``, decayed
     on a half cosine to 0 over the run (a deviation: the run's progress is the larger of iterations done
     / requested and training seconds / ``max_seconds``, so a time-budgeted run decays over its budget);
  3. update the exponential moving average of the weights (decay 0.999, ``torch.optim.swa_utils``), the
     model that is evaluated.
Every ``eval_every`` iterations an optional validation callback (AIS on the EMA model) scores the EMA
weights and the best ones are kept. Checkpoints hold everything needed to resume to the identical
result (model, EMA, optimiser, scheduler, buffer, generator state, history, best weights) and are
written atomically.

Non-finite values stop training with :class:`NonFiniteTrainingError` naming the iteration and the
quantity: f on the data batch or on the model samples, the loss, a parameter gradient (all checked before
the optimiser step and before the buffer write-back, so the trainer's state stays that of the last good
iteration), the parameters after the step, and a sampler's own non-finite error (re-raised with the
iteration). :meth:`EBMTrainer.save` refuses to write non-finite weights, so a resume checkpoint is never
overwritten with a poisoned state: the last good one stays on disk.
"""

from __future__ import annotations

import copy
import math
import time
from collections.abc import Callable
from pathlib import Path

import torch
from torch.optim.swa_utils import AveragedModel, get_ema_multi_avg_fn

from gradmc.atomic import atomic_path
from gradmc.errors import InputError
from gradmc.samplers.base import NonFiniteError

__all__ = ["EBMTrainer", "CHECKPOINT_FORMAT", "NonFiniteTrainingError"]

CHECKPOINT_FORMAT = "gradmc.ebm_pcd.v1"
LR_DECAYS = ("none", "cosine")


class NonFiniteTrainingError(ValueError):
    """NaN or inf in PCD iteration ``iteration`` (1-based, as in the progress lines); ``what`` names the
    quantity (e.g. "loss", "f(model samples)", "gradient of the loss"), ``detail`` says where/how many."""

    def __init__(self, iteration: int, what: str, detail: str = ""):
        super().__init__(iteration, what, detail)  # args: picklable
        self.iteration, self.what, self.detail = int(iteration), what, detail

    def __str__(self) -> str:
        return (f"EBM training stopped at iteration {self.iteration}: non-finite {self.what}"
                f"{': ' + self.detail if self.detail else ''}. The model diverged (try a smaller lr, a larger "
                "energy_l2 or more sampler steps); checkpoints already written hold the last good state")


def _nonfinite_tensors(named) -> list[str]:
    """Names of the floating tensors among ``(name, tensor)`` pairs that hold a NaN or inf (one host sync)."""
    named = [(n, t) for n, t in named if t is not None and t.is_floating_point()]
    if not named:
        return []
    flags = torch.stack([torch.isfinite(t).all() for _, t in named])
    if bool(flags.all()):
        return []
    return [n for (n, _), ok in zip(named, flags.tolist(), strict=True) if not ok]


def _check_values(iteration: int, what: str, values: torch.Tensor) -> None:
    """Raise NonFiniteTrainingError unless every entry of ``values`` (e.g. (C,) energies) is finite."""
    finite = torch.isfinite(values)
    if bool(finite.all()):
        return
    bad = values[~finite]
    raise NonFiniteTrainingError(iteration, what, f"{bad.numel()} of {values.numel()} values (first: "
                                                  f"{float(bad.flatten()[0])})")


class EBMTrainer:
    """Replay-buffer PCD for an energy network f (module docstring).

    Args:
        model: nn.Module, x -> f(x) (C,), differentiable in x.
        sampler: discrete kernel (``init``/``step``), binary or categorical to match the data; or a schedule
            over iterations with ``prepare(iteration, x, model, generator) -> (kernel, x0)`` (0-based
            iteration; e.g. :class:`gradmc.samplers.discrete.acs_pcd.ACSOverIterations`), whose returned kernel
            runs that iteration from x0, and whose ``state_dict``/``load_state_dict`` go into checkpoints.
        data: (N, D) binary or (N, D, K) one-hot training data on the model's device.
        base: the data-fitted base (``sample(n, generator)``) that initialises the buffer.
        num_steps, batch_size, buffer_size, lr, warmup, ema_decay: as in the module docstring.
        tag: optional JSON-like settings of the caller (model sizes, iterations, ...) stored in checkpoints and
            compared on resume like the trainer's own settings, so a checkpoint of another run is refused.
        energy_l2: alpha >= 0 of an optional regulariser alpha * mean(r(data)^2 + r(samples)^2) added to the
            loss (Du & Mordatch 2019); 0 = none (the paper's setting). r = f, or for a model with a fixed
            base term (a ``base_log_prob(x)`` method, f = net + log p_0) the learned correction
            r = f - log p_0 = net (penalising the base's -200 nats would push net to cancel it). Small
            models trained for few iterations with a large learning rate otherwise let f drift.
        generator: torch.Generator on the data's device (buffer draws, batches, sampler).
        data_transform: optional ``(batch, generator) -> model input`` applied to each data batch, e.g.
            dynamic binarisation of grey MNIST, or one-hot encoding of stored level indices (so 256-level
            data need not be held one-hot in memory).

    Raises:
        ValueError: non-positive sizes, buffer_size < batch_size, or data that is not 2-D/3-D.
    """

    def __init__(self, model: torch.nn.Module, sampler, data: torch.Tensor, base, *, num_steps: int,
                 batch_size: int, buffer_size: int, lr: float, warmup: int, ema_decay: float,
                 generator: torch.Generator, data_transform: Callable | None = None, energy_l2: float = 0.0,
                 tag: dict | None = None, lr_decay: str = "none"):
        if lr_decay not in LR_DECAYS:
            raise ValueError(f"lr_decay must be one of {LR_DECAYS}, got {lr_decay!r}")
        if min(num_steps, batch_size, buffer_size) < 1 or lr <= 0 or warmup < 0 or not 0 <= ema_decay < 1:
            raise ValueError(f"bad PCD settings: num_steps {num_steps}, batch_size {batch_size}, buffer_size "
                             f"{buffer_size}, lr {lr}, warmup {warmup}, ema_decay {ema_decay}")
        if buffer_size < batch_size:
            raise ValueError(f"buffer_size ({buffer_size}) must be >= batch_size ({batch_size})")
        self.data_transform = data_transform
        self.tag = repr(tag) if tag is not None else None
        if energy_l2 < 0:
            raise ValueError(f"energy_l2 must be >= 0, got {energy_l2}")
        self.energy_l2 = float(energy_l2)
        if data.dim() not in (2, 3) or data.shape[0] < 1:
            raise ValueError(f"data must be (N, D) binary or (N, D, K) one-hot, got shape {tuple(data.shape)}")
        self.model, self.sampler, self.data, self.generator = model, sampler, data, generator
        self.num_steps, self.batch_size, self.buffer_size = int(num_steps), int(batch_size), int(buffer_size)
        self.lr, self.warmup, self.ema_decay = float(lr), int(warmup), float(ema_decay)
        self.optimizer = torch.optim.Adam(model.parameters(), lr=lr)
        self.lr_decay, self._horizon = lr_decay, None  # horizon: (iterations, max_seconds) of train()
        self.scheduler = torch.optim.lr_scheduler.LambdaLR(self.optimizer, self._lr_factor)
        self.ema = AveragedModel(model, multi_avg_fn=get_ema_multi_avg_fn(ema_decay), use_buffers=True)
        # the buffer holds model inputs: float, even when data are stored as integers (grey levels, indices)
        self.input_dtype = data.dtype if data.is_floating_point() else torch.get_default_dtype()
        self.buffer = base.sample(buffer_size, generator).to(device=data.device, dtype=self.input_dtype)
        self.iteration, self.history, self.seconds = 0, [], 0.0
        self.best: dict | None = None  # {"iteration", "score", "state"} of the best EMA weights so far

    def _lr_factor(self, it: int) -> float:
        """Learning-rate multiplier after ``it`` scheduler steps: linear warm-up, then 1 or the cosine decay."""
        warm = min(1.0, (it + 1) / self.warmup) if self.warmup else 1.0
        if self.lr_decay == "none" or self._horizon is None:
            return warm
        iterations, max_seconds = self._horizon
        done = it / iterations if iterations else 0.0
        if max_seconds:
            done = max(done, self.seconds / max_seconds)
        return warm * 0.5 * (1.0 + math.cos(math.pi * min(1.0, done)))

    def _settings(self) -> dict:
        return {"num_steps": self.num_steps, "batch_size": self.batch_size, "buffer_size": self.buffer_size,
                "lr": self.lr, "warmup": self.warmup, "ema_decay": self.ema_decay, "energy_l2": self.energy_l2,
                "lr_decay": self.lr_decay, "sampler": repr(self.sampler), "tag": self.tag,
                "data_shape": list(self.data.shape)}

    def _correction(self, x: torch.Tensor, f: torch.Tensor) -> torch.Tensor:
        """What ``energy_l2`` penalises: f(x) - log p_0(x) for a model with a fixed base term
        (``model.base_log_prob``, e.g. :class:`gradmc.models.ResNetEBM` with a base), else f(x)."""
        base_log_prob = getattr(self.model, "base_log_prob", None)
        return f if base_log_prob is None else f - base_log_prob(x).detach()

    def step(self) -> dict:
        """One PCD iteration; returns {"iteration", "loss", "f_data", "f_model", "acceptance_rate"}.

        Raises:
            NonFiniteTrainingError: NaN/inf energies, loss, gradients or updated parameters (module
                docstring); nothing but the generator has changed unless the parameters are the culprit (a
                scheduled sampler's tuned state is restored too).
        """
        saved = self.sampler.state_dict() if hasattr(self.sampler, "state_dict") else None
        try:
            return self._step()
        except ValueError:
            if saved is not None:
                self.sampler.load_state_dict(saved)
            raise

    def _step(self) -> dict:
        start = time.perf_counter()
        it = self.iteration + 1
        # distinct rows: a repeated index would make the write-back below a data race (module docstring)
        idx = torch.randperm(self.buffer_size, generator=self.generator,
                             device=self.buffer.device)[:self.batch_size]
        rows = torch.randint(0, self.data.shape[0], (self.batch_size,), generator=self.generator,
                             device=self.data.device)
        self.model.eval()
        self.model.requires_grad_(False)  # the sampler needs grad_x f only: no parameter gradients
        try:
            sampler, x0 = self.sampler, self.buffer[idx]
            prepare = getattr(sampler, "prepare", None)  # a schedule over iterations (ACSOverIterations)
            if prepare is not None:
                sampler, x0 = prepare(self.iteration, x0, self.model, self.generator)
            state = sampler.init(x0, self.model)
            acc = torch.zeros((), device=self.buffer.device)  # summed on the device: no sync per sampler step
            for _ in range(self.num_steps):
                state, info = sampler.step(state, self.model, self.generator)
                acc = acc + info.acceptance_prob.float().mean()
        except NonFiniteError as err:  # the sampler's own check (samplers.base): say which iteration it was
            raise NonFiniteTrainingError(it, "value in the sampler", str(err)) from err
        except ValueError as err:
            raise ValueError(f"EBM training iteration {it}: {err}") from err
        finally:
            self.model.requires_grad_(True)
        samples = state.x.detach()
        self.model.train()
        batch = self.data[rows]
        if self.data_transform is not None:
            batch = self.data_transform(batch, self.generator)
        f_data_all, f_model_all = self.model(batch), self.model(samples)
        _check_values(it, "f(data batch)", f_data_all.detach())
        _check_values(it, "f(model samples)", f_model_all.detach())
        f_data, f_model = f_data_all.mean(), f_model_all.mean()
        loss = f_model - f_data
        if self.energy_l2:
            r_data, r_model = self._correction(batch, f_data_all), self._correction(samples, f_model_all)
            loss = loss + self.energy_l2 * (r_data.pow(2).mean() + r_model.pow(2).mean())
        _check_values(it, "loss", loss.detach().reshape(1))
        self.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        bad = _nonfinite_tensors((n, p.grad) for n, p in self.model.named_parameters())
        if bad:
            raise NonFiniteTrainingError(it, "gradient of the loss", f"in {len(bad)} parameter tensors "
                                         f"({', '.join(bad[:4])}{', ...' if len(bad) > 4 else ''})")
        self.optimizer.step()
        bad = _nonfinite_tensors(self.model.named_parameters())
        if bad:
            raise NonFiniteTrainingError(it, "parameters after the optimiser step", f"in {len(bad)} tensors "
                                         f"({', '.join(bad[:4])}{', ...' if len(bad) > 4 else ''})")
        self.buffer[idx] = samples
        self.scheduler.step()
        self.ema.update_parameters(self.model)
        self.iteration += 1
        self.seconds += time.perf_counter() - start
        row = {"iteration": self.iteration, "loss": float(loss.detach()), "f_data": float(f_data.detach()),
               "f_model": float(f_model.detach()), "acceptance_rate": float(acc) / self.num_steps,
               "seconds": self.seconds}
        self.history.append(row)
        return row

    def ema_model(self) -> torch.nn.Module:
        """The EMA-averaged network (the model that is evaluated)."""
        return self.ema.module

    def train(self, num_iterations: int, *, evaluate: Callable[[torch.nn.Module], float] | None = None,
              eval_every: int = 0, checkpoint_path: str | Path | None = None, checkpoint_every: int = 0,
              progress: Callable[[str], None] | None = None, log_every: int = 50,
              max_seconds: float | None = None) -> list[dict]:
        """Run until ``num_iterations`` in total (a resumed trainer continues where it stopped), or until the
        training time (``self.seconds``, sampler + update, evaluation excluded) reaches ``max_seconds``: the
        equal wall-clock comparison of the paper (Gibbs gets GWG's training time).

        ``evaluate(ema_model) -> score`` (higher is better, e.g. validation log-likelihood by AIS) runs every
        ``eval_every`` iterations and at the end; the best EMA weights are kept in ``self.best``.
        """
        self._horizon = (int(num_iterations), max_seconds)
        while self.iteration < num_iterations:
            row = self.step()
            it = self.iteration
            out_of_time = max_seconds is not None and self.seconds >= max_seconds
            if out_of_time:
                num_iterations = it  # final logging, evaluation and checkpoint happen now
            if progress is not None and (it % max(log_every, 1) == 0 or it == num_iterations):
                progress(f"[ebm] iteration {it}/{num_iterations}: loss {row['loss']:.3f}, "
                         f"acceptance {row['acceptance_rate']:.2f}, {row['seconds']:.0f}s")
            if evaluate is not None and ((eval_every and it % eval_every == 0) or it == num_iterations):
                score = float(evaluate(self.ema_model()))
                row["validation"] = score
                if self.best is None or score > self.best["score"]:
                    self.best = {"iteration": it, "score": score,
                                 "state": copy.deepcopy(self.ema_model().state_dict())}
                if progress is not None:
                    progress(f"[ebm] iteration {it}: validation {score:.3f} (best {self.best['score']:.3f} at "
                             f"{self.best['iteration']})")
            if checkpoint_path is not None and checkpoint_every and it % checkpoint_every == 0:
                self.save(checkpoint_path)
        return self.history

    def state_dict(self) -> dict:
        """Everything a resumed run needs."""
        return {"format": CHECKPOINT_FORMAT, "settings": self._settings(), "iteration": self.iteration,
                "model": self.model.state_dict(), "ema": self.ema.state_dict(),
                "optimizer": self.optimizer.state_dict(), "scheduler": self.scheduler.state_dict(),
                "buffer": self.buffer.cpu(), "generator": self.generator.get_state(), "history": self.history,
                "seconds": self.seconds, "best": self.best, "threads": torch.get_num_threads(),
                "sampler_state": self.sampler.state_dict() if hasattr(self.sampler, "state_dict") else None}

    def load_state_dict(self, state: dict) -> None:
        """Restore :meth:`state_dict` output.

        Raises:
            ValueError: not an EBM checkpoint, or made with other settings (the message lists them).
        """
        if not isinstance(state, dict) or state.get("format") != CHECKPOINT_FORMAT:
            got = state.get("format") if isinstance(state, dict) else type(state).__name__
            raise InputError(f"not an EBM PCD checkpoint of format {CHECKPOINT_FORMAT!r}: got {got!r}")
        mine = self._settings()
        diff = {k: (v, mine.get(k)) for k, v in state["settings"].items() if mine.get(k) != v}
        if diff:
            raise InputError("checkpoint was made with other settings (checkpoint vs this trainer): "
                             + ", ".join(f"{k}={a!r} vs {b!r}" for k, (a, b) in diff.items()))
        self.model.load_state_dict(state["model"])
        self.ema.load_state_dict(state["ema"])
        self.optimizer.load_state_dict(state["optimizer"])
        self.scheduler.load_state_dict(state["scheduler"])
        self.buffer = state["buffer"].to(device=self.data.device, dtype=self.input_dtype)
        self.generator.set_state(state["generator"])
        self.iteration, self.history = int(state["iteration"]), list(state["history"])
        self.seconds, self.best = float(state["seconds"]), state["best"]
        if hasattr(self.sampler, "load_state_dict"):
            if state.get("sampler_state") is None:
                raise InputError(f"checkpoint has no state for the sampler {self.sampler!r} (its tuned schedule)")
            self.sampler.load_state_dict(state["sampler_state"])

    def save(self, path: str | Path) -> Path:
        """Write :meth:`state_dict` atomically (a crash never leaves a half-written checkpoint).

        Raises:
            NonFiniteTrainingError: the model or EMA weights hold NaN/inf; ``path`` is left untouched, so
                an earlier (good) checkpoint there survives.
        """
        bad = _nonfinite_tensors([*(("model." + n, t) for n, t in self.model.state_dict().items()),
                                  *(("ema." + n, t) for n, t in self.ema.state_dict().items())])
        if bad:
            raise NonFiniteTrainingError(self.iteration, "weights", f"{', '.join(bad[:4])}"
                                         f"{', ...' if len(bad) > 4 else ''}; not writing {path} (an "
                                         "earlier checkpoint there is kept)")
        path = Path(path)
        with atomic_path(path) as tmp:
            torch.save(self.state_dict(), tmp)
        return path

    def load(self, path: str | Path) -> None:
        """Resume from :meth:`save` output.

        Raises:
            ValueError: unreadable/corrupt file (names the path) or a mismatching checkpoint.
        """
        try:
            state = torch.load(path, map_location="cpu", weights_only=True)
        except Exception as err:  # noqa: BLE001 - torch raises many types for corrupt files
            raise InputError(f"cannot read EBM checkpoint {path}: {err} (delete it to restart training)") from err
        self.load_state_dict(state)
