"""Which samplers train the deep EBMs of GWG Table 2 (EXPERIMENTS.md A7) by PCD, on which data: the feasibility
rule shared by :mod:`gradmc.experiments.ebm`, the config check and ``workflow/rules/ebm.smk`` (torch-free, so
the workflow can read it without importing torch), and the later samplers' own papers' deep-EBM numbers
(:data:`LATER_PAPERS`), shared by the Table 2 figure (:mod:`gradmc.figures.ebm`) and claims
(:mod:`gradmc.claims.ebm`).

Training samplers (:data:`SAMPLERS`):
    GWG       Gibbs-With-Gradients (GWG paper Sec. 5.5), binary and categorical (Eq. 4).
    Gibbs-1   random-scan Gibbs, binary only: categorical Gibbs needs K = 256 energy evaluations per pixel and
              is infeasible, as the paper reports (Table 2 marks it "not run").
    DMALA     discrete Metropolis-adjusted Langevin (Zhang, Liu & Liu, ICML 2022), binary and categorical
              (``step_size`` alpha = 0.2, the registry default).
With ``ebm.equal_time`` every sampler other than GWG (Gibbs-1 and DMALA) trains for the training time of the
GWG run on the same data set.

Not a training sampler: ACS (Pynadath et al., NeurIPS 2024; :data:`UNSUPPORTED`). Its state is a schedule
carried from ``init`` through its burn-in tuning to a fixed cycle (:class:`gradmc.samplers.discrete.acs.ACS`),
but PCD (:class:`gradmc.training.ebm.EBMTrainer`) calls ``sampler.init`` on freshly drawn buffer rows every
iteration and runs ``num_steps`` steps from them (paper: 40), fewer than ACS's 200-step burn-in: the burn-in
would restart every iteration and never end, so every training sample would come from the step-size tuner, never
from the cyclical schedule. The authors' own EBM training (their ``pcd_ebm_ema.py``) is a different algorithm:
the cycle runs over training iterations (one step size per iteration) with re-tuning every few cycles, a
trainer-level schedule this project does not implement. ACS also has no categorical form here.
"""

from __future__ import annotations

from gradmc.errors import InputError

__all__ = ["SAMPLERS", "CATEGORICAL_SAMPLERS", "UNSUPPORTED", "CATEGORICAL_DATASETS", "BINARY_DATASETS", "LATER_PAPERS",
           "feasible"]

#: Samplers that train EBMs by PCD (binary data), in table order.
SAMPLERS = ("GWG", "Gibbs-1", "DMALA")
#: Those of :data:`SAMPLERS` that also train categorical (256-level) models.
CATEGORICAL_SAMPLERS = ("GWG", "DMALA")
#: Registry samplers that cannot train EBMs by PCD here, with the reason (module docstring).
UNSUPPORTED = {
    "ACS": ("ACS cannot train EBMs by PCD here: the trainer restarts the sampler (init) on fresh buffer rows every "
            "iteration and runs ebm.train.num_steps steps (paper: 40), fewer than ACS's 200-step burn-in, so ACS "
            "would never leave its step-size tuning phase and never run its cyclical schedule; the authors' EBM "
            "training cycles the step size over training iterations instead, which is not implemented. ACS is "
            "binary only (no categorical form). Use GWG, Gibbs-1 or DMALA"),
}
#: Data sets of GWG Table 2 with 256 grey levels (one-hot categorical models).
CATEGORICAL_DATASETS = ("frey", "histopathology")
#: The binary data sets of GWG Table 2.
BINARY_DATASETS = ("static_mnist", "dynamic_mnist", "omniglot", "caltech")
#: Deep-EBM test log-likelihoods (nats) the later samplers' own papers report for the GWG deep-EBM protocol:
#: data set -> sampler -> (value, source). DMALA: Zhang, Liu & Liu (ICML 2022), static MNIST.
LATER_PAPERS = {
    "static_mnist": {"DMALA": (-79.46, "Zhang et al. 2022")},
}


def _levels(data: int | str) -> int:
    if isinstance(data, str):
        if data in CATEGORICAL_DATASETS:
            return 256
        if data in BINARY_DATASETS:
            return 2
        raise InputError(f"ebm: unknown data set {data!r}; expected one of "
                         f"{', '.join(BINARY_DATASETS + CATEGORICAL_DATASETS)}")
    if isinstance(data, bool) or not isinstance(data, int) or data < 2:
        raise InputError(f"ebm: levels must be an int >= 2 (2: binary, 256: grey levels), got {data!r}")
    return data


def feasible(sampler: str, data: int | str) -> bool:
    """Whether ``sampler`` trains a deep EBM (GWG paper Sec. 5.5, Table 2) on ``data`` by PCD.

    Args:
        sampler: a training sampler's name (:data:`SAMPLERS`).
        data: the number of levels per pixel (2: binary {0, 1} images, (N, D); more: one-hot (N, D, K)) or a
            Table 2 data set name (``static_mnist``, ..., ``frey``, ``histopathology``).

    Returns:
        True for GWG and DMALA on any data and Gibbs-1 on binary data; False for Gibbs-1 on categorical data
        (K evaluations per pixel: infeasible, as the paper reports; the pipeline skips the pair and Table 2
        marks it "not run").

    Raises:
        InputError: ACS (it cannot run inside PCD training and has no categorical form: :data:`UNSUPPORTED`),
            any other name not in :data:`SAMPLERS`, an unknown data set name, or levels not an int >= 2.
    """
    if sampler in UNSUPPORTED:
        raise InputError(f"ebm: {UNSUPPORTED[sampler]}")
    if sampler not in SAMPLERS:
        raise InputError(f"ebm: unknown sampler {sampler!r}; the EBM training samplers are {', '.join(SAMPLERS)}")
    return _levels(data) == 2 or sampler in CATEGORICAL_SAMPLERS
