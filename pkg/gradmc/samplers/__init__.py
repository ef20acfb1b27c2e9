"""Transition kernels: ``gradmc.samplers.discrete`` (GWG paper), ``gradmc.samplers.relaxed`` (its continuous
relaxations) and ``gradmc.samplers.continuous`` (Kernel HMC paper: HMC, KMC, RWM, AM, pseudo-marginal MH)."""

from gradmc.samplers.base import Info, metropolis_hastings_accept, sample_categorical

__all__ = ["Info", "metropolis_hastings_accept", "sample_categorical"]
