"""What an interval from an AIS estimate of log Z needs, shared by the image and the text EBM claims: how many AIS
chains, and how large an importance-weights ESS, before estimate +- z SE covers as it claims (measured by
simulation; see :data:`MIN_AIS_WEIGHTS_ESS`), and the config keys they are read from."""

from __future__ import annotations

import math

from gradmc.claims.base import Need, at_least, config_value
from gradmc.errors import InputError

__all__ = ["AIS_ESS_FOR_COVERAGE", "AIS_REFERENCE_CHAINS", "MIN_AIS_ESS_FRACTION", "MIN_AIS_WEIGHTS_ESS", "ais_chains",
           "ais_chains_need", "dataset_key", "min_ais_weights_ess"]


def dataset_key(config: dict | None, section: str, name: str, dataset: str) -> str:
    """The dotted key the experiment reads ``name`` of ``section`` from for ``dataset``: its override when the
    config has one (:func:`gradmc.config.for_dataset`), else the default."""
    if config is not None:
        over = config_value(config, section).get("overrides") or {}
        if name in (over.get(dataset) or {}):
            return f"{section}.overrides.{dataset}.{name}"
    return f"{section}.{name}"


AIS_REFERENCE_CHAINS = 32
"""The AIS chains the coverage of the normal interval from the AIS standard error was first measured with (quick's
``ebm.ais.num_chains``)."""
MIN_AIS_ESS_FRACTION = 25 / 32
"""The AIS weights ESS, as a fraction of :data:`AIS_REFERENCE_CHAINS`, below which the normal interval from the AIS
standard error gives no bounds."""
MIN_AIS_WEIGHTS_ESS = MIN_AIS_ESS_FRACTION * AIS_REFERENCE_CHAINS
"""25: the fewest effective AIS chains (``ais_weights_ess``) of 32 for a normal interval from the AIS standard error.

Measured (lognormal log weights over 32 chains): estimate +- 1.96 SE of log Z covers 0.943 at weights ESS 31.7 of
32, 0.933 at 25, 0.913 at 19, 0.82 at 9 and 0.59 at 4: the delta-method SE of a log mean of skewed importance
weights is too small when few weights dominate. The coverage reaches the claims' 0.93 at 25 / 32 = 0.78 of the
chains. The ESS a normal interval needs grows with the chain count: with 100 chains, as the paper config runs,
the same simulation reaches 0.93 only from an ESS of about 50 (and covers about 0.91 at 32); with 8 chains it
never reaches 0.93 (0.91 at equal weights). :func:`min_ais_weights_ess` reads the threshold for a run's chain
count from these measurements."""
AIS_ESS_FOR_COVERAGE = ((AIS_REFERENCE_CHAINS, MIN_AIS_WEIGHTS_ESS), (100, 50.0))
"""(AIS chains, the fewest weights ESS at which the normal interval covers >= 0.93), as measured (above)."""


def min_ais_weights_ess(num_chains: int | None) -> float:
    """The fewest AIS weights ESS for which the normal interval from the AIS standard error (estimate +- z SE of
    log Z) gives bounds, for a run of ``num_chains`` chains.

    The measured threshold of the smallest measured chain count at or above ``num_chains``
    (:data:`AIS_ESS_FOR_COVERAGE`: 25 for 32 chains, 50 for 33-100); half the chains beyond 100 (the needed
    fraction falls with the chain count: 0.78 at 32, 0.5 at 100); infinite below 32 chains (unmeasured there,
    and 8 chains never reach 0.93: no interval). ``None`` (the chain count is not known, e.g. no config): 25,
    the threshold of the 32 chains the quick config runs.
    """
    if num_chains is None:
        return MIN_AIS_WEIGHTS_ESS
    if num_chains < AIS_REFERENCE_CHAINS:
        return math.inf
    for chains, ess in AIS_ESS_FOR_COVERAGE:
        if num_chains <= chains:
            return ess
    return 0.5 * num_chains


def ais_chains(config: dict | None, section: str, dataset: str | None = None) -> int | None:
    """``num_chains`` of the config's AIS section ``section`` (e.g. "ebm.ais"; a data set's overrides applied),
    None without a config or without that key."""
    if config is None:
        return None
    try:
        spec = config_value(config, section)
    except InputError:
        return None
    if dataset is not None:
        from gradmc.config import for_dataset

        spec = for_dataset(spec, dataset)
    chains = spec.get("num_chains")
    return None if chains is None else int(chains)


def ais_chains_need(config: dict | None, section: str, dataset: str | None = None) -> Need:
    """The AIS chains an interval from the AIS standard error needs: below :data:`AIS_REFERENCE_CHAINS` chains
    :func:`min_ais_weights_ess` is infinite and no run gives an interval, so the claim is undecidable from the
    config alone (``section``: "ebm.ais" or "text_ebm.ais"; ``dataset``: the data set whose override applies)."""
    key = dataset_key(config, section, "num_chains", dataset) if dataset is not None else f"{section}.num_chains"
    return at_least(config, key, AIS_REFERENCE_CHAINS, "AIS chains (fewer give no calibrated interval)",
                    why="the normal interval's coverage reaches 0.93 only from 32 chains (min_ais_weights_ess)")
