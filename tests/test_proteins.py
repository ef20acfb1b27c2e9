"""Protein data for A6: A2M reader, sequence weights, contact metrics and loaders, against hand-computed
answers, brute-force loops and the real files in ../shared/data/protein/persistent-vi."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch

from gradmc.proteins import (
    ALPHABET,
    GAP,
    apc,
    contact_curve,
    contact_map,
    coupling_norms,
    decode,
    load_evcouplings_protein,
    load_pf00018,
    load_protein,
    load_synthetic_potts,
    neff,
    one_hot,
    precision_at_k,
    rank_pairs,
    read_a2m,
    sequence_weights,
)
from gradmc.targets import Potts


@pytest.fixture(scope="module")
def shared(real_data):
    """The canonical files these tests read: ../shared/data, else fetched (see conftest.real_data)."""
    return real_data("pf00018", "potts_synthetic")

PVI = "protein/persistent-vi"


def _enc(s: str) -> list[int]:
    return [ALPHABET.index(c) for c in s]


def _write(tmp_path, text: str, name: str = "ali.a2m"):
    p = tmp_path / name
    p.write_text(text)
    return p


# ----------------------------------------------------------------------------------------- alignment
A2M = """>seq1 first record
ACDe.FG
HIK

>seq2
-CDxxF-
HXK
>seq3/2-9
ACDE.GH
B*
"""


def test_a2m_inserts_gaps_unknown_multiline(tmp_path):
    states, headers = read_a2m(_write(tmp_path, A2M))
    assert headers == ["seq1 first record", "seq2", "seq3/2-9"]
    assert states.dtype == np.int8 and states.shape == (3, 8)
    # match columns: upper case and '-'; X, B, '*' -> gap; lower case and '.' dropped
    assert states.tolist() == [_enc("ACDFGHIK"), _enc("-CDF-H-K"), _enc("ACDEGH--")]
    assert ALPHABET[GAP] == "-" and len(ALPHABET) == 21 and decode(states[1]) == "-CDF-H-K"


def test_a2m_drop_unknown_and_plain_fasta(tmp_path):
    path = _write(tmp_path, A2M)
    states, headers = read_a2m(path, unknown="drop")
    assert headers == ["seq1 first record"] and states.tolist() == [_enc("ACDFGHIK")]
    plain = _write(tmp_path, ">a\nAcD.\n>b\nA-dE\n", "plain.fasta")
    states, _ = read_a2m(plain, a2m=False)
    assert states.tolist() == [_enc("ACD-"), _enc("A-DE")]


@pytest.mark.parametrize(
    "text, match",
    [
        (">a\nACD\n>b\nAC\n", r"record 2 \('>b'\) has 2 match columns, expected 3"),
        (">a\nACD\n>b\nA1D\n", r"record 2 \('>b'\) has illegal character '1' at position 2"),
        ("ACD\n>a\nACD\n", "before the first '>'"),
        (">a\n>b\nACD\n", r"record 1 \('>a'\) has an empty sequence"),
        ("\n\n", "no FASTA records"),
        (">a\nacd\n", "no match columns"),
    ],
)
def test_a2m_errors(tmp_path, text, match):
    with pytest.raises(ValueError, match=match):
        read_a2m(_write(tmp_path, text))


def test_a2m_missing_file_and_bad_option(tmp_path):
    with pytest.raises(FileNotFoundError):
        read_a2m(tmp_path / "nope.a2m")
    with pytest.raises(ValueError, match="unknown must be"):
        read_a2m(_write(tmp_path, A2M), unknown="keep")


def test_one_hot():
    x = one_hot(np.array([[0, 2], [1, 1]]), 3)
    assert x.shape == (2, 2, 3) and x.dtype == torch.float32
    assert x.argmax(-1).tolist() == [[0, 2], [1, 1]] and (x.sum(-1) == 1).all()
    with pytest.raises(ValueError, match="0..2"):
        one_hot(np.array([[0, 3]]), 3)


def test_real_pf00018_alignment(shared):
    path = shared / PVI / "PF00018.a2m"
    states, headers = read_a2m(path)
    assert states.shape == (10211, 48) and len(headers) == 10211
    lines = path.read_text().splitlines()
    seqs = [ln for ln in lines if not ln.startswith(">")]
    assert headers[0] == lines[0][1:] and decode(states[0]) == seqs[0].replace("X", "-")
    text = "".join(seqs)  # no lower case in this file: every character is a match column
    assert int((states == GAP).sum()) == text.count("-") + text.count("X")
    for k, aa in enumerate(ALPHABET[1:], 1):
        assert int((states == k).sum()) == text.count(aa)


# ------------------------------------------------------------------------------------------- weights
def _brute_weights(states, theta):
    n, L = states.shape
    counts = [sum(np.sum(states[a] == states[b]) / L >= theta for b in range(n)) for a in range(n)]
    return 1.0 / np.array(counts, dtype=float)


def test_weights_match_brute_force():
    rng = np.random.default_rng(0)
    base = rng.integers(0, 4, size=(6, 10))
    rows = [base[k % 6].copy() for k in range(30)]
    for k in range(6, 30):  # mutate 0..4 of 10 positions: identities straddle 0.8, including exact ties
        pos = rng.choice(10, size=k % 5, replace=False)
        rows[k][pos] = rng.integers(0, 4, size=pos.size)
    states = np.array(rows, dtype=np.int8)
    ties = sum(np.sum(states[a] == states[b]) == 8 for a in range(30) for b in range(30))
    assert ties > 0  # the 40/50-style boundary case is exercised
    expect = _brute_weights(states, 0.8)
    for block in (1000, 7):
        w = sequence_weights(states, 0.8, num_states=4, block_size=block)
        np.testing.assert_allclose(w, expect, rtol=0, atol=1e-15)
    assert neff(w) == pytest.approx(expect.sum())
    np.testing.assert_allclose(sequence_weights(states, 0.5, num_states=4, block_size=4), _brute_weights(states, 0.5))


def test_weights_errors():
    with pytest.raises(ValueError, match="theta"):
        sequence_weights(np.zeros((3, 4), int), 0.0)
    with pytest.raises(ValueError, match="0..3"):
        sequence_weights(np.full((3, 4), 5), num_states=4)
    with pytest.raises(ValueError, match=r"\(N, L\) integer"):
        sequence_weights(np.zeros((3, 4)))
    with pytest.raises(ValueError, match="non-empty 1-D"):
        neff(np.array([1.0, -1.0]))


# ------------------------------------------------------------------------------------------ contacts
def test_coupling_norms_by_hand():
    J = torch.zeros(3, 3, 2, 2, dtype=torch.float64)
    J[0, 1] = torch.tensor([[1.0, 2.0], [2.0, 4.0]])
    J[1, 0] = J[0, 1].T
    J[1, 2] = torch.tensor([[3.0, 0.0], [0.0, 4.0]])
    J[2, 1] = J[1, 2].T
    F = coupling_norms(J)
    np.testing.assert_allclose(F, [[0, 5, 0], [5, 0, 5], [0, 5, 0]])
    np.testing.assert_allclose(coupling_norms(J, exclude_state=0), [[0, 4, 0], [4, 0, 4], [0, 4, 0]])
    # [[1, 2], [2, 4]] in the zero-sum gauge: entries +-1/4 -> norm 1/2; [[3, 0], [0, 4]] -> +-7/4 -> 7/2
    np.testing.assert_allclose(coupling_norms(J, zero_sum=True), [[0, 0.5, 0], [0.5, 0, 3.5], [0, 3.5, 0]])
    with pytest.raises(ValueError, match=r"\(L, L, q, q\)"):
        coupling_norms(torch.zeros(3, 2, 2, 2))
    with pytest.raises(ValueError, match="exclude_state"):
        coupling_norms(J, exclude_state=2)


def test_apc_by_hand():
    F = np.array([[0.0, 1.0, 2.0], [1.0, 0.0, 3.0], [2.0, 3.0, 0.0]])
    # off-diagonal row means 1.5, 2, 2.5; overall mean 2
    expect = np.array([[0, 1 - 1.5 * 2 / 2, 2 - 1.5 * 2.5 / 2], [0, 0, 3 - 2 * 2.5 / 2], [0, 0, 0]])
    np.testing.assert_allclose(apc(F), expect + expect.T)
    with pytest.raises(ValueError, match="symmetric"):
        apc(np.triu(F))
    with pytest.raises(ValueError, match="undefined"):
        apc(np.zeros((3, 3)))


def _toy_scores_contacts():
    S = np.zeros((5, 5))
    for (i, j), s in {(0, 1): 5.0, (0, 2): 0.9, (1, 4): 0.8, (0, 4): 0.7, (1, 3): 0.6, (2, 4): 0.5,
                      (0, 3): 0.4}.items():
        S[i, j] = S[j, i] = s
    C = np.zeros((5, 5), dtype=bool)
    for i, j in [(0, 1), (0, 2), (0, 4), (2, 4)]:
        C[i, j] = C[j, i] = True
    return S, C


def test_precision_recall_by_hand():
    S, C = _toy_scores_contacts()
    curve = contact_curve(S, C, min_separation=2)
    assert list(zip(curve["i"], curve["j"], strict=True)) == [(0, 2), (1, 4), (0, 4), (1, 3), (2, 4), (0, 3)]
    assert curve["k"].tolist() == [1, 2, 3, 4, 5, 6] and curve["tp"].tolist() == [1, 1, 2, 2, 3, 3]
    np.testing.assert_allclose(curve["precision"], [1, 1 / 2, 2 / 3, 1 / 2, 3 / 5, 1 / 2])
    np.testing.assert_allclose(curve["recall"], [1 / 3, 1 / 3, 2 / 3, 2 / 3, 1, 1])
    assert precision_at_k(S, C, 3, min_separation=2) == pytest.approx(2 / 3)
    assert precision_at_k(S, C, 1, min_separation=1) == 1.0  # (0, 1) now ranked first
    mask = np.ones((5, 5), dtype=bool)
    mask[0, 4] = mask[4, 0] = False
    masked = contact_curve(S, C, min_separation=2, mask=mask, max_k=3)
    assert list(zip(masked["i"], masked["j"], strict=True)) == [(0, 2), (1, 4), (1, 3)]
    np.testing.assert_allclose(masked["recall"], [1 / 2, 1 / 2, 1 / 2])
    with pytest.raises(ValueError, match="k must lie in 1..6"):
        precision_at_k(S, C, 7, min_separation=2)


def test_rank_ties_are_lexicographic():
    ranked = rank_pairs(np.ones((4, 4)), min_separation=1)
    assert isinstance(ranked, pd.DataFrame)
    assert list(zip(ranked["i"], ranked["j"], strict=True)) == [(0, 1), (0, 2), (0, 3), (1, 2), (1, 3), (2, 3)]


def test_contact_map_cutoff_and_nan():
    D = np.array([[0.0, 4.99, 5.0, np.nan], [4.99, 0.0, 7.0, 1.0], [5.0, 7.0, 0.0, 2.0], [np.nan, 1.0, 2.0, 0.0]])
    C = contact_map(D)
    assert C.tolist() == [[False, True, False, False], [True, False, False, True],
                          [False, False, False, True], [False, True, True, False]]
    with pytest.raises(ValueError, match="symmetric"):
        contact_map(np.triu(np.ones((3, 3))))


# ------------------------------------------------------------------------------------------- loaders
def test_pf00018_loader_contacts(shared):
    data = load_pf00018(shared)
    assert data.states.shape == (10211, 48) and data.num_states == 21 and data.gap_state == GAP
    i, j = np.triu_indices(48, 1)
    assert int(data.contacts[i, j].sum()) == 219  # data/README.md: 219 pairs < 5 A, 107 with |i - j| >= 6
    assert int(data.contacts[i, j][(j - i) >= 6].sum()) == 107
    rows = [ln.split("\t") for ln in (shared / PVI / "PF00018_summary.txt").read_text().splitlines()]
    for r in rows[:50]:
        a, b = int(r[0]) - 1, int(r[1]) - 1
        assert data.distances[a, b] == data.distances[b, a] == float(r[5])
    assert data.observed[i, j].all() and not data.contacts.diagonal().any()


def test_pf00018_summary_errors(shared, tmp_path):
    from gradmc.proteins.loaders import parse_pf00018_summary

    good = (shared / PVI / "PF00018_summary.txt").read_text().splitlines()
    bad = tmp_path / "s.txt"
    bad.write_text("\n".join(good[:-1]) + "\n")
    with pytest.raises(ValueError, match="1 of the 1128 pairs"):
        parse_pf00018_summary(bad, 48)
    bad.write_text("\n".join(good + [good[0]]) + "\n")
    with pytest.raises(ValueError, match=r"repeats pair \(1, 2\)"):
        parse_pf00018_summary(bad, 48)


def test_synthetic_loader(shared):
    data = load_synthetic_potts(shared)
    assert data.states.shape == (2000, 50) and data.num_states == 20 and data.gap_state is None
    assert data.states.min() == 0 and data.states.max() == 19
    assert data.true_h.shape == (50, 20) and data.true_J.shape == (50, 50, 20, 20)
    Potts(data.true_h, data.true_J)  # symmetric, zero diagonal blocks: the gradmc convention
    assert int(data.contacts.sum()) == 200 and not data.contacts.diagonal().any()
    nz = coupling_norms(data.true_J) > 0
    assert np.array_equal(nz, data.contacts)  # C marks exactly the non-zero couplings
    assert load_synthetic_potts(shared, num_samples=400).states.shape == (400, 50)
    with pytest.raises(ValueError, match="sample_key"):
        load_synthetic_potts(shared, sample_key="samples")


def test_missing_files_name_file_and_source(tmp_path, download_env):  # no mirror set: the canonical URLs
    with pytest.raises(FileNotFoundError, match=r"PF00018\.a2m not found at .*protein/persistent-vi.*github"):
        load_pf00018(tmp_path)
    with pytest.raises(FileNotFoundError, match="original_dataset.mat"):
        load_protein("synthetic", tmp_path)
    with pytest.raises(FileNotFoundError, match="OPSD_BOVIN_full_b03.a2m not found.*EVcouplings"):
        load_protein("OPSD_BOVIN", tmp_path)
    with pytest.raises(ValueError, match="unknown protein data set"):
        load_protein("PF10018", tmp_path)


def _evc_files(tmp_path, axis: bool = False):
    # focus residues 10..17 ("MkVLDAwG": upper = modelled); residue 13 absent from the structure
    a2m = _write(tmp_path, ">TEST_HUMAN/10-17 focus\nMkVLDAwG\n>hit1\nM.VL-AcG\n>hit2\nAkV-DA.W\n", "t.a2m")
    table = pd.DataFrame({"id": ["10", "11", "12", "14", "15", "16", "17"], "one_letter_code": list("MKVDAWG")})
    if axis:
        table["axis"] = "i"
    table.to_csv(tmp_path / "dm.csv")
    X = np.arange(7.0)[:, None] * np.array([[3.0, 0.0, 0.0]])  # residues on a line, 3 A apart
    np.save(tmp_path / "dm.npy", np.abs(X[:, None, 0] - X[None, :, 0]))
    return a2m, tmp_path / "dm"


def test_evcouplings_loader(tmp_path):
    a2m, prefix = _evc_files(tmp_path)
    data = load_evcouplings_protein(a2m, prefix, name="TEST")
    assert data.positions.tolist() == [10, 12, 13, 14, 15, 17]
    assert data.states.tolist() == [_enc("MVLDAG"), _enc("MVL-AG"), _enc("AV-DAW")]
    row = {10: 0, 12: 2, 14: 3, 15: 4, 17: 6}  # row of each residue in the distance table
    for a, pa in enumerate(data.positions):
        for b, pb in enumerate(data.positions):
            if a != b and pa in row and pb in row:
                assert data.distances[a, b] == 3.0 * abs(row[pa] - row[pb])
                assert data.contacts[a, b] == (3.0 * abs(row[pa] - row[pb]) < 5.0)
                assert data.observed[a, b]
    assert np.isnan(data.distances[2]).sum() == 5 and not data.observed[2].any() and not data.contacts[2].any()


def test_evcouplings_errors(tmp_path):
    a2m, prefix = _evc_files(tmp_path, axis=True)
    with pytest.raises(ValueError, match="inter-chain"):
        load_evcouplings_protein(a2m, prefix)
    (tmp_path / "dm.npy").unlink()
    with pytest.raises(FileNotFoundError, match="dm.npy not found.*EVcouplings"):
        load_evcouplings_protein(a2m, prefix)
    bad = _write(tmp_path, ">X/10-20\nMKV\n", "bad.a2m")
    with pytest.raises(ValueError, match="region 10-20"):
        load_evcouplings_protein(bad, prefix)


# ---------------------------------------------------------------------------------------------------
# gradmc.proteins.scoring (moved out of the potts_proteins experiment)


def test_coupling_rmse_is_gauge_invariant_and_exact():
    from gradmc.proteins.scoring import coupling_rmse

    L, q, c = 3, 2, 0.7
    zero_J, zero_h = torch.zeros(L, L, q, q, dtype=torch.float64), torch.zeros(L, q, dtype=torch.float64)
    J = zero_J.clone()
    block = c * torch.tensor([[1.0, -1.0], [-1.0, 1.0]], dtype=torch.float64)  # already zero-sum
    J[0, 1], J[1, 0] = block, block.T
    # 4 entries of +-c in block (0, 1), zeros in (0, 2), (1, 2): RMSE = sqrt(4 c^2 / 12); norms 2c, 0, 0
    rmse, norm_rmse = coupling_rmse(J, zero_h, zero_J, zero_h)
    assert rmse == pytest.approx(c / np.sqrt(3.0)) and norm_rmse == pytest.approx(2.0 * c / np.sqrt(3.0))
    # a gauge move (J_12(a, b) + u(a), a field on site 1 moved into the coupling) vanishes in the zero-sum gauge
    shifted = J.clone()
    u = torch.tensor([0.3, -1.1], dtype=torch.float64)
    shifted[1, 2] += u[:, None]
    shifted[2, 1] += u[None, :]
    assert coupling_rmse(shifted, zero_h, J, zero_h) == pytest.approx((0.0, 0.0), abs=1e-12)


def test_top_l_precision_apc_counts_contacts_among_all_candidates():
    from gradmc.proteins.scoring import top_l_precision_apc

    L = 8  # with min_separation 6 the candidates are (0, 6), (0, 7), (1, 7): top-L takes all three
    J = torch.randn(L, L, 3, 3, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    J = J + J.permute(1, 0, 3, 2)
    contacts = np.zeros((L, L), dtype=bool)
    contacts[0, 6] = contacts[6, 0] = True
    observed = np.ones((L, L), dtype=bool)
    assert top_l_precision_apc(J, contacts, observed, 6) == pytest.approx(1 / 3)
    assert np.isnan(top_l_precision_apc(torch.zeros_like(J), contacts, observed, 6))  # APC undefined at J = 0
