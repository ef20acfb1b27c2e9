"""Metrics: effective sample size and autocorrelation (via ArviZ), kernel MMD between sample sets, and the timing
of sampler steps (:mod:`gradmc.evaluation.timing`)."""

from gradmc.evaluation.autocorrelation import autocorrelation
from gradmc.evaluation.ess import ESS_METHODS, ess, ess_per_chain, hamming_to_reference
from gradmc.evaluation.mmd import hamming_kernel, log_mmd, mmd2, mmd2_prefixes, polynomial_kernel

__all__ = ["ESS_METHODS", "autocorrelation", "ess", "ess_per_chain", "hamming_to_reference", "hamming_kernel",
           "log_mmd", "mmd2", "mmd2_prefixes", "polynomial_kernel"]
