"""Data stage of GWG Fig. 6 / Fig. 11 (EXPERIMENTS.md A5, Appendix F.2): samples of the true Ising models.

True models (config section ``ising_pcd.data``), all in the convention of :mod:`gradmc.targets.ising`
(log p = s^T J s + b^T s, s = 2x - 1, every edge counted twice), all with bias b = 0:
- cyclic side x side lattices, J = theta * A, for every side in ``lattice_sides`` and theta in ``thetas``
  (the paper: 10, 25, 40 and theta in {-0.1, 0.0, 0.1, 0.25, 0.5}; its list is partly lost, this grid
  is the authors' data script minus its extra 1.0);
- optionally an Erdos-Renyi graph (``erdos_renyi``: num_nodes 200, avg_degree 4, edge weights
  N(0, weight_std^2) with weight_std = 0.5 = sqrt(1 / avg_degree), the authors' scale), built by
  :class:`gradmc.targets.ErdosRenyiIsing` with b = 0 (NOT the authors' bug of using the weight scale as
  the bias), its graph and weights seeded from the model's key.

Sampler: ``num_samples`` independent chains from uniform random bits, each run for ``site_updates``
single-site Gibbs updates (the paper: 2,000 examples from 1,000,000 Gibbs steps), i.e.
ceil(site_updates / D) sweeps; the last state of each chain is one example. A sweep is done by colour
class (chromatic Gibbs, :mod:`gradmc.samplers.discrete.chromatic_gibbs`): the sites are greedily coloured
so that no two coupled sites share a colour, and all sites of a class are drawn together from their exact
conditionals, equal in law to a systematic-scan Gibbs-1 sweep in colour order.

Output: one .npz (:func:`write_data`, atomic) with, per model key, ``<key>/x`` (num_samples, D) uint8,
``<key>/J`` (D, D) float32 (the true couplings, dense) and ``<key>/bias`` (D,) float32, plus
``manifest`` (a JSON string: the keys, model parameters, sweeps and seconds per model). CLI (wired by the
lead): ``gradmc run ising_pcd_data --config C --out results/<config>/ising_pcd/data.npz``.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import torch

from gradmc.atomic import atomic_path
from gradmc.errors import ConfigError, InputError
from gradmc.samplers.discrete.chromatic_gibbs import chromatic_gibbs, greedy_colouring
from gradmc.seeding import make_generator, seed_from
from gradmc.targets import ErdosRenyiIsing, LatticeIsing
from gradmc.targets.lattice import lattice_edges

__all__ = ["META", "ModelSpec", "model_specs", "true_target", "dense_couplings", "simulate", "write_data",
           "read_model"]

EXPERIMENT = "ising_pcd_data"
META = {"stages": {"ising_pcd_data": ["ising_pcd.data"]}}


@dataclass(frozen=True)
class ModelSpec:
    """A true model: kind "lattice" (side, theta) or "er" (num_nodes, avg_degree, weight_std)."""

    kind: str
    side: int = 0
    theta: float = float("nan")
    num_nodes: int = 0
    avg_degree: float = 0.0
    weight_std: float = 0.0

    @property
    def key(self) -> str:
        """Stable name, e.g. ``lattice25_theta0.25`` or ``er200_deg4_std0.5``."""
        if self.kind == "lattice":
            return f"lattice{self.side}_theta{self.theta:g}"
        return f"er{self.num_nodes}_deg{self.avg_degree:g}_std{self.weight_std:g}"

    @property
    def dim(self) -> int:
        """D, the number of bits."""
        return self.side * self.side if self.kind == "lattice" else self.num_nodes


def model_specs(data_spec: dict) -> list[ModelSpec]:
    """The models of ``config['ising_pcd']['data']``: lattices (side-major, then theta), then the ER graph.

    Raises:
        ValueError: duplicate models.
    """
    out = [ModelSpec("lattice", side=int(s), theta=float(t)) for s in data_spec["lattice_sides"]
           for t in data_spec["thetas"]]
    er = data_spec["erdos_renyi"]
    if er:
        out.append(ModelSpec("er", num_nodes=int(er["num_nodes"]), avg_degree=float(er["avg_degree"]),
                             weight_std=float(er["weight_std"])))
    keys = [m.key for m in out]
    if len(set(keys)) != len(keys):
        raise ConfigError(f"ising_pcd.data lists a model twice: {keys}")
    return out


def true_target(spec: ModelSpec) -> LatticeIsing | ErdosRenyiIsing:
    """The true model as a :mod:`gradmc.targets` Ising target (b = 0); the ER graph is seeded from its key."""
    if spec.kind == "lattice":
        return LatticeIsing(spec.side, spec.theta)
    if spec.kind == "er":
        gen = make_generator(seed_from(EXPERIMENT, "graph", spec.key))
        return ErdosRenyiIsing(spec.num_nodes, spec.avg_degree, spec.weight_std, generator=gen)
    raise ValueError(f"model kind must be 'lattice' or 'er', got {spec.kind!r}")


def dense_couplings(target) -> torch.Tensor:
    """True J (D, D) float32 of a LatticeIsing (any side, built from its edge list) or a DenseIsing."""
    if isinstance(target, LatticeIsing):
        edges = lattice_edges(target.side, target.periodic)
        J = torch.zeros(target.num_dims, target.num_dims)
        J[edges[0], edges[1]] = target.theta
        J[edges[1], edges[0]] = target.theta
        return J
    return target.couplings_dense().float().cpu()


def simulate(spec: ModelSpec, num_samples: int, site_updates: int, device: str = "cpu",
             progress: Callable[[str], None] | None = None) -> dict:
    """Samples of one true model: {"x": (N, D) uint8, "J": (D, D) float32, "bias": (D,) float32,
    "sweeps": int, "seconds": float} as numpy arrays / numbers; one ``progress`` line when done."""
    if num_samples < 1 or site_updates < 1:
        raise ValueError(f"need num_samples >= 1 and site_updates >= 1, got {num_samples}, {site_updates}")
    target = true_target(spec).to(device)
    J = dense_couplings(target)
    classes = [c.to(device) for c in greedy_colouring(J)]
    sweeps = math.ceil(site_updates / spec.dim)
    gen = make_generator(seed_from(EXPERIMENT, "chains", spec.key), device)
    tic = time.perf_counter()
    x0 = torch.bernoulli(torch.full((num_samples, spec.dim), 0.5, device=device), generator=gen)
    x = chromatic_gibbs(target, x0, classes, sweeps, gen)
    seconds = time.perf_counter() - tic
    if progress is not None:
        progress(f"[ising_pcd_data] {spec.key}: {sweeps} sweeps of {num_samples} chains ({len(classes)} colours) "
                 f"in {seconds:.1f}s")
    return {"x": x.cpu().numpy().astype(np.uint8), "J": J.numpy().astype(np.float32),
            "bias": target.bias.float().cpu().numpy(), "sweeps": sweeps, "seconds": seconds}


def write_data(config: dict, out_path: str | Path, progress: Callable[[str], None] | None = print,
               threads: int | None = 1) -> dict:
    """Simulate every model of ``config['ising_pcd']['data']``; write one .npz atomically; return the manifest.

    ``threads``: torch intra-op threads while simulating (restored afterwards; None leaves them). The
    (num_samples, D) tensors are small: on CPU one thread is fastest, and on a busy 2-core machine two
    threads were measured 10-15x slower (synchronisation waits).
    """
    spec = config["ising_pcd"]["data"]
    arrays, manifest = {}, {"models": [], "num_samples": int(spec["num_samples"]),
                            "site_updates": int(spec["site_updates"])}
    saved = torch.get_num_threads()
    if threads is not None:
        torch.set_num_threads(threads)
    try:
        results = [(model, simulate(model, int(spec["num_samples"]), int(spec["site_updates"]),
                                    config["device"], progress)) for model in model_specs(spec)]
    finally:
        torch.set_num_threads(saved)
    for model, out in results:
        for name in ("x", "J", "bias"):
            arrays[f"{model.key}/{name}"] = out[name]
        manifest["models"].append({"key": model.key, **asdict(model), "dim": model.dim, "sweeps": out["sweeps"],
                                   "seconds": round(out["seconds"], 3), "mean_x": float(out["x"].mean())})
    arrays["manifest"] = np.array(json.dumps(manifest))
    with atomic_path(out_path) as tmp:
        with open(tmp, "wb") as fh:
            np.savez_compressed(fh, **arrays)
    return manifest


def model_keys(npz, path: str | Path) -> list[str]:
    """The model keys listed in the manifest of an open :func:`write_data` file ``npz`` (read from ``path``).

    Raises:
        InputError: the file has no readable manifest (not a file written by ``gradmc run ising_pcd_data``).
    """
    try:
        return [m["key"] for m in json.loads(str(npz["manifest"]))["models"]]
    except (KeyError, TypeError, ValueError) as err:
        raise InputError(f"{path} is not an ising_pcd_data file (no readable manifest: {err}); rebuild it with "
                         "`gradmc run ising_pcd_data`") from None


def read_model(path: str | Path, key: str) -> dict:
    """One model's arrays from a :func:`write_data` file: {"x": (N, D) float32, "J": (D, D), "bias": (D,)}
    torch tensors. Raises InputError naming the keys present when ``key`` is missing."""
    with np.load(path) as npz:
        keys = model_keys(npz, path)
        if key not in keys:
            raise InputError(f"model {key!r} is not in {path}; it holds {keys}")
        return {"x": torch.from_numpy(npz[f"{key}/x"].astype(np.float32)),
                "J": torch.from_numpy(npz[f"{key}/J"]), "bias": torch.from_numpy(npz[f"{key}/bias"])}
