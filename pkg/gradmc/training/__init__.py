"""Training loops: CD-k for RBMs, pseudo-likelihood maximisation (PLM) for Potts models, replay-buffer PCD
for deep EBMs (persistent contrastive divergence for Ising/Potts models lives in ``gradmc.training.pcd``)."""

from gradmc.training.cd import train_rbm_cd
from gradmc.training.plm import PLMResult, fit_plm

__all__ = ["train_rbm_cd", "fit_plm", "PLMResult"]
