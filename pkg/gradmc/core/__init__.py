"""What the samplers and the targets share, below both (``gradmc.samplers`` and ``gradmc.targets`` import it,
it imports neither):

- :mod:`gradmc.core.gradients`: f and grad f of a target (its closed form or autograd), :func:`own_method`;
- :mod:`gradmc.core.incremental`: the cached and incremental evaluation protocol (:class:`Evaluation`) that
  structured targets implement and the discrete kernels use;
- :mod:`gradmc.core.streams`: random streams per fixed block of chains;
- :mod:`gradmc.core.validation`: input checks of binary and one-hot states and coupling matrices;
- :mod:`gradmc.core.exact`: exact enumeration of small binary state spaces.
"""

__all__: list[str] = []
