"""The kernel contract of gradmc.samplers (see its docstring): every kernel class in the package offers
``init(self, x, log_prob, generator=None)`` and ``step(self, state, log_prob, generator)``."""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import gradmc.samplers


def _kernel_classes() -> dict[str, type]:
    found = {}
    for info in pkgutil.walk_packages(gradmc.samplers.__path__, "gradmc.samplers."):
        module = importlib.import_module(info.name)
        for name, cls in vars(module).items():
            if inspect.isclass(cls) and cls.__module__ == info.name and callable(getattr(cls, "init", None)) \
                    and callable(getattr(cls, "step", None)):
                found[f"{info.name}.{name}"] = cls
    return found


def test_every_kernel_shares_the_init_signature():
    kernels = _kernel_classes()
    assert len(kernels) >= 15  # discrete, relaxed and continuous kernels
    assert "gradmc.samplers.discrete.chromatic_gibbs.ChromaticGibbs" in kernels
    for name, cls in kernels.items():
        params = list(inspect.signature(cls.init).parameters.values())
        assert [p.name for p in params] == ["self", "x", "log_prob", "generator"], name
        assert params[3].default is None, name
        assert list(inspect.signature(cls.step).parameters)[:4] == ["self", "state", "log_prob", "generator"], name
