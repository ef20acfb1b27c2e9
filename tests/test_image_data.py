"""Image data sets of GWG Table 2: loaders on the real files in ../shared/data and on tiny files written here in
each canonical layout, verified downloads (from a local http.server only), and prepare_image_dataset."""

from __future__ import annotations

import dataclasses
import gzip
import hashlib
import io
import json
import os
import pickle
import shutil
import tarfile
import zipfile
from pathlib import Path

import numpy as np
import pytest
import scipy.io
import torch
from _localdata import serve
from PIL import Image

from gradmc.data import caltech, download, dynamic_mnist, frey, histopathology, mnist, omniglot, registry
from gradmc.data import image_remotes as ir
from gradmc.data.image_common import column_major_to_images, fetch_and_parse, unit_to_levels
from gradmc.data.image_splits import split_by_character
from gradmc.data.prepare_images import load_prepared_images, prepare_image_dataset
from gradmc.errors import DataError, InputError, MissingDataError
from gradmc.seeding import make_generator

pytestmark = pytest.mark.usefixtures("download_env")
SMALL = ("images_background_small1.zip", "images_background_small2.zip")


@pytest.fixture(scope="module")
def shared_url(shared):
    with serve(shared) as url:
        yield url


@pytest.fixture(scope="module")
def small1(shared):
    return omniglot.read_omniglot_zip(shared / "omniglot" / SMALL[0])


def _files(folder: Path) -> set[str]:
    return {p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file()}


