"""Training loops: contrastive divergence for RBMs (PCD and Potts PLM arrive with later issues)."""

from gradmc.training.cd import train_rbm_cd

__all__ = ["train_rbm_cd"]
