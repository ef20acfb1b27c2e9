"""Dynamically binarised MNIST (GWG paper Table 2, "Dynamic MNIST"; split of Tomczak & Welling 2018).

The data are the grey IDX files (``mnist/{train,t10k}-{images-idx3,labels-idx1}-ubyte.gz`` in the data
folder). Training images stay grey and are re-binarised every time they are used (every epoch /
batch) with :func:`dynamic_binarize`, drawing ``x ~ Bernoulli(grey / 255)`` with the run's torch
generator; validation and test images are binarised once, with a fixed seed, when the data set is
prepared (``gradmc.data.prepare_images``). Standard split: the first 50,000 training images train, the
last 10,000 validate, the 10,000 ``t10k`` images test.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

import numpy as np
import torch

from gradmc.data import registry
from gradmc.data.download import fetch
from gradmc.data.image_common import folder
from gradmc.data.mnist import load_idx_images, load_idx_labels
from gradmc.data.registry import RemoteFile
from gradmc.errors import DataError

__all__ = ["NUM_TRAIN", "NUM_VALID", "dynamic_binarize", "mnist_grey_paths", "load_mnist_grey"]

NUM_TRAIN = 50_000  # first 50,000 canonical training images
NUM_VALID = 10_000  # last 10,000 canonical training images


def dynamic_binarize(
    grey_batch: torch.Tensor | np.ndarray,
    generator: torch.Generator,
    *,
    dtype: torch.dtype = torch.float32,
) -> torch.Tensor:
    """One Bernoulli draw per pixel: ``x ~ Bernoulli(grey / 255)`` (dynamic binarisation).

    Args:
        grey_batch: grey levels, any shape (e.g. (B, 28, 28) or (B, 784)), an integer tensor/array with
            values 0..255 (uint8 as stored by the loaders).
        generator: the run's ``torch.Generator`` (``gradmc.seeding.make_generator``), on the device of
            ``grey_batch``; consecutive calls give fresh draws, the same seed the same draws.
        dtype: dtype of the result.

    Returns:
        A tensor of ``grey_batch``'s shape and device with values in {0, 1}; grey 0 always gives 0 and
        grey 255 always 1.

    Raises:
        TypeError: ``grey_batch`` is not an integer tensor/array, or ``generator`` is not a Generator.
        ValueError: a value outside 0..255, or generator and data on different devices.
    """
    grey = torch.from_numpy(np.ascontiguousarray(grey_batch)) if isinstance(grey_batch, np.ndarray) else grey_batch
    if not isinstance(grey, torch.Tensor) or grey.dtype.is_floating_point or grey.dtype.is_complex \
            or grey.dtype == torch.bool:
        raise TypeError(f"grey_batch must be an integer tensor or array of levels 0..255, got "
                        f"{getattr(grey_batch, 'dtype', type(grey_batch))}")
    if not isinstance(generator, torch.Generator):
        raise TypeError(f"generator must be a torch.Generator, got {type(generator).__name__}")
    if grey.numel() and (int(grey.min()) < 0 or int(grey.max()) > 255):
        raise ValueError(f"grey levels must be in 0..255, got {int(grey.min())}..{int(grey.max())}")
    if generator.device.type != grey.device.type:
        raise ValueError(f"generator is on {generator.device} but grey_batch on {grey.device}")
    prob = grey.to(torch.float32) / 255.0
    return torch.bernoulli(prob, generator=generator).to(dtype)


def mnist_grey_paths(
    data_dir: str | os.PathLike | None = None,
    split: str = "train",
    *,
    allow_download: bool = False,
    base_url: str | None = None,
    remotes: Mapping[str, RemoteFile] | None = None,
) -> tuple[os.PathLike, os.PathLike]:
    """Verified paths of the canonical images and labels IDX files of ``split`` ("train" or "test").

    ``remotes`` replaces ``registry.MNIST_IDX`` (keys ``{split}_images``, ``{split}_labels``), e.g. for a
    mirror that re-packs the files or for tests with tiny files.

    Raises:
        ValueError: unknown split, or a file failing verification.
        FileNotFoundError: a file missing (and not downloaded); names it, its path and its URL.
    """
    if split not in ("train", "test"):
        raise ValueError(f"split must be 'train' or 'test' (the IDX files), got {split!r}")
    table = registry.MNIST_IDX if remotes is None else remotes
    where = folder(data_dir)
    return tuple(  # type: ignore[return-value]
        fetch(table[f"{split}_{kind}"], where, allow_download=allow_download, base_url=base_url)
        for kind in ("images", "labels")
    )


def load_mnist_grey(
    data_dir: str | os.PathLike | None = None,
    split: str = "train",
    *,
    allow_download: bool = False,
    base_url: str | None = None,
    remotes: Mapping[str, RemoteFile] | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Grey MNIST from the canonical IDX files.

    Args:
        split: "train" (all 60,000 canonical training images; :data:`NUM_TRAIN` / :data:`NUM_VALID`
            give the standard train/validation cut) or "test" (the 10,000 ``t10k`` images).
        remotes: see :func:`mnist_grey_paths`.

    Returns:
        images: (N, 28, 28) uint8 grey levels 0..255 (255 = full ink); labels: (N,) int64 digits.

    Raises:
        ValueError: unknown split, verification failure, malformed IDX, or images/labels counts differ.
        FileNotFoundError: a file missing (and not downloaded); names it and where to get it.
    """
    images_path, labels_path = mnist_grey_paths(data_dir, split, allow_download=allow_download,
                                                base_url=base_url, remotes=remotes)
    images, labels = load_idx_images(images_path), load_idx_labels(labels_path)
    if images.shape[0] != labels.shape[0]:
        raise DataError(f"{images_path} has {images.shape[0]} images but {labels_path} {labels.shape[0]} labels")
    if labels.size and labels.max() > 9:
        raise DataError(f"{labels_path}: labels must be digits 0..9, found {labels.max()}")
    return images, labels
