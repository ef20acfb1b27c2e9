"""Which samplers train the deep EBMs of GWG Table 2 (EXPERIMENTS.md A7) by PCD, on which data: the feasibility
rule shared by :mod:`gradmc.experiments.ebm`, the config check and ``workflow/rules/ebm.smk`` (torch-free, so
the workflow can read it without importing torch), and the later samplers' own papers' deep-EBM numbers
(:data:`LATER_PAPERS`), shared by the Table 2 figure (:mod:`gradmc.experiments.ebm.figure`) and claims
(:mod:`gradmc.experiments.ebm.claims`).

Training samplers (:data:`SAMPLERS`):
    GWG       Gibbs-With-Gradients (GWG paper Sec. 5.5), binary and categorical (Eq. 4).
    Gibbs-1   random-scan Gibbs, binary only: categorical Gibbs needs K = 256 energy evaluations per pixel and
              is infeasible, as the paper reports (Table 2 marks it "not run").
    DMALA     discrete Metropolis-adjusted Langevin (Zhang, Liu & Liu, ICML 2022), binary and categorical
              (``step_size`` alpha = 0.2, the registry default).
    ACS       automatic cyclical scheduling (Pynadath et al., NeurIPS 2024), binary only (no categorical form
              here): its cosine cycle runs over training iterations, one fixed kernel per iteration, with the
              step-size range re-tuned every cycle (:class:`gradmc.samplers.discrete.acs_pcd.ACSOverIterations`;
              the chain-level :class:`gradmc.samplers.discrete.acs.ACS` cannot train: PCD restarts the sampler
              every iteration and runs fewer steps than its 200-step burn-in).
With ``ebm.equal_time`` every sampler other than GWG (Gibbs-1, DMALA, ACS) trains for the training time of the
GWG run on the same data set.

Steps per training iteration (:func:`sampler_steps`): ``ebm.train.steps_by_sampler[<sampler>]`` where the config
names the sampler there, else ``ebm.train.num_steps``. The paper trains GWG with 40 steps and Gibbs with the
count below which its Gibbs models "quickly diverged" (Sec. 5.5), so Gibbs-1 needs a count of its own.
"""

from __future__ import annotations

from gradmc.errors import InputError, unknown_name

__all__ = ["SAMPLERS", "CATEGORICAL_SAMPLERS", "CATEGORICAL_DATASETS", "BINARY_DATASETS", "LATER_PAPERS", "feasible",
           "sampler_steps"]

#: Samplers that train EBMs by PCD (binary data), in table order.
SAMPLERS = ("GWG", "Gibbs-1", "DMALA", "ACS")
#: Those of :data:`SAMPLERS` that also train categorical (256-level) models.
CATEGORICAL_SAMPLERS = ("GWG", "DMALA")
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
        raise InputError("ebm: " + unknown_name("data set", data, BINARY_DATASETS + CATEGORICAL_DATASETS))
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
        True for GWG and DMALA on any data and Gibbs-1 and ACS on binary data; False for Gibbs-1 on categorical
        data (K evaluations per pixel: infeasible, as the paper reports; the pipeline skips the pair and Table 2
        marks it "not run") and for ACS on categorical data (no categorical form here; skipped the same way).

    Raises:
        InputError: a name not in :data:`SAMPLERS`, an unknown data set name, or levels not an int >= 2.
    """
    if sampler not in SAMPLERS:
        raise InputError("ebm: " + unknown_name("sampler", sampler, SAMPLERS, label="the EBM training samplers"))
    return _levels(data) == 2 or sampler in CATEGORICAL_SAMPLERS


def sampler_steps(train: dict, sampler: str) -> int:
    """Sampler steps per PCD iteration of ``sampler``: ``train["steps_by_sampler"][sampler]`` when given, else
    ``train["num_steps"]``.

    Args:
        train: the ``ebm.train`` settings of one data set (:func:`gradmc.config.for_dataset`: a data set's
            ``overrides`` entry replaces ``steps_by_sampler`` as a whole, like any other key).
        sampler: a training sampler's name (:data:`SAMPLERS`).

    Raises:
        InputError: a sampler not in :data:`SAMPLERS`, or a ``steps_by_sampler`` entry that names one that is
            not, or whose count is not an int >= 1 (the schema says the same before any job starts).
    """
    if sampler not in SAMPLERS:
        raise InputError("ebm: " + unknown_name("sampler", sampler, SAMPLERS, label="the EBM training samplers"))
    by = train.get("steps_by_sampler") or {}
    unknown = sorted(set(by) - set(SAMPLERS))
    if unknown:
        raise InputError(f"ebm.train.steps_by_sampler: unknown sampler(s) {', '.join(map(repr, unknown))}; "
                         f"expected some of {', '.join(SAMPLERS)}")
    steps = by.get(sampler, train["num_steps"])
    if isinstance(steps, bool) or not isinstance(steps, int) or steps < 1:
        raise InputError(f"ebm.train.steps_by_sampler[{sampler!r}] must be an int >= 1, got {steps!r}")
    return steps
