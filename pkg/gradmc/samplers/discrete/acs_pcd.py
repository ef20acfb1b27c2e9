"""ACS as a PCD training sampler: the cyclical schedule runs over training iterations, not over the steps of one
chain (Pynadath, Bhattacharya, Hariharan & Zhang, NeurIPS 2024, their EBM-learning experiments).

Why a separate object. :class:`~gradmc.samplers.discrete.acs.ACS` carries its schedule in the chain state from
``init``: a burn-in of ``burn_in`` tuning steps (default 200), then the fixed cosine cycle. PCD training
(:class:`gradmc.training.ebm.EBMTrainer`) starts the sampler afresh on buffer rows every iteration and runs
``num_steps`` steps (paper: 40), fewer than the burn-in, so the chain-level ACS would never leave its tuner.
Here the schedule lives at the trainer's level instead:

- Training iteration t (0-based) is at cycle position k = t mod s (s = ``acs.cycle_length``): all ``num_steps``
  steps of that iteration use the ONE fixed, exact kernel ``acs.kernel_at(k, alpha_max, alpha_min)``
  (:class:`~gradmc.samplers.discrete.acs.ACSKernel`, step size alpha_k and balancing constant beta_k). A cycle
  of s iterations thus starts with a large, globally balanced exploration step and anneals to small, locally
  balanced (beta = 1/2, DMALA) steps.
- Re-tuning: at the first iteration of every ``retune_every``-th cycle (t = 0, s * retune_every, ...) the range
  (alpha_min, alpha_max) is tuned afresh by the chain-level ACS burn-in (``acs.burn_in`` steps: alpha_min up
  from its initial value with beta = 1/2, then alpha_max down from its initial value with beta_max, toward
  acceptance ``acs.target_acceptance``) on that iteration's buffer rows under the current model; those chains
  then continue with the iteration's kernel. Re-tuning from the initial values (not from the previous range)
  lets the range follow the model as it sharpens in both directions. The model changes every iteration, so
  PCD never samples one fixed target: exactness here means each iteration's kernel leaves the current model's
  distribution invariant (it is an exact MH kernel), which the ACS kernel tests check.

DEVIATION from the authors' code (patrickpynadath1/automatic_cyclical_sampling, EBM training script, read to
understand, not copied): there the balancing constants are searched per position and the tuning budget and
re-tuning period are their own settings; here beta is tied to alpha (as in :mod:`~gradmc.samplers.discrete.acs`)
and the defaults below (re-tune every cycle, the chain-level burn-in of 200 steps) are this project's choice.

Cost: ``num_steps`` evaluations of f and grad f per iteration plus ``acs.burn_in`` (+1 for the start) every
``retune_every * s`` iterations: with s = 20, 40 steps per iteration and a re-tune every cycle, 25% more
evaluations than DMALA. The tuning steps count as training time (the equal-time comparison pays for them).
"""

from __future__ import annotations

import torch

from gradmc.samplers.discrete.acs import ACS, ACSKernel

__all__ = ["ACSOverIterations"]


