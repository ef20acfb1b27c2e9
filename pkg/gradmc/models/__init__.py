"""Trainable networks: the ResNet EBM for discrete images (GWG paper Sec. 5.5) and the text models of
App. J (BiLSTM energy, LSTM language model)."""

from gradmc.models.resnet_ebm import ResNetEBM
from gradmc.models.text import BiLSTMEnergy, LSTMLanguageModel, train_language_model

__all__ = ["BiLSTMEnergy", "LSTMLanguageModel", "ResNetEBM", "train_language_model"]
