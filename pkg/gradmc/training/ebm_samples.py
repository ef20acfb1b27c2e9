"""Replay-buffer samples of a trained EBM, the images of GWG paper Fig. 8 (EXPERIMENTS.md A7).

The training stage writes them beside its checkpoint (:func:`samples_path`), so the figure reads a small
result file and never the model checkpoint. Format: an ``.npz`` with ``samples``, (N, D) float32 grey
levels in [0, 1]: binary buffer rows as they are, one-hot rows (N, D, K) as level / (K - 1).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch

from gradmc.atomic import atomic_path
from gradmc.errors import InputError

__all__ = ["NUM_SAMPLES", "samples_path", "buffer_images", "write_samples", "read_samples"]

#: Buffer rows kept for Fig. 8 (a grid of 4 x 8).
NUM_SAMPLES = 32


def samples_path(checkpoint: str | Path) -> Path:
    """The samples file written beside ``checkpoint``: ``model.pt`` -> ``model.samples.npz``."""
    return Path(checkpoint).with_suffix(".samples.npz")


def buffer_images(buffer: torch.Tensor, num: int = NUM_SAMPLES) -> np.ndarray:
    """The first ``num`` buffer rows as grey levels.

    Args:
        buffer: (N, D) binary {0, 1} floats, or (N, D, K) one-hot over K levels.
        num: rows kept (all if fewer).

    Returns:
        (min(num, N), D) float32 in [0, 1]: binary rows unchanged; one-hot rows argmax / (K - 1).
    """
    rows = buffer[:num].detach().cpu()
    if rows.dim() == 3:  # one-hot levels -> grey in [0, 1]
        rows = rows.argmax(-1).float() / (rows.shape[-1] - 1)
    return rows.reshape(rows.shape[0], -1).numpy().astype(np.float32, copy=False)


def write_samples(buffer: torch.Tensor, path: str | Path, num: int = NUM_SAMPLES) -> Path:
    """Write :func:`buffer_images` of ``buffer`` atomically to ``path`` (.npz); returns the path."""
    path = Path(path)
    images = buffer_images(buffer, num)
    with atomic_path(path) as tmp:
        with open(tmp, "wb") as fh:
            np.savez_compressed(fh, samples=images)
    return path


def read_samples(path: str | Path, image_shape: tuple[int, int]) -> np.ndarray:
    """The images of a :func:`write_samples` file, shape (N, H, W) float32 for ``image_shape`` = (H, W).

    Raises:
        ValueError: not a samples file, or rows that are not H * W pixels (names the file).
    """
    try:
        with np.load(path, allow_pickle=False) as npz:
            samples = npz["samples"]
    except (OSError, KeyError, ValueError) as err:
        raise InputError(f"{path} is not an EBM samples file (written by `gradmc run train_ebm`): {err}") from err
    height, width = image_shape
    if samples.ndim != 2 or samples.shape[1] != height * width:
        raise InputError(f"{path} holds samples of shape {samples.shape}, not rows of {height}x{width} pixels")
    return samples.reshape(-1, height, width)