class ACSOverIterations:
    """ACS whose cosine cycle runs over PCD training iterations (module docstring); binary states (C, D).

    The trainer calls :meth:`prepare` once per iteration with that iteration's starting states and runs the
    returned fixed kernel (``init`` / ``step`` of :class:`~gradmc.samplers.discrete.acs.ACSKernel`). The tuned
    range is state: :meth:`state_dict` / :meth:`load_state_dict` carry it through checkpoints.

    Args:
        acs: the chain-level ACS whose cycle length, initial range, beta_max, burn-in (the tuning budget) and
            acceptance target are used (default: :class:`~gradmc.samplers.discrete.acs.ACS`'s defaults). Its
            burn_in must be >= 2 (both halves of the tuning need a step).
        retune_every: cycles between re-tunings, an int >= 1 (default 1: every cycle).

    Raises:
        ValueError: acs not an :class:`ACS` or with burn_in < 2; retune_every not an int >= 1.
    """

    def __init__(self, acs: ACS | None = None, retune_every: int = 1):
        acs = ACS() if acs is None else acs
        if not isinstance(acs, ACS):
            raise ValueError(f"ACSOverIterations acs must be an ACS sampler, got {type(acs).__name__}")
        if acs.burn_in < 2:
            raise ValueError(f"ACSOverIterations needs acs.burn_in >= 2 tuning steps, got {acs.burn_in}")
        if isinstance(retune_every, bool) or not isinstance(retune_every, int) or retune_every < 1:
            raise ValueError(f"ACSOverIterations retune_every must be an int >= 1, got {retune_every!r}")
        self.acs, self.retune_every = acs, retune_every
        self.alpha_max: float | None = None  # None until the first tuning (iteration 0)
        self.alpha_min: float | None = None
        self.tunings = 0

    @property
    def name(self) -> str:
        """"ACS" (the registry sampler's name)."""
        return "ACS"

    def __repr__(self) -> str:  # settings only (the trainer compares it on resume), never the tuned range
        return f"ACSOverIterations(acs={self.acs!r}, retune_every={self.retune_every})"

    def retunes_at(self, iteration: int) -> bool:
        """Whether training iteration ``iteration`` (0-based) re-tunes the range: the first iteration of every
        ``retune_every``-th cycle."""
        return iteration % (self.acs.cycle_length * self.retune_every) == 0

    def kernel(self, iteration: int) -> ACSKernel:
        """The fixed kernel of training iteration ``iteration`` (0-based): position iteration mod s of the cycle
        over the current tuned range.

        Raises:
            RuntimeError: no range yet (:meth:`prepare` of a re-tuning iteration, e.g. 0, has not run).
        """
        if self.alpha_max is None:
            raise RuntimeError("ACSOverIterations has no tuned step-size range yet: prepare() of iteration 0 "
                               "(or a loaded state_dict) must come first")
        return self.acs.kernel_at(iteration, self.alpha_max, self.alpha_min)

    def prepare(self, iteration: int, x: torch.Tensor, log_prob, generator: torch.Generator
                ) -> tuple[ACSKernel, torch.Tensor]:
        """Start training iteration ``iteration`` (0-based) from buffer rows x (C, D) in {0, 1}.

        On a re-tuning iteration (:meth:`retunes_at`), runs the ACS burn-in (``acs.burn_in`` steps) from x
        under ``log_prob`` (the current model, (N, D) -> (N,)) and stores the tuned range.

        Returns:
            (kernel, x0): the iteration's fixed kernel and the states to start it from ((C, D): x, or the
            tuned chains' last states after a re-tuning).

        Raises:
            NonFiniteError: f or grad f NaN/inf during the tuning. ValueError: x not binary (C, D) floats.
        """
        if self.retunes_at(iteration) or self.alpha_max is None:
            state = self.acs.init(x, log_prob, generator)
            for _ in range(self.acs.burn_in):
                state, _ = self.acs.step(state, log_prob, generator)
            self.alpha_max, self.alpha_min, self.tunings = state.alpha_max, state.alpha_min, self.tunings + 1
            x = state.x
        return self.kernel(iteration), x

    def state_dict(self) -> dict:
        """The tuned range and the number of tunings so far (JSON-like floats/ints; None before tuning)."""
        return {"alpha_max": self.alpha_max, "alpha_min": self.alpha_min, "tunings": self.tunings}

    def load_state_dict(self, state: dict) -> None:
        """Restore :meth:`state_dict` output.

        Raises:
            ValueError: missing keys, or a range that is not 0 < alpha_min <= alpha_max (or both None).
        """
        try:
            hi, lo, n = state["alpha_max"], state["alpha_min"], int(state["tunings"])
        except (KeyError, TypeError, ValueError) as err:
            raise ValueError(f"ACSOverIterations state must have alpha_max, alpha_min and tunings, got {state!r}") \
                from err
        if (hi is None) != (lo is None) or (hi is not None and not 0 < lo <= hi):
            raise ValueError(f"ACSOverIterations state has a bad range: alpha_min={lo!r}, alpha_max={hi!r}")
        self.alpha_max = None if hi is None else float(hi)
        self.alpha_min = None if lo is None else float(lo)
        self.tunings = n
