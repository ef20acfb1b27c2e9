"""gradmc: reference reproduction of Gibbs-With-Gradients (Grathwohl et al. 2021) and Kernel HMC
(Strathmann et al. 2015): samplers, targets, estimators, training loops and a Snakemake pipeline."""

__all__ = ["__version__"]
__version__ = "0.1.0"
