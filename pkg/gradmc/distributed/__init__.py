"""Ray execution of shards: a private local Ray instance by default, a cluster when RAY_ADDRESS is set.

Typical driver::

    started = ensure_ray(num_cpus=cores)
    try:
        frames = run_shards(experiment.run, experiment.shards(config), desc="rbm_sampling")
    finally:
        if started:
            shutdown_ray()

Modules: :mod:`~gradmc.distributed.session` (connect / start Ray), :mod:`~gradmc.distributed.address`
(RAY_ADDRESS parsing and reachability), :mod:`~gradmc.distributed.ray_runner` (run_shards, retries,
progress), :mod:`~gradmc.distributed.memory` (out-of-memory errors of shards),
:mod:`~gradmc.distributed.localcluster` (a multi-node cluster on this machine, for tests and checks),
:mod:`~gradmc.distributed.selftest` (toy shards).
"""

from __future__ import annotations

from gradmc.distributed.address import parse_address, wait_for_address
from gradmc.distributed.memory import ShardOutOfMemoryError
from gradmc.distributed.ray_runner import run_shards
from gradmc.distributed.session import CONNECT_TIMEOUT_ENV_VAR, OFFLINE_ENV_VAR, ensure_ray, shutdown_ray

__all__ = [
    "CONNECT_TIMEOUT_ENV_VAR",
    "OFFLINE_ENV_VAR",
    "ShardOutOfMemoryError",
    "ensure_ray",
    "parse_address",
    "run_shards",
    "shutdown_ray",
    "wait_for_address",
]
