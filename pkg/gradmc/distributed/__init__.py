"""Ray execution of shards: a private local Ray instance by default, a cluster when RAY_ADDRESS is set.

Typical driver::

    started = ensure_ray(num_cpus=cores)
    try:
        frames = run_shards(experiment.run, experiment.shards(config), desc="rbm_sampling")
    finally:
        if started:
            shutdown_ray()
"""

from __future__ import annotations

from gradmc.distributed.ray_runner import ShardOutOfMemoryError, run_shards
from gradmc.distributed.session import (
    CONNECT_TIMEOUT_ENV_VAR,
    OFFLINE_ENV_VAR,
    ensure_ray,
    parse_address,
    shutdown_ray,
    wait_for_address,
)

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
