"""Unnormalised log-densities ``log_prob(x) -> (C,)``, differentiable in x."""

from gradmc.targets.rbm import RBM

__all__ = ["RBM"]
