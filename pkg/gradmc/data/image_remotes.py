"""Registry entries (``RemoteFile``) for the image data sets of the GWG paper's Table 2 (Sec. 5.5, App. I).

Static and dynamic MNIST use the entries of ``gradmc.data.registry`` (``STATIC_*``, ``MNIST_IDX``).
Digests: sha256 and size come from ``../shared/data/MANIFEST.tsv`` where we hold the file; the others
are ``None`` (unknown here), so ``download.fetch`` records the digest of the first download in
``<file>.sha256`` (trust on first use) and enforces it afterwards.

``IMAGE_REMOTES`` maps each entry's ``name`` to it, ready to be merged into ``registry.REGISTRY``.
"""

from __future__ import annotations

from gradmc.data.registry import RemoteFile

__all__ = [
    "OMNIGLOT_CHARDATA",
    "OMNIGLOT_NPZ",
    "OMNIGLOT_ZIPS",
    "CALTECH_MAT",
    "FREY_MAT",
    "FREY_NPZ",
    "HISTOPATHOLOGY_PKL",
    "HISTOPATHOLOGY_TGZ",
    "IMAGE_REMOTES",
]

_MANIFEST = "sha256 and size from ../shared/data/MANIFEST.tsv"
_LAKE = "https://github.com/brendenlake/omniglot/raw/master/python"
_LAKE_RAW = "https://raw.githubusercontent.com/brendenlake/omniglot/master/python"

OMNIGLOT_CHARDATA = RemoteFile(
    name="omniglot_chardata",
    relpath="omniglot/chardata.mat",
    url="https://raw.githubusercontent.com/yburda/iwae/master/datasets/OMNIGLOT/chardata.mat",
    sha256=None,
    size=None,
    source_note="28x28 Omniglot of Burda et al. (2016), MATLAB v5 file: 'data' (784, 24345) and 'testdata' "
    "(784, 8070), float in [0, 1], one column-major image per column; sha256 unknown here (third-party "
    "loaders quote md5 21ecaf34373511aa7691cf2e0802aa3d)",
)

OMNIGLOT_NPZ: dict[str, RemoteFile] = {
    "background": RemoteFile(
        name="omniglot_background_npz",
        relpath="omniglot/images_background.npz",
        url=None,
        sha256="8bf84167413cd00beacdce3fe582f780ab538d8dbef043a6d688f2527bbce199",
        size=3340794,
        source_note="our conversion of images_background.zip: 'images' bool (964, 20, 105, 105), True = "
        f"background; 'labels' (964, 20); {_MANIFEST}",
    ),
    "evaluation": RemoteFile(
        name="omniglot_evaluation_npz",
        relpath="omniglot/images_evaluation.npz",
        url=None,
        sha256="0b84c7ffd94c4841c0040e529c86a82eaaccb986d8eadad5673f7991b7475276",
        size=2415269,
        source_note="our conversion of images_evaluation.zip: 'images' bool (659, 20, 105, 105), True = "
        f"background; 'labels' (659, 20); {_MANIFEST}",
    ),
}

_ZIP_DIGESTS = {
    "images_background.zip": (None, None),
    "images_evaluation.zip": (None, None),
    "images_background_small1.zip": ("f38eb80f801274ac2b4dff5b24289016bfaba4a7d5bb50deebf27104ad6cb8a4", 1319022),
    "images_background_small2.zip": ("3ccaa407515a8778e5d0861875af38b17e418f301ad5bb3b5a6b65d901a41c7f", 1580917),
}

OMNIGLOT_ZIPS: dict[str, RemoteFile] = {
    fname: RemoteFile(
        name="omniglot_" + fname.removesuffix(".zip").removeprefix("images_") + "_zip",
        relpath=f"omniglot/{fname}",
        url=f"{_LAKE}/{fname}",
        mirrors=(f"{_LAKE_RAW}/{fname}",),
        sha256=sha,
        size=size,
        source_note="original Omniglot PNG distribution (Lake et al. 2015): 105x105 1-bit PNGs in "
        "<top>/<alphabet>/<character>/ folders; " + (_MANIFEST if sha else "digest unknown here"),
    )
    for fname, (sha, size) in _ZIP_DIGESTS.items()
}

CALTECH_MAT = RemoteFile(
    name="caltech101_silhouettes_28",
    relpath="caltech/caltech101_silhouettes_28_split1.mat",
    url="https://people.cs.umass.edu/~marlin/data/caltech101_silhouettes_28_split1.mat",
    sha256=None,
    size=None,
    source_note="Caltech-101 Silhouettes 28x28 split 1 (Marlin et al. 2010): train_data (4100, 784), "
    "val_data (2264, 784), test_data (2307, 784) in {0, 1}, column-major rows; digest unknown here",
)

FREY_MAT = RemoteFile(
    name="frey_rawface",
    relpath="frey_rawface.mat",
    url="https://cs.nyu.edu/~roweis/data/frey_rawface.mat",
    mirrors=("http://www.cs.nyu.edu/~roweis/data/frey_rawface.mat",),
    sha256=None,
    size=None,
    source_note="Frey faces (Roweis): 'ff' uint8 (560, 1965), one 28x20 row-major image per column; no "
    "published digest: verified by the digest of the decoded (1965, 28, 20) uint8 images, computed from "
    "frey_faces_uint8.npz of ../shared/data",
    decoded_sha256="b7fb6085f5ce7b09b14cd0136165a2993a9b98bd3adb24cbc2fa62267b0c3886",
    decoder="gradmc.data.frey:parse_frey",
)

FREY_NPZ = RemoteFile(
    name="frey_faces_npz",
    relpath="frey_faces_uint8.npz",
    url=None,
    sha256="3c70375e0a9c4751ad49ad5f1f692bd094c46f133cf4aa8ea77d1cb14e1efcd1",
    size=996890,
    source_note=f"our conversion of frey_rawface.mat: 'images' uint8 (1965, 28, 20); {_MANIFEST}",
)

HISTOPATHOLOGY_TGZ = RemoteFile(
    name="histopathology_tgz",
    relpath="histopathology/histopathology.pkl.tar.gz",
    url="https://github.com/jmtomczak/vae_householder_flow/raw/master/datasets/histopathologyGray/"
    "histopathology.pkl.tar.gz",
    sha256=None,
    size=None,
    source_note="grey 28x28 Histopathology patches (Tomczak & Welling 2016), a gzipped tar holding "
    "histopathology.pkl (latin-1 pickle, keys training/validation/test); digest unknown here",
)

HISTOPATHOLOGY_PKL = RemoteFile(
    name="histopathology_pkl",
    relpath="histopathology/histopathology.pkl",
    url=None,
    sha256=None,
    size=None,
    source_note="histopathology.pkl extracted from histopathology.pkl.tar.gz by the user; digest unknown here",
)

IMAGE_REMOTES: dict[str, RemoteFile] = {
    r.name: r
    for r in (
        OMNIGLOT_CHARDATA,
        *OMNIGLOT_NPZ.values(),
        *OMNIGLOT_ZIPS.values(),
        CALTECH_MAT,
        FREY_MAT,
        FREY_NPZ,
        HISTOPATHOLOGY_TGZ,
        HISTOPATHOLOGY_PKL,
    )
}
