"""A tiny real run of the GWG App. J text EBM stages (prepare -> train EBM, train LM -> evaluate) written as a
metrics Parquet with provenance, as the pipeline does; shared by the figure and claims suites."""

from __future__ import annotations

from pathlib import Path

from gradmc.data.ptb import prepare_text
from gradmc.experiments import text_ebm as exp
from gradmc.experiments import text_lm
from gradmc.results import provenance, write_parquet

TRAIN = ["a b", "a", "b a a", "a c", "c", "a b c", "b", "a a"]
TEST = ["a", "b b", "c a", "a b", "d"]


def tiny_config() -> dict:
    """Sizes small enough for seconds on one core: V = 4 words, L = 3, 3 PCD iterations, 6 AIS levels."""
    return {"name": "tiny", "device": "cpu", "text_ebm": {
        "data": {"train_split": "valid", "vocab_size": 4, "max_length": 3},
        "model": {"embed_dim": 4, "hidden": 4, "proj": 8},
        "train": {"iterations": 3, "num_steps": 2, "batch_size": 4, "buffer_size": 8, "lr": 1e-3, "warmup": 2,
                  "ema_decay": 0.9, "energy_l2": 0.01, "log_every": 2, "num_samples": 5},
        "lm": {"embed_dim": 4, "hidden": 8},
        "lm_train": {"iterations": 10, "batch_size": 4, "lr": 0.01},
        "ais": {"num_intermediate": 6, "num_chains": 8, "convergence": [3, 6]}}}


def tiny_run(folder: Path) -> tuple[Path, Path, dict]:
    """Run the stages in ``folder``; return (metrics Parquet, samples file, config)."""
    config = tiny_config()
    (folder / "train.txt").write_text("\n".join(TRAIN) + "\n")
    (folder / "test.txt").write_text("\n".join(TEST) + "\n")
    data = folder / "text.npz"
    prepare_text(folder / "train.txt", folder / "test.txt", data, vocab_size=4, max_length=3)
    ebm, lm = folder / "ebm.pt", folder / "lm.pt"
    exp.train_ebm_stage(config, str(data), str(ebm), progress=None)
    text_lm.train_lm_stage(config, str(data), str(lm), progress=None)
    df = exp.evaluate_stage(config, str(data), str(ebm), str(lm), progress=None)
    metrics = folder / "metrics.parquet"
    write_parquet(df, metrics, provenance(config), validate=True)
    return metrics, exp.samples_path(ebm), config
