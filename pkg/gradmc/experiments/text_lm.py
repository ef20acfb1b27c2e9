"""GWG paper Appendix J (EXPERIMENTS.md A8): the autoregressive LSTM language model baseline of the text EBM, and
the helpers the text-EBM stages share. Its own module so that the LM's stage depends on no sampler: a sampler
edit reruns the EBM's training and evaluation, never the LM's training (:mod:`gradmc.codedigest`).

Stage ``train_text_lm`` (``gradmc run train_text_lm``): :func:`train_lm_stage`.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path

import torch

from gradmc.atomic import atomic_path
from gradmc.data.ptb import TextData, load_prepared_text
from gradmc.errors import InputError
from gradmc.models.text import LSTMLanguageModel, train_language_model
from gradmc.seeding import seed_from

__all__ = ["EXPERIMENT", "META", "spec", "load_data", "tokens", "train_lm_stage", "read_lm"]

#: The experiment's name: its result rows' ``experiment`` column and its seeds' root.
EXPERIMENT = "text_ebm"
META = {"stages": {"train_text_lm": ["text_ebm.data", "text_ebm.lm", "text_ebm.lm_train"]}}
LM_FORMAT = "gradmc.text_lm/1"


def spec(config: dict) -> dict:
    """``config["text_ebm"]``, with the checks the schema cannot express.

    Raises:
        InputError: the config has no such section; ``train.batch_size`` or ``train.num_samples`` exceeds
            ``train.buffer_size`` (both are drawn from the replay buffer); a learning rate, EMA decay or energy
            penalty that is not a finite number.
    """
    try:
        s = config["text_ebm"]
    except KeyError:
        raise InputError("config has no 'text_ebm' section (GWG App. J text EBM)") from None
    # a stage's config holds only the sections it reads (gradmc.experiments.META): check those present
    t = s["train"] if "train" in s else {}
    for key in ("batch_size", "num_samples"):
        if key in t and t[key] > t["buffer_size"]:
            raise InputError(f"text_ebm.train.{key} {t[key]} exceeds text_ebm.train.buffer_size {t['buffer_size']} "
                             "(drawn from the replay buffer): expected at most the buffer size")
    numbers = [(f"train.{k}", t[k]) for k in ("lr", "ema_decay", "energy_l2") if k in t]
    if "lm_train" in s:
        numbers.append(("lm_train.lr", s["lm_train"]["lr"]))
    for key, value in numbers:
        if not math.isfinite(float(value)):
            raise InputError(f"text_ebm.{key} is {value!r}: expected a finite number")
    return s


def load_data(s: dict, path: str | Path) -> TextData:
    """The prepared text data at ``path`` (``--data``), checked against the ``text_ebm`` section ``s``.

    Raises:
        InputError: an unreadable file, or data prepared with another vocabulary size, sentence length or
            training file than ``s["data"]`` asks for (prepared for another config: the message says which,
            and the command that rebuilds it).
    """
    data = load_prepared_text(path)
    d, m = s["data"], data.manifest
    want = {"vocab_size": d["vocab_size"], "max_length": d["max_length"]}
    have = {"vocab_size": m.get("vocab_size"), "max_length": data.max_length}
    source = (m.get("sources") or {}).get("train")
    if source in ("ptb.train.txt", "ptb.valid.txt"):  # the PTB roles (other files: prepared through the Python API)
        want["train file"], have["train file"] = f"ptb.{d['train_split']}.txt", source
    if diff := [f"{k} {have[k]!r} (config {want[k]!r})" for k in want if have[k] != want[k]]:
        raise InputError(f"--data {path} was prepared for another config: {', '.join(diff)}; rebuild it with "
                         "`gradmc data prepare ptb --config <this config> --out ...`")
    return data


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
    data = load_data(s, data_path)
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
    saved = load_checkpoint(path, "--lm", LM_FORMAT, "`gradmc run train_text_lm`")
    m = s["lm"]
    lm = LSTMLanguageModel(vocab_size, embed_dim=m["embed_dim"], hidden=m["hidden"])
    load_weights(lm, saved["model"], path, "--lm", f"text_ebm.lm {dict(m)} and a vocabulary of {vocab_size} words")
    return lm.to(device)


def load_checkpoint(path: str | Path, flag: str, fmt: str, maker: str) -> dict:
    """The dict saved at ``path`` (``flag`` on the command line), checked to be of format ``fmt`` (written by
    ``maker``).

    Raises:
        InputError: an unreadable file, or a checkpoint of another kind (its format named).
    """
    try:
        saved = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as err:  # noqa: BLE001 - torch raises many types for corrupt files
        raise InputError(f"{flag} {path} cannot be read ({type(err).__name__}); expected a checkpoint from "
                         f"{maker}") from err
    got = saved.get("format") if isinstance(saved, dict) else type(saved).__name__
    if got != fmt:
        raise InputError(f"{flag} {path} is not a checkpoint from {maker}: its format is {got!r}, expected {fmt!r}")
    return saved


def load_weights(module: torch.nn.Module, weights: dict, path: str | Path, flag: str, sizes: str) -> None:
    """``module.load_state_dict(weights)``; weights of other shapes are named in one line.

    Raises:
        InputError: the weights do not fit ``module`` (``sizes`` says what the config asks for).
    """
    try:
        module.load_state_dict(weights)
    except (RuntimeError, KeyError, TypeError) as err:
        first = str(err).strip().splitlines()
        detail = next((line.strip() for line in first if "size mismatch" in line or "Missing" in line), first[0]
                      if first else type(err).__name__)
        raise InputError(f"{flag} {path} does not fit {sizes} ({detail.rstrip('.')}): was it trained with another "
                         "config?") from None
