"""Transition kernels. ``gradmc.samplers.discrete`` holds the GWG-paper samplers."""

from gradmc.samplers.base import Info, metropolis_hastings_accept, sample_categorical

__all__ = ["Info", "metropolis_hastings_accept", "sample_categorical"]
