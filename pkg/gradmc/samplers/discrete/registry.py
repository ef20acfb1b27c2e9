"""Sampler names as the papers print them, mapped to configured kernels.

Names: ``Gibbs-X`` (X = block size, e.g. Gibbs-1, Gibbs-2), ``GWG``, ``BlockGibbs`` (RBMs only).
The sampler-suite issue adds HB-X-Y, GWG-N, random-walk Metropolis and the relaxed samplers here.
"""

from __future__ import annotations

import re

from gradmc.samplers.discrete.block_gibbs import RBMBlockGibbs
from gradmc.samplers.discrete.gibbs import Gibbs
from gradmc.samplers.discrete.gwg import GWG

__all__ = ["SAMPLERS", "make_sampler"]

#: Names accepted by :func:`make_sampler` (patterns; X is a positive integer).
SAMPLERS = ("Gibbs-X", "GWG", "BlockGibbs")


def make_sampler(name: str):
    """Build the kernel named ``name`` (see :data:`SAMPLERS`).

    Raises:
        ValueError: for an unknown name, listing the accepted ones.
    """
    if name == "GWG":
        return GWG(temperature=2.0)
    if name == "BlockGibbs":
        return RBMBlockGibbs()
    m = re.fullmatch(r"Gibbs-(\d+)", name)
    if m:
        return Gibbs(block_size=int(m.group(1)))
    raise ValueError(f"unknown sampler {name!r}; expected one of {', '.join(SAMPLERS)}")
