"""GWG paper Appendix J (EXPERIMENTS.md A8): the autoregressive LSTM language model baseline of the text EBM, and
the helpers the text-EBM stages share. Its own module so that the LM's stage depends on no sampler: a sampler
edit reruns the EBM's training and evaluation, never the LM's training (:mod:`gradmc.codedigest`).

Stage ``train_text_lm`` (``gradmc run train_text_lm``): :func:`train_lm_stage`.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import torch

from gradmc.atomic import atomic_path
from gradmc.data.ptb import TextData, load_prepared_text
from gradmc.errors import InputError
from gradmc.models.text import LSTMLanguageModel, train_language_model
from gradmc.seeding import seed_from

__all__ = ["EXPERIMENT", "META", "spec", "tokens", "train_lm_stage", "read_lm"]

#: The experiment's name: its result rows' ``experiment`` column and its seeds' root.
EXPERIMENT = "text_ebm"
META = {"stages": {"train_text_lm": ["text_ebm.data", "text_ebm.lm", "text_ebm.lm_train"]}}
LM_FORMAT = "gradmc.text_lm/1"


def spec(config: dict) -> dict:
    """``config["text_ebm"]``. Raises InputError when the config has no such section."""
    try:
        return config["text_ebm"]
    except KeyError:
        raise InputError("config has no 'text_ebm' section (GWG App. J text EBM)") from None


def tokens(data: TextData, split: str, device: str) -> torch.Tensor:
    """Split ``split`` of the prepared text data as int64 token ids (N, L) on ``device``.

    Raises:
        InputError: the data have no such split (the message lists the splits they have).
    """
    if split not in data.splits:
        raise InputError(f"the prepared text data have no {split!r} split (have {', '.join(data.splits)})")
    return torch.as_tensor(data.splits[split], dtype=torch.long, device=device)


def train_lm_stage(config: dict, data_path: str, out: str, *, progress: Callable[[str], None] | None = print) -> dict:
    """Fit the autoregressive LSTM baseline (GWG App. J) on the train split by maximum likelihood (Adam); write its
    weights atomically to ``out``.

    Returns {"iterations", "final_nll"} (nats per sentence, the last batch's).

    Raises:
        InputError: no ``text_ebm`` section, or data without a train split.
    """
    s, device = spec(config), config["device"]
    data = load_prepared_text(data_path)
    m, t = s["lm"], s["lm_train"]
    torch.manual_seed(seed_from(EXPERIMENT, "lm_init") % 2**31)
    lm = LSTMLanguageModel(len(data.vocabulary), embed_dim=m["embed_dim"], hidden=m["hidden"]).to(device)
    history = train_language_model(lm, tokens(data, "train", device), iterations=t["iterations"],
                                   batch_size=t["batch_size"], lr=float(t["lr"]),
                                   generator=torch.Generator().manual_seed(seed_from(EXPERIMENT, "lm_train")),
                                   progress=progress)
    with atomic_path(Path(out)) as tmp:
        torch.save({"format": LM_FORMAT, "model": lm.state_dict()}, tmp)
    return {"iterations": len(history), "final_nll": history[-1]["nll"]}


def read_lm(path: str | Path, s: dict, vocab_size: int, device: str = "cpu") -> LSTMLanguageModel:
    """The language model written by :func:`train_lm_stage`, built from ``s["lm"]`` (the ``text_ebm`` section).

    Raises:
        InputError: an unreadable file, or weights that do not fit ``s`` and ``vocab_size``.
    """
    try:
        saved = torch.load(path, map_location="cpu", weights_only=True)
        m = s["lm"]
        lm = LSTMLanguageModel(vocab_size, embed_dim=m["embed_dim"], hidden=m["hidden"])
        lm.load_state_dict(saved["model"])
    except Exception as err:  # noqa: BLE001 - torch raises many types for corrupt or mismatched files
        raise InputError(f"cannot read the language model {path}: {type(err).__name__}: {err}") from err
    return lm.to(device)
