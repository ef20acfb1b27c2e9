"""Trainable energy networks (GWG paper Sec. 5.5): the ResNet EBM for discrete images."""

from gradmc.models.resnet_ebm import ResNetEBM

__all__ = ["ResNetEBM"]