def _sha(path: Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def _grey(n, shape=(28, 28), seed=0):
    """Random grey images with many exact 0 and 255 pixels."""
    x = np.random.default_rng(seed).integers(0, 256, size=(n, *shape), dtype=np.uint8)
    x[x < 60], x[x > 200] = 0, 255
    return x


def _write_idx(path: Path, arr: np.ndarray) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    header = (0x0800 | arr.ndim).to_bytes(4, "big") + b"".join(d.to_bytes(4, "big") for d in arr.shape)
    path.write_bytes(gzip.compress(header + arr.astype(np.uint8).tobytes()))


def _savemat(path: Path, arrays: dict) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    scipy.io.savemat(path, arrays)
    return path


# --- registry, layout helpers, dynamic binarisation -------------------------------------------------


def test_image_remotes_match_manifest(shared):
    rows = [line.split("\t") for line in (shared / "MANIFEST.tsv").read_text().splitlines() if line]
    manifest = {path: (int(size), sha) for size, sha, path in rows}
    held = [r for r in ir.IMAGE_REMOTES.values() if r.relpath in manifest]
    assert {r.relpath for r in held} == {"frey_faces_uint8.npz", "omniglot/images_background.npz",
                                         "omniglot/images_evaluation.npz", *(f"omniglot/{z}" for z in SMALL)}
    for r in ir.IMAGE_REMOTES.values():
        assert (r.size, r.sha256) == manifest.get(r.relpath, (None, None)), r.name
    import gradmc.data  # noqa: F401 - merges IMAGE_REMOTES into the registry

    assert all(registry.REGISTRY[name] is r for name, r in ir.IMAGE_REMOTES.items())  # merged, not shadowed
    relpaths = [r.relpath for r in registry.REGISTRY.values()]
    assert len(relpaths) == len(set(relpaths))  # no file registered twice


def test_column_major_layout_and_levels():
    img = np.arange(12).reshape(3, 4)
    np.testing.assert_array_equal(column_major_to_images(img.ravel(order="F")[None], 3, 4)[0], img)
    np.testing.assert_array_equal(unit_to_levels(np.array([0, 0.3, 0.7, 128, 255]) / 255), [0, 0, 1, 128, 255])
    for bad, what in ((np.array([1.01]), r"\[0, 1\]"), (np.array([np.nan]), "finite"), (np.array([256]), "0..255")):
        with pytest.raises(DataError, match=what):
            unit_to_levels(bad, where="x")
    with pytest.raises(DataError, match=r"\(N, 784\)"):
        column_major_to_images(np.zeros((2, 783)))


def test_dynamic_binarize_is_bernoulli_grey_over_255():
    levels = torch.tensor([0, 1, 64, 128, 200, 254, 255], dtype=torch.uint8)
    n = 40_000
    x = dynamic_mnist.dynamic_binarize(levels.repeat(n, 1), make_generator(1))
    assert x.shape == (n, 7) and x.dtype == torch.float32 and set(x.unique().tolist()) <= {0.0, 1.0}
    p, mean = levels.double() / 255, x.double().mean(0)
    assert mean[0] == 0 and mean[-1] == 1  # grey 0 never, grey 255 always
    assert ((mean - p).abs() <= 5 * (p * (1 - p) / n).sqrt()).all(), (mean, p)
    grey = _grey(8)
    a = dynamic_mnist.dynamic_binarize(grey, make_generator(5), dtype=torch.uint8)
    gen = make_generator(5)
    b, c = dynamic_mnist.dynamic_binarize(torch.from_numpy(grey), gen), dynamic_mnist.dynamic_binarize(grey, gen)
    assert a.dtype == torch.uint8 and torch.equal(a.float(), b)  # same seed, same draw (numpy or torch input)
    assert not torch.equal(b, c)  # the next epoch gets a fresh draw
    with pytest.raises(TypeError, match="integer"):
        dynamic_mnist.dynamic_binarize(torch.rand(3), make_generator(0))
    with pytest.raises(ValueError, match="0..255"):
        dynamic_mnist.dynamic_binarize(torch.tensor([256]), make_generator(0))
    with pytest.raises(TypeError, match="Generator"):
        dynamic_mnist.dynamic_binarize(grey, 0)


# --- MNIST (grey IDX) -------------------------------------------------------------------------------


def test_mnist_grey_t10k_and_missing_train(shared):
    images, labels = dynamic_mnist.load_mnist_grey(shared, "test")
    assert images.shape == (10000, 28, 28) and images.dtype == np.uint8
    np.testing.assert_array_equal(images, mnist.load_idx_images(shared / "mnist/t10k-images-idx3-ubyte.gz"))
    assert tuple(np.bincount(labels)) == mnist.STATIC_TEST_CLASS_COUNTS
    with pytest.raises(MissingDataError, match="train-images-idx3-ubyte.gz not found") as err:
        dynamic_mnist.load_mnist_grey(shared, "train")
    assert registry.MNIST_IDX["train_images"].url in str(err.value)
    with pytest.raises(ValueError, match="split"):
        dynamic_mnist.load_mnist_grey(shared, "valid")


def _tofu_mnist():
    tofu = {"sha256": None, "size": None, "content_sha256": None}
    return {k: dataclasses.replace(r, **tofu) for k, r in registry.MNIST_IDX.items()}


def test_mnist_grey_reads_canonical_train_layout(tmp_path):
    grey, labels = _grey(7), np.arange(7) % 10
    _write_idx(tmp_path / "mnist/train-images-idx3-ubyte.gz", grey)
    _write_idx(tmp_path / "mnist/train-labels-idx1-ubyte.gz", labels)
    images, got = dynamic_mnist.load_mnist_grey(tmp_path, "train", remotes=_tofu_mnist())
    np.testing.assert_array_equal(images, grey)
    np.testing.assert_array_equal(got, labels)
    with pytest.raises(DataError, match="train-images-idx3-ubyte.gz .*not the registered file"):
        dynamic_mnist.load_mnist_grey(tmp_path, "train")  # the real entries' size/sha256 are enforced
    _write_idx(tmp_path / "mnist/train-labels-idx1-ubyte.gz", labels[:6])
    with pytest.raises(DataError, match="7 images but .* 6 labels"):
        dynamic_mnist.load_mnist_grey(tmp_path, "train", remotes=_tofu_mnist())


# --- Omniglot ---------------------------------------------------------------------------------------


def test_chardata_layout(tmp_path):
    train, test = _grey(6, seed=1), _grey(3, seed=2)
    cols = {k: np.stack([im.ravel(order="F") for im in x], axis=1) / 255.0 for k, x in (("data", train),
                                                                                       ("testdata", test))}
    _savemat(tmp_path / "omniglot/chardata.mat", cols)
    out = omniglot.load_omniglot_chardata(tmp_path)
    np.testing.assert_array_equal(out["train"], train)
    np.testing.assert_array_equal(out["test"], test)
    papers = np.rint(cols["data"].T.reshape(-1, 28, 28).reshape(-1, 784, order="F") * 255)  # VAE/GWG recipe
    np.testing.assert_array_equal(out["train"].reshape(-1, 784), papers)
    for arrays, what in (({"data": cols["data"][:783], "testdata": cols["testdata"]}, r"\(784, N\)"),
                         ({"data": cols["data"]}, r"missing key\(s\) \['testdata'\]"),
                         ({"data": 2 * cols["data"], "testdata": cols["testdata"]}, r"\[0, 1\]")):
        with pytest.raises(DataError, match=what):
            omniglot.parse_chardata(_savemat(tmp_path / "bad.mat", arrays))


def test_omniglot_zip_matches_npz_pixel_for_pixel(shared, small1):
    ink, names = small1
    assert ink.shape == (2720, 105, 105) and ink.dtype == bool and names[0] == "Balinese/character01/0108_01.png"
    with np.load(shared / "omniglot/images_background.npz", allow_pickle=False) as npz:
        background = npz["images"]
    index = {hashlib.sha1((~img).tobytes()).digest(): (c, d) for c, imgs in enumerate(background)
             for d, img in enumerate(imgs)}
    found = [index.get(hashlib.sha1(img.tobytes()).digest()) for img in ink]
    assert None not in found
    by_char: dict[str, list] = {}
    for name, cd in zip(names, found, strict=True):
        by_char.setdefault(name.rsplit("/", 1)[0], []).append(cd)
    assert len(by_char) == 136
    for pairs in by_char.values():  # a zip character's 20 drawings are one npz character's, in order
        assert len({c for c, _ in pairs}) == 1 and [d for _, d in pairs] == list(range(20))


def _box_weights(n_in=105, n_out=28):
    centres, edges = np.arange(n_in) + 0.5, np.arange(n_out + 1) * n_in / n_out
    w = ((centres > edges[:-1, None]) & (centres <= edges[1:, None])).astype(float)
    return w / w.sum(1, keepdims=True)


def test_resize_box_is_mean_ink_of_footprint(small1):
    ink = small1[0][:200]
    w = _box_weights()
    expected = np.rint(255 * (w @ ink.astype(float) @ w.T))
    got = omniglot.resize_ink(ink)
    assert got.shape == (200, 28, 28) and np.abs(got.astype(int) - expected).max() <= 1
    assert (omniglot.resize_ink(np.ones((1, 105, 105), bool)) == 255).all()
    assert omniglot.resize_ink(ink[:2], resample="lanczos").shape == (2, 28, 28)
    with pytest.raises(InputError, match="resample"):
        omniglot.resize_ink(ink[:1], resample="nearest")
    with pytest.raises(ValueError, match="values in"):
        omniglot.resize_ink(np.full((1, 105, 105), 2))


def test_omniglot_npz_and_zip_errors(shared, tmp_path):
    images, labels = omniglot.load_omniglot_npz(shared, "evaluation")
    with np.load(shared / "omniglot/images_evaluation.npz", allow_pickle=False) as npz:
        ink_fraction = 1 - npz["images"].mean()
    assert images.shape == (13180, 28, 28) and images.dtype == np.uint8
    np.testing.assert_array_equal(labels, np.repeat(np.arange(659), 20))
    assert abs(images.mean() / 255 - ink_fraction) < 0.003
    png = {}
    for k in (0, 1):
        buf = io.BytesIO()
        Image.fromarray(np.full((105, 105), 255 * k, np.uint8)).convert("1").save(buf, format="PNG")
        png[k] = buf.getvalue()
    for zname, k in (("images_background.zip", 0), ("images_evaluation.zip", 1)):
        (tmp_path / "omniglot").mkdir(exist_ok=True)
        with zipfile.ZipFile(tmp_path / "omniglot" / zname, "w") as zf:
            zf.writestr("top/Alpha/character01/0001_01.png", png[k])
    with pytest.raises(DataError, match="Alpha/character01/0001_01.png differs"):
        omniglot.load_omniglot_zips(tmp_path)
    with pytest.raises(InputError, match="known"):
        omniglot.load_omniglot_zips(tmp_path, ("images_background_small3.zip",))
    with zipfile.ZipFile(tmp_path / "broken.zip", "w") as zf:
        zf.writestr("top/Alpha/character01/0001_01.png", b"not a png")
    with pytest.raises(DataError, match="cannot decode top/Alpha/character01/0001_01.png"):
        omniglot.read_omniglot_zip(tmp_path / "broken.zip")
    with pytest.raises(DataError, match="not a readable zip"):
        omniglot.read_omniglot_zip(__file__)


# --- Caltech, Frey, Histopathology ------------------------------------------------------------------


def _caltech_file(folder: Path, sizes=(4, 2, 3), seed=0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    sil = {s: rng.integers(0, 2, size=(n, 28, 28), dtype=np.uint8)
           for s, n in zip(caltech.CALTECH_KEYS, sizes, strict=True)}
    rows = {key: (1.0 - sil[s]).reshape(len(sil[s]), -1, order="F") for s, key in caltech.CALTECH_KEYS.items()}
    _savemat(folder / ir.CALTECH_MAT.relpath, rows)  # 0 = silhouette, column-major rows, doubles
    return sil


def test_caltech_layout(tmp_path):
    sil = _caltech_file(tmp_path)
    out = caltech.load_caltech(tmp_path)
    for s in sil:
        assert out[s].dtype == np.uint8
        np.testing.assert_array_equal(out[s], sil[s])
    with pytest.raises(DataError, match="binary"):
        caltech.parse_caltech(_savemat(tmp_path / "b.mat", {"train_data": np.full((1, 784), 0.5),
                                                            "val_data": np.zeros((1, 784)),
                                                            "test_data": np.zeros((1, 784))}))
    with pytest.raises(DataError, match=r"missing key\(s\) \['val_data'"):
        caltech.parse_caltech(_savemat(tmp_path / "c.mat", {"train_data": np.zeros((1, 784))}))


def test_frey_real_npz_and_mat_layout(shared, tmp_path):
    faces = frey.load_frey_faces(shared)
    assert faces.shape == (1965, 28, 20) and faces.dtype == np.uint8 and (faces.min(), faces.max()) == (8, 238)
    f = faces.astype(float)  # faces are left-right symmetric: the rows of the layout run top to bottom
    assert np.abs(f - f[:, :, ::-1]).mean() < 0.7 * np.abs(f - f[:, ::-1, :]).mean()
    _savemat(tmp_path / "frey_rawface.mat", {"ff": faces.reshape(-1, 560).T})  # one image per column
    assert frey.frey_remote(tmp_path) is ir.FREY_MAT and frey.frey_remote(shared) is ir.FREY_NPZ
    np.testing.assert_array_equal(frey.load_frey_faces(tmp_path), faces)  # the decoded digest matches
    ten = _savemat(tmp_path / "ten.mat", {"ff": faces[:10].reshape(10, 560).T})
    np.testing.assert_array_equal(frey.parse_frey(ten), faces[:10])
    with pytest.raises(DataError, match="uint8"):
        frey.parse_frey(_savemat(tmp_path / "bad.mat", {"ff": np.zeros((560, 2))}))
    with pytest.raises(InputError, match="source"):
        frey.load_frey_faces(shared, source="pkl")


def _histo_data(seed=0) -> dict:
    g = {k: _grey(n, seed=seed + n) for k, n in (("training", 5), ("validation", 2), ("test", 3))}
    return {"training": g["training"] / 255.0, "validation": list(g["validation"].reshape(2, 784) / 255.0),
            "test": g["test"] / 255.0}, g


def test_histopathology_opt_in_pickle_and_tar(tmp_path):
    with pytest.raises(InputError, match="allow_pickle=True"):
        histopathology.parse_histopathology(tmp_path / "absent.pkl")  # refused before the file is touched
    with pytest.raises(InputError, match="unpickling can run code"):
        histopathology.load_histopathology(tmp_path)
    data, grey = _histo_data()
    raw = pickle.dumps(data, protocol=2)
    pkl = tmp_path / ir.HISTOPATHOLOGY_PKL.relpath
    pkl.parent.mkdir(parents=True)
    pkl.write_bytes(raw.replace(b"numpy._core.multiarray", b"numpy.core.multiarray"))  # Python 2 / numpy 1 names
    out = histopathology.load_histopathology(tmp_path, allow_pickle=True)
    for split, key in histopathology.HISTOPATHOLOGY_KEYS.items():
        np.testing.assert_array_equal(out[split], grey[key])
    tgz = tmp_path / "t" / ir.HISTOPATHOLOGY_TGZ.relpath
    tgz.parent.mkdir(parents=True)
    with tarfile.open(tgz, "w:gz") as tar:
        info = tarfile.TarInfo("histopathology.pkl")
        info.size = len(raw)
        tar.addfile(info, io.BytesIO(raw))
    np.testing.assert_array_equal(histopathology.load_histopathology(tmp_path / "t", allow_pickle=True)["test"],
                                  grey["test"])


class _RunsCode:
    def __reduce__(self):
        return (os.getcwd, ())


def test_histopathology_refuses_code_and_bad_values(tmp_path):
    data, _ = _histo_data()
    path = tmp_path / "h.pkl"
    path.write_bytes(pickle.dumps({**data, "test": _RunsCode()}, protocol=2))
    with pytest.raises(DataError, match="forbidden global .*getcwd"):
        histopathology.parse_histopathology(path, allow_pickle=True)
    path.write_bytes(pickle.dumps({**data, "test": data["test"] * 1.5}, protocol=2))
    with pytest.raises(DataError, match=r"'test'.*\[0, 1\]"):
        histopathology.parse_histopathology(path, allow_pickle=True)


# --- downloads (127.0.0.1 only) and missing files ---------------------------------------------------


def test_download_checksummed_zip(shared_url, tmp_path):
    remote = ir.OMNIGLOT_ZIPS[SMALL[0]]
    ink, _ = fetch_and_parse(remote, tmp_path, omniglot.read_omniglot_zip, allow_download=True, base_url=shared_url)
    assert ink.shape[0] == 2720 and _files(tmp_path) == {remote.relpath}
    assert _sha(tmp_path / remote.relpath) == remote.sha256
    wrong = dataclasses.replace(remote, sha256="0" * 64)
    with pytest.raises(DataError, match=f"expected sha256 {'0' * 64}"):
        download.fetch(wrong, tmp_path / "w", base_url=shared_url, progress=None)
    assert not (tmp_path / "w").exists() or _files(tmp_path / "w") == set()


def test_truncated_downloads_leave_nothing(shared, tmp_path):
    mirror, dest = tmp_path / "mirror", tmp_path / "data"
    zpath = mirror / ir.OMNIGLOT_ZIPS[SMALL[0]].relpath
    zpath.parent.mkdir(parents=True)
    zpath.write_bytes((shared / "omniglot" / SMALL[0]).read_bytes()[:500_000])
    full = _savemat(tmp_path / "full.mat", {"train_data": np.zeros((50, 784)), "val_data": np.ones((50, 784)),
                                            "test_data": np.zeros((50, 784))}).read_bytes()
    (mirror / "caltech").mkdir()
    (mirror / ir.CALTECH_MAT.relpath).write_bytes(full[: len(full) // 2])
    with serve(mirror) as url:
        with pytest.raises(DataError, match="size 500000 bytes, expected 1319022"):
            omniglot.load_omniglot_zips(dest, SMALL[:1], allow_download=True, base_url=url)
        assert not dest.exists() or _files(dest) == set()
        with pytest.raises(DataError, match="not a readable MATLAB .*removed again"):  # no digest known: TOFU
            caltech.load_caltech(dest, allow_download=True, base_url=url)
        assert _files(dest) == set()
        (mirror / ir.CALTECH_MAT.relpath).write_bytes(full)
        assert caltech.load_caltech(dest, allow_download=True, base_url=url)["valid"].sum() == 0  # 1 - ones
    assert _files(dest) == {ir.CALTECH_MAT.relpath, ir.CALTECH_MAT.relpath + ".sha256"}
    assert (dest / (ir.CALTECH_MAT.relpath + ".sha256")).read_text().split()[0] == hashlib.sha256(full).hexdigest()


@pytest.mark.parametrize("load, remote, also", [
    (omniglot.load_omniglot_chardata, ir.OMNIGLOT_CHARDATA, None),
    (lambda d: omniglot.load_omniglot_zips(d), ir.OMNIGLOT_ZIPS["images_background.zip"], None),
    (caltech.load_caltech, ir.CALTECH_MAT, None),
    (frey.load_frey_faces, ir.FREY_MAT, "frey_faces_uint8.npz is also accepted"),
    (lambda d: histopathology.load_histopathology(d, allow_pickle=True), ir.HISTOPATHOLOGY_TGZ, "histopathology.pkl"),
    (lambda d: dynamic_mnist.load_mnist_grey(d, "test"), registry.MNIST_IDX["test_images"], None),
])
def test_missing_file_names_it_and_its_source(tmp_path, load, remote, also):
    with pytest.raises(MissingDataError) as err:
        load(tmp_path)
    msg = str(err.value)
    assert f"{remote.filename} not found at {tmp_path / remote.relpath} " in msg and remote.url in msg
    assert "--download" in msg and (also is None or also in msg)
    assert _files(tmp_path) == set()


def test_missing_npz_points_to_canonical_file(tmp_path):
    with pytest.raises(MissingDataError, match="images_background.npz not found") as err:
        omniglot.load_omniglot_npz(tmp_path)
    assert ir.OMNIGLOT_CHARDATA.url in str(err.value)
    with pytest.raises(MissingDataError, match="frey_faces_uint8.npz not found") as err:
        frey.load_frey_faces(tmp_path, source="npz")
    assert ir.FREY_MAT.url in str(err.value)


# --- prepare_image_dataset --------------------------------------------------------------------------


def _check_written(out: Path, manifest: dict) -> dict[str, np.ndarray]:
    assert json.loads(out.with_name(out.name + ".json").read_text()) == manifest
    assert manifest["sha256"] == _sha(out) and manifest["file"] == out.name
    splits, inner = load_prepared_images(out)
    assert inner == {k: v for k, v in manifest.items() if k not in ("file", "sha256")}
    for s, x in splits.items():
        assert x.dtype == np.uint8 and manifest["splits"][s]["shape"] == list(x.shape)
        assert manifest["splits"][s]["mean"] == pytest.approx(x.mean())
    return splits


def test_prepare_static_mnist(shared, tmp_path):
    out = tmp_path / "static.npz"
    m = prepare_image_dataset("static_mnist", out, data_dir=shared, max_train=1000)
    splits = _check_written(out, m)
    assert (m["levels"], m["binarization"], m["source"], m["image_shape"]) == (2, "static", "npz", [28, 28])
    assert m["inputs"] == [{"file": "binarized_mnist_static.npz", "sha256": registry.STATIC_NPZ.sha256,
                            "bytes": registry.STATIC_NPZ.size}]
    assert [m["splits"][s]["shape"][0] for s in ("train", "valid", "test")] == [1000, 10000, 10000]
    full = mnist.load_static_binarized(shared, "train")
    rows = {r.tobytes(): i for i, r in enumerate(full)}
    idx = [rows[r.tobytes()] for r in splits["train"].reshape(1000, 784)]
    assert idx == sorted(idx)  # a subset of the training rows, in their original order
    np.testing.assert_array_equal(splits["test"].reshape(-1, 784), mnist.load_static_binarized(shared, "test"))


def test_prepare_frey(shared, tmp_path):
    m = prepare_image_dataset("frey", tmp_path / "frey.npz", data_dir=shared)
    splits = _check_written(tmp_path / "frey.npz", m)
    assert (m["levels"], m["binarization"], m["image_shape"]) == (256, "none", [28, 20])
    assert [len(splits[s]) for s in ("train", "valid", "test")] == [1565, 200, 200]
    assert m["inputs"][0]["sha256"] == ir.FREY_NPZ.sha256
    faces = frey.load_frey_faces(shared)
    joined = np.concatenate([splits[s] for s in ("train", "valid", "test")])
    assert sorted(map(bytes, joined)) == sorted(map(bytes, faces))  # a partition of all 1965 faces
    again = prepare_image_dataset("frey", tmp_path / "again.npz", data_dir=shared)
    other = prepare_image_dataset("frey", tmp_path / "other.npz", data_dir=shared, seed=1)
    assert again["splits"] == m["splits"] and again["sha256"] != other["sha256"]
    np.testing.assert_array_equal(load_prepared_images(tmp_path / "again.npz")[0]["test"], splits["test"])


def test_prepare_dynamic_mnist_idx(shared, tmp_path, monkeypatch):
    for key, remote in _tofu_mnist().items():
        monkeypatch.setitem(registry.MNIST_IDX, key, remote)
    grey = _grey(30, seed=3)
    _write_idx(tmp_path / "mnist/train-images-idx3-ubyte.gz", grey)
    _write_idx(tmp_path / "mnist/train-labels-idx1-ubyte.gz", np.zeros(30, np.uint8))
    for f in ("t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz"):
        shutil.copy(shared / "mnist" / f, tmp_path / "mnist" / f)
    m = prepare_image_dataset("dynamic_mnist", tmp_path / "d.npz", data_dir=tmp_path, n_valid=10)
    splits = _check_written(tmp_path / "d.npz", m)
    assert (m["levels"], m["binarization"], m["stored_levels"]) == (2, "dynamic", {"train": 256, "valid": 2, "test": 2})
    np.testing.assert_array_equal(splits["train"], grey[:20])
    valid = splits["valid"]
    assert set(np.unique(valid)) == {0, 1}
    assert (valid[grey[20:] == 0] == 0).all() and (valid[grey[20:] == 255] == 1).all()
    test_grey = mnist.load_idx_images(shared / "mnist/t10k-images-idx3-ubyte.gz")
    assert abs(splits["test"].mean() - test_grey.mean() / 255) < 0.002  # one Bernoulli(grey/255) draw
    same = prepare_image_dataset("dynamic_mnist", tmp_path / "e.npz", data_dir=tmp_path, n_valid=10)
    assert same["splits"] == m["splits"]
    assert [i["sha256"] for i in m["inputs"]] == [_sha(tmp_path / "mnist/train-images-idx3-ubyte.gz"),
                                                  _sha(shared / "mnist/t10k-images-idx3-ubyte.gz")]


def test_prepare_omniglot_zip_and_chardata(shared, tmp_path):
    m = prepare_image_dataset("omniglot", tmp_path / "o.npz", data_dir=shared, source="zip", zips=SMALL,
                              valid_chars=10, test_chars=40)
    splits = _check_written(tmp_path / "o.npz", m)
    # 2720 + 3120 drawings, 1000 of them (Greek, Latin) in both zips and kept once: 242 characters
    assert [len(splits[s]) for s in ("train", "valid", "test")] == [192 * 20, 10 * 20, 40 * 20]
    assert splits["train"].max() == 255 and splits["test"].max() == 1 and m["stored_levels"]["train"] == 256
    labels = np.repeat(np.arange(12), 20)
    parts = split_by_character(labels, labels, {"valid_chars": 2, "test_chars": 3}, seed=0)
    assert [len(set(parts[s])) for s in ("train", "valid", "test")] == [7, 2, 3]
    assert not set(parts["train"]) & (set(parts["valid"]) | set(parts["test"]))
    train = _grey(30, seed=7)
    _savemat(tmp_path / "c/omniglot/chardata.mat", {"data": np.stack([x.ravel(order="F") for x in train], 1) / 255,
                                                    "testdata": np.zeros((784, 5))})
    m = prepare_image_dataset("omniglot", tmp_path / "c.npz", data_dir=tmp_path / "c", n_valid=5)
    splits = _check_written(tmp_path / "c.npz", m)
    assert [len(splits[s]) for s in ("train", "valid", "test")] == [25, 5, 5] and m["source"] == "chardata"
    assert {x.tobytes() for x in splits["train"]} < {x.tobytes() for x in train}


def test_prepare_caltech_and_histopathology(tmp_path):
    sil = _caltech_file(tmp_path)
    m = prepare_image_dataset("caltech", tmp_path / "cal.npz", data_dir=tmp_path)
    splits = _check_written(tmp_path / "cal.npz", m)
    for s in sil:
        np.testing.assert_array_equal(splits[s], sil[s])
    assert m["inputs"][0]["sha256"] == _sha(tmp_path / ir.CALTECH_MAT.relpath) and m["levels"] == 2
    data, grey = _histo_data()
    (tmp_path / "histopathology").mkdir()
    (tmp_path / ir.HISTOPATHOLOGY_PKL.relpath).write_bytes(pickle.dumps(data, protocol=2))
    with pytest.raises(InputError, match="allow_pickle=True"):
        prepare_image_dataset("histopathology", tmp_path / "h.npz", data_dir=tmp_path)
    assert not (tmp_path / "h.npz").exists()
    m = prepare_image_dataset("histopathology", tmp_path / "h.npz", data_dir=tmp_path, allow_pickle=True)
    splits = _check_written(tmp_path / "h.npz", m)
    assert (m["levels"], m["binarization"]) == (256, "none")
    np.testing.assert_array_equal(splits["valid"], grey["validation"])


def test_prepare_errors(tmp_path):
    with pytest.raises(InputError, match="allowed: static_mnist, dynamic_mnist, omniglot, caltech, frey, histo"):
        prepare_image_dataset("cifar", tmp_path / "x.npz")
    with pytest.raises(InputError, match=r"unknown option\(s\) \['n_test'\] for caltech"):
        prepare_image_dataset("caltech", tmp_path / "x.npz", n_test=3)
    with pytest.raises(InputError, match="max_train"):
        prepare_image_dataset("caltech", tmp_path / "x.npz", max_train=0)
    with pytest.raises(MissingDataError, match="caltech101_silhouettes_28_split1.mat not found"):
        prepare_image_dataset("caltech", tmp_path / "out/x.npz", data_dir=tmp_path)
    assert _files(tmp_path) == set()
    np.savez(tmp_path / "plain.npz", train=np.zeros(3))
    with pytest.raises(InputError, match="no 'manifest'"):
        load_prepared_images(tmp_path / "plain.npz")


@pytest.mark.slow
def test_prepare_omniglot_npz_full(shared, tmp_path):
    m = prepare_image_dataset("omniglot", tmp_path / "o.npz", data_dir=shared, source="npz")
    _check_written(tmp_path / "o.npz", m)
    assert [m["splits"][s]["shape"][0] for s in ("train", "valid", "test")] == [23040, 1340, 8080]
