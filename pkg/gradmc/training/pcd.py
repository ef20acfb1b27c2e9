"""Persistent contrastive divergence (PCD, Tieleman 2008) for any discrete energy model, resumable.

The model is any ``torch.nn.Module`` whose ``forward(x)`` returns log p~_theta(x), shape (C,), for
binary states x (C, D) in {0, 1} or one-hot categorical states (C, D, K). GWG paper Eq. 12:

    grad_theta E_data[log p_theta(x)] = E_data[grad_theta f(x)] - E_{p_theta}[grad_theta f(x)].

PCD estimates the model expectation with a persistent buffer of MCMC chains. Each iteration:
1. draws ``batch_size`` data rows (without replacement) and ``batch_size`` buffer rows (all rows when
   buffer_size == batch_size, otherwise a random subset, as in GWG Appendix H's 2,560-row buffer);
2. advances those buffer rows by ``num_steps`` (K) steps of a discrete sampler (any kernel of
   :mod:`gradmc.samplers.discrete`) under the current model and writes them back;
3. takes one Adam step on  loss = -(mean f(data) - mean f(buffer rows)) + penalties,
   whose gradient is minus the Eq. 12 estimate plus the penalties' (sub)gradients.

The sampler state is re-initialised from the buffer rows every iteration (the model changed), so the
buffer alone is the persistent chain state (a random-scan Gibbs kernel draws a fresh scan order each
iteration; each block update is still exact Gibbs). Penalties (Appendix F.2: l1 on J, strength 0.01;
Appendix H Eq. 34: block l1, sum_ij ||J_ij||_2) act on a tensor the model exposes, e.g. ``"J"``.

Checkpoints (written atomically) hold model and optimiser state, buffer, generator state, iteration,
logged history and cost counters: a run interrupted after a checkpoint and resumed from it ends with
bit-for-bit the same parameters as an uninterrupted run on the same device (tests/test_pcd.py).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import torch

from gradmc.atomic import atomic_path
from gradmc.errors import InputError

__all__ = ["l1_penalty", "block_l1_penalty", "Penalty", "PCD", "CHECKPOINT_FORMAT"]

CHECKPOINT_FORMAT = "gradmc.pcd/1"


def l1_penalty(t: torch.Tensor) -> torch.Tensor:
    """sum_ij |t_ij| (a 0-d tensor); subgradient sign(t), 0 at 0."""
    return t.abs().sum()


def block_l1_penalty(t: torch.Tensor) -> torch.Tensor:
    """Group lasso sum_ij ||t_ij||_2 over the blocks t[i, j] of a (D, D, ...) tensor (GWG Eq. 34), e.g. the
    K x K blocks of Potts couplings (D, D, K, K) (Frobenius norm). Gradient t_ij / ||t_ij||_2 (0 for a zero
    block). Raises ValueError if t has fewer than 3 dimensions (no blocks)."""
    if t.dim() < 3:
        raise ValueError(f"block l1 needs a (D, D, ...) tensor of blocks, got shape {tuple(t.shape)}")
    return torch.linalg.vector_norm(t.flatten(2), dim=-1).sum()


_PENALTIES = {"l1": l1_penalty, "block_l1": block_l1_penalty}


@dataclass(frozen=True)
class Penalty:
    """strength * kind(getattr(model, parameter)) added to the PCD loss; kind "l1" (:func:`l1_penalty`) or
    "block_l1" (:func:`block_l1_penalty`), parameter a tensor attribute or property name (e.g. "J").

    Raises:
        ValueError: unknown kind or strength < 0; (when applied) a model without that tensor.
    """

    kind: str
    parameter: str
    strength: float

    def __post_init__(self):
        if self.kind not in _PENALTIES:
            raise ValueError(f"penalty kind must be one of {sorted(_PENALTIES)}, got {self.kind!r}")
        if not self.strength >= 0:
            raise ValueError(f"penalty strength must be >= 0, got {self.strength}")

    def __call__(self, model: torch.nn.Module) -> torch.Tensor:
        t = getattr(model, self.parameter, None)
        if not isinstance(t, torch.Tensor):
            raise ValueError(f"{type(model).__name__} has no tensor attribute {self.parameter!r} to penalise")
        return self.strength * _PENALTIES[self.kind](t)


def _check_states(x: torch.Tensor, name: str) -> None:
    """Binary (N, D) or one-hot (N, D, K) floating tensor; ValueError naming ``name`` otherwise."""
    if not isinstance(x, torch.Tensor) or x.dim() not in (2, 3) or not x.is_floating_point():
        got = f"{x.dtype} {tuple(x.shape)}" if isinstance(x, torch.Tensor) else type(x).__name__
        raise ValueError(f"{name} must be a floating (N, D) binary or (N, D, K) one-hot tensor, got {got}")
    if not bool(((x == 0) | (x == 1)).all()) or (x.dim() == 3 and not bool((x.sum(-1) == 1).all())):
        raise ValueError(f"{name} must hold binary values (N, D) or one-hot sites (N, D, K)")


class PCD:
    """PCD trainer (see the module docstring); ``train`` runs it, ``save``/``load`` checkpoint it.

    Args:
        model: energy model, ``model(x) -> (C,)`` log p~(x); trained in place.
        sampler: a discrete kernel with ``init(x, model)`` and ``step(state, model, generator)``
            matching the state type (e.g. ``make_sampler("GWG")`` or ``make_sampler("GWG",
            state="categorical")``).
        data: (N, D) binary or (N, D, K) one-hot floats, on the model's device.
        num_steps: K >= 1 sampler steps per iteration for the updated buffer rows.
        batch_size: data rows and buffer rows per iteration, 1 <= batch_size <= min(N, buffer_size).
        buffer_size: persistent chains (default batch_size).
        lr: Adam learning rate (> 0).
        generator: torch.Generator on the data's device (batches, initial buffer, sampler).
        penalties: :class:`Penalty` terms added to the loss.
        init_buffer: (buffer_size, ...) initial chains; default uniform random bits / categories.

    Raises ValueError for bad sizes, data that is not binary / one-hot, a buffer of another shape, or a
    model that does not return shape (C,).
    """

    def __init__(self, model: torch.nn.Module, sampler, data: torch.Tensor, *, num_steps: int, batch_size: int,
                 lr: float, generator: torch.Generator, buffer_size: int | None = None,
                 penalties: tuple[Penalty, ...] | list[Penalty] = (), init_buffer: torch.Tensor | None = None):
        _check_states(data, "data")
        buffer_size = batch_size if buffer_size is None else buffer_size
        if min(num_steps, batch_size, buffer_size) < 1 or batch_size > min(len(data), buffer_size):
            raise ValueError(f"need num_steps >= 1 and 1 <= batch_size <= min(num data = {len(data)}, buffer_size); "
                             f"got num_steps={num_steps}, batch_size={batch_size}, buffer_size={buffer_size}")
        if not lr > 0:
            raise ValueError(f"lr must be > 0, got {lr}")
        self.model, self.sampler, self.data, self.generator = model, sampler, data, generator
        self.num_steps, self.batch_size, self.buffer_size, self.lr = num_steps, batch_size, buffer_size, lr
        self.penalties = tuple(penalties)
        self.optimizer = torch.optim.Adam([p for p in model.parameters() if p.requires_grad], lr=lr)
        if init_buffer is None:
            init_buffer = self._random_states(buffer_size)
        _check_states(init_buffer, "init_buffer")
        if init_buffer.shape != (buffer_size, *data.shape[1:]):
            raise ValueError(f"init_buffer must have shape {(buffer_size, *data.shape[1:])}, "
                             f"got {tuple(init_buffer.shape)}")
        self.buffer = init_buffer.to(data).clone()
        n = min(2, len(data))
        with torch.no_grad():
            out = model(data[:n])
        if out.shape != (n,):
            raise ValueError(f"model(x) must return log p~(x) of shape (C,); got {tuple(out.shape)} for C = {n}")
        self.iteration = 0
        self.history: list[dict] = []
        self.counters = {"sampler_time_s": 0.0, "train_time_s": 0.0, "energy_evals": 0, "grad_evals": 0}
        self._sync = (lambda: torch.cuda.synchronize(data.device)) if data.device.type == "cuda" else (lambda: None)

    def _random_states(self, n: int) -> torch.Tensor:
        shape, dev = self.data.shape[1:], self.data.device
        if len(shape) == 1:
            return torch.bernoulli(torch.full((n, *shape), 0.5, device=dev), generator=self.generator)
        idx = torch.randint(shape[1], (n, shape[0]), generator=self.generator, device=dev)
        return torch.nn.functional.one_hot(idx, shape[1]).to(self.data.dtype)

    def step(self) -> float:
        """One PCD iteration (module docstring, steps 1-3); returns the loss (a float)."""
        gen, dev = self.generator, self.data.device
        rows = torch.randperm(len(self.data), generator=gen, device=dev)[:self.batch_size]
        chains = None if self.buffer_size == self.batch_size else \
            torch.randperm(self.buffer_size, generator=gen, device=dev)[:self.batch_size]
        self._sync()
        tic = time.perf_counter()
        with torch.no_grad():
            state = self.sampler.init(self.buffer if chains is None else self.buffer[chains], self.model)
            for _ in range(self.num_steps):
                state, info = self.sampler.step(state, self.model, gen)
                self.counters["energy_evals"] += info.energy_evals
                self.counters["grad_evals"] += info.grad_evals
        self._sync()
        self.counters["sampler_time_s"] += time.perf_counter() - tic
        negatives = state.x.detach()
        if chains is None:
            self.buffer = negatives.clone()
        else:
            self.buffer[chains] = negatives
        loss = -(self.model(self.data[rows]).mean() - self.model(negatives).mean())
        for penalty in self.penalties:
            loss = loss + penalty(self.model)
        self.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        self.optimizer.step()
        self.iteration += 1
        return float(loss.detach())

    def _record(self, callback: Callable[[PCD], dict] | None) -> None:
        self.history.append({"iteration": self.iteration, **self.counters, **(callback(self) if callback else {})})

    def train(self, num_iterations: int, *, callback: Callable[[PCD], dict] | None = None, callback_every: int = 100,
              checkpoint_path: str | Path | None = None, checkpoint_every: int | None = None,
              resume: bool = True) -> list[dict]:
        """Train until ``self.iteration == num_iterations``; returns the history.

        Args:
            num_iterations: total iterations (not additional ones: a resumed run stops at the same place).
            callback: ``callback(trainer) -> dict`` of metrics (e.g. RMSE of J), recorded with the iteration
                and the cost counters at iteration 0, every ``callback_every`` iterations and at the end.
                It must not draw from the trainer's generator (resumed runs would diverge).
            checkpoint_path: where to save (atomically) every ``checkpoint_every`` iterations and at the end.
            resume: load ``checkpoint_path`` first if it exists.

        Raises ValueError for num_iterations below the current iteration, callback_every < 1, or a
        checkpoint made by a differently configured trainer.
        """
        if checkpoint_path is not None and resume and Path(checkpoint_path).is_file():
            self.load(checkpoint_path)
        if num_iterations < self.iteration or callback_every < 1:
            raise ValueError(f"need num_iterations >= the current iteration {self.iteration} and callback_every >= 1; "
                             f"got {num_iterations}, {callback_every}")
        if self.iteration == 0 and not self.history:
            self._record(callback)
        tic = time.perf_counter()
        while self.iteration < num_iterations:
            self.step()
            done = self.iteration == num_iterations
            record = done or self.iteration % callback_every == 0
            save = checkpoint_path is not None and (done or bool(checkpoint_every)
                                                    and self.iteration % checkpoint_every == 0)
            if record or save:
                now = time.perf_counter()
                self.counters["train_time_s"], tic = self.counters["train_time_s"] + now - tic, now
            if record:
                self._record(callback)
            if save:
                self.save(checkpoint_path)
        return self.history

    def _settings(self) -> dict:
        return {"num_steps": self.num_steps, "batch_size": self.batch_size, "buffer_size": self.buffer_size,
                "lr": self.lr, "sampler": repr(self.sampler), "penalties": repr(self.penalties),
                "data_shape": list(self.data.shape)}

    def state_dict(self) -> dict:
        """Everything a resumed run needs (tensors on the CPU except the model's and optimiser's)."""
        return {"format": CHECKPOINT_FORMAT, "settings": self._settings(), "iteration": self.iteration,
                "model": self.model.state_dict(), "optimizer": self.optimizer.state_dict(),
                "buffer": self.buffer.cpu(), "generator": self.generator.get_state(),
                "history": list(self.history), "counters": dict(self.counters)}

    def load_state_dict(self, state: dict) -> None:
        """Restore :meth:`state_dict` output. Raises ValueError if it comes from another configuration."""
        if state.get("format") != CHECKPOINT_FORMAT:
            raise InputError(f"not a PCD checkpoint of format {CHECKPOINT_FORMAT!r}: got {state.get('format')!r}")
        mine = self._settings()
        diff = {k: (v, mine.get(k)) for k, v in state["settings"].items() if mine.get(k) != v}
        if diff:
            raise InputError("checkpoint was made with other settings (checkpoint, this trainer): "
                             + ", ".join(f"{k}={a!r} vs {b!r}" for k, (a, b) in diff.items()))
        self.model.load_state_dict(state["model"])
        self.optimizer.load_state_dict(state["optimizer"])
        self.generator.set_state(state["generator"])
        self.buffer, self.iteration = state["buffer"].to(self.data), int(state["iteration"])
        self.history, self.counters = list(state["history"]), dict(state["counters"])

    def save(self, path: str | Path) -> Path:
        """Write :meth:`state_dict` to ``path`` atomically (torch.save); returns the path."""
        with atomic_path(path) as tmp:
            torch.save(self.state_dict(), tmp)
        return Path(path)

    def load(self, path: str | Path) -> None:
        """Resume from a checkpoint written by :meth:`save` (loaded with ``weights_only=True``)."""
        self.load_state_dict(torch.load(path, map_location="cpu", weights_only=True))
