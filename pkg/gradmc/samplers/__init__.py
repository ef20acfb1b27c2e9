"""Transition kernels: ``gradmc.samplers.discrete`` (GWG paper), ``gradmc.samplers.relaxed`` (its continuous
relaxations) and ``gradmc.samplers.continuous`` (Kernel HMC paper: HMC, KMC, RWM, AM, pseudo-marginal MH).

The kernel contract, shared by every sampler in the package:

- ``init(x, log_prob, generator=None) -> State``: start the chains at x (C, ...); kernels whose start is
  random (the relaxed ones draw z = ``z_from_bits(x, generator)``; D-SVGD requires it) use ``generator``,
  the others ignore it;
- ``step(state, log_prob, generator) -> (State, Info)``: one transition of every chain (:class:`Info`).

Every kernel raises :class:`NonFiniteError` (a ``ValueError``) for a NaN/inf log_prob or gradient at a
chain's current state, and rejects proposals of NaN/+inf log_prob (see ``gradmc.samplers.base``)."""

from gradmc.samplers.base import Info, NonFiniteError, check_finite, metropolis_hastings_accept, sample_categorical

__all__ = ["Info", "NonFiniteError", "check_finite", "metropolis_hastings_accept", "sample_categorical"]
