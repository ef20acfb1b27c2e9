"""Every claims module quotes its paper verbatim: each sentence in a module's ``QUOTES`` occurs in the stored text
of the GWG or KMC paper (``../shared/papers``; whitespace normalised, "..." marks an elision, parts in order)."""

from __future__ import annotations

import importlib
import re
from pathlib import Path

import pytest

from gradmc.claims.base import THEORY, _known

PAPERS = Path(__file__).resolve().parents[2] / "shared" / "papers"
TEXTS = {"GWG": "gibbs_with_gradients_2021.txt", "KMC": "kernel_hmc_2015_excerpt.txt"}


def _normal(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


def _found(quote: str, text: str) -> bool:
    at = 0
    for part in (p.strip() for p in _normal(quote).split("...")):
        if not part:
            continue
        at = text.find(part, at)
        if at < 0:
            return False
        at += len(part)
    return True


@pytest.mark.parametrize("experiment", [*_known(), *THEORY])
def test_every_quote_is_the_papers_own_words(experiment):
    if not PAPERS.is_dir():
        pytest.skip(f"the papers' text is not beside this checkout ({PAPERS})")
    text = " ".join(_normal((PAPERS / name).read_text(encoding="utf-8")) for name in TEXTS.values())
    module = _known().get(experiment, f"gradmc.claims.{experiment}")
    quotes = importlib.import_module(module).QUOTES
    assert quotes, f"{module} quotes nothing"
    missing = {key: q for key, q in quotes.items() if not _found(q, text)}
    assert not missing, f"not verbatim in the papers' text: {missing}"
