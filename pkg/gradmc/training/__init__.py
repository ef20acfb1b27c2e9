"""Training loops: CD-k for RBMs, pseudo-likelihood maximisation (PLM) for Potts models, replay-buffer PCD
for deep EBMs (``gradmc.training.ebm``), and persistent contrastive divergence for Ising/Potts models."""

from gradmc.training.cd import train_rbm_cd
from gradmc.training.ising_models import IsingModel
from gradmc.training.pcd import PCD, Penalty
from gradmc.training.plm import PLMResult, fit_plm

__all__ = ["train_rbm_cd", "fit_plm", "PLMResult", "PCD", "Penalty", "IsingModel"]
