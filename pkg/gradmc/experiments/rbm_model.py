"""RBM checkpoints and training data shared by the RBM experiments (GWG paper Sec. 5.1, Appendix E)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch

from gradmc.atomic import atomic_path
from gradmc.errors import InputError, MissingInputError
from gradmc.targets.rbm import RBM

__all__ = ["save_rbm", "load_rbm", "load_binary_data", "data_mean_init"]

_FORMAT = "gradmc.rbm.v1"


def save_rbm(rbm: RBM, path: str | Path, meta: dict) -> None:
    """Write the RBM's weights and ``meta`` (JSON-able) atomically to ``path`` (torch .pt)."""
    blob = {"format": _FORMAT, "num_visible": rbm.num_visible, "num_hidden": rbm.num_hidden,
            "state_dict": {k: v.detach().cpu() for k, v in rbm.state_dict().items()}, "meta": meta}
    with atomic_path(path) as tmp:
        torch.save(blob, tmp)


def load_rbm(path: str | Path, device: str = "cpu") -> RBM:
    """Read an RBM written by :func:`save_rbm`.

    Raises:
        FileNotFoundError: missing file. ValueError: not a gradmc RBM checkpoint or corrupt.
    """
    path = Path(path)
    if not path.exists():
        raise MissingInputError(f"RBM checkpoint {path} not found; run the train stage first")
    try:
        blob = torch.load(path, map_location=device, weights_only=True)
    except Exception as err:  # torch raises several types for corrupt files
        raise InputError(f"RBM checkpoint {path} is corrupt or unreadable: {err}") from err
    if not isinstance(blob, dict) or blob.get("format") != _FORMAT:
        raise InputError(f"{path} is not a gradmc RBM checkpoint (expected format {_FORMAT})")
    rbm = RBM(blob["num_visible"], blob["num_hidden"])
    rbm.load_state_dict(blob["state_dict"])
    return rbm.to(device).requires_grad_(False)


def load_binary_data(path: str | Path, split: str = "train", device: str = "cpu") -> torch.Tensor:
    """Load split ``split`` of a prepared data set (.npz of uint8 {0,1}, (N, D)) as float32 (N, D).

    Raises:
        MissingInputError: (a FileNotFoundError) no such file.
        InputError: (a ValueError) no such split (naming the available ones), or values that are not 0/1.
    """
    path = Path(path)
    if not path.exists():
        raise MissingInputError(f"prepared data {path} not found; run `gradmc data prepare` first")
    with np.load(path, allow_pickle=False) as npz:
        if split not in npz.files:
            raise InputError(f"{path} has no split {split!r}; available: {', '.join(npz.files)}")
        arr = npz[split]
    if arr.ndim != 2 or not np.isin(arr, (0, 1)).all():
        raise InputError(f"{path}[{split}] must be a (N, D) array of 0/1, got shape {arr.shape}")
    return torch.from_numpy(arr.astype(np.float32)).to(device)


def data_mean_init(data: torch.Tensor, num_chains: int, generator: torch.Generator) -> torch.Tensor:
    """Initial states x ~ Bernoulli(data mean), shape (num_chains, D) (GWG paper Appendix E)."""
    mean = data.mean(0).clamp(1e-3, 1 - 1e-3)  # (D,)
    probs = mean.expand(num_chains, -1).to(generator.device)
    return torch.bernoulli(probs, generator=generator)
