"""f(x) and grad f(x) of a target: its own closed form where it declares one for its density, else autograd."""

from __future__ import annotations

import torch

__all__ = ["log_prob_and_grad", "own_method"]


def own_method(target, name: str):
    """``target.<name>`` (a closed form or incremental evaluation) if it is valid for this target, else None.

    A class that writes closed forms for its density declares ``closed_forms_for = forward`` in its body.
    A subclass that overrides ``forward`` without restating ``closed_forms_for`` inherits formulas for
    a density it no longer has, so they are not used (the generic path runs instead). Targets that
    declare nothing are trusted to keep their methods consistent.
    """
    fn = getattr(target, name, None)
    if fn is None or not callable(fn):
        return None
    declared = getattr(type(target), "closed_forms_for", None)
    if declared is not None and getattr(type(target), "forward", None) is not declared:
        return None
    return fn


def log_prob_and_grad(log_prob, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Evaluate f(x) and grad_x f(x): one forward and one backward pass, or the target's closed form.

    Targets that know their gradient in closed form (RBM, Ising, Potts, FHMM posterior) offer
    ``log_prob.log_prob_and_grad(x) -> (f, grad)``; it is used when present and must return the same
    values as autograd (each target's tests check this). Otherwise autograd computes the gradient.

    Args:
        log_prob: callable (C, ...) -> (C,), differentiable in x.
        x: (C, ...) state (binary floats or one-hot).

    Returns:
        f: (C,) detached; grad: same shape as x, detached.

    Raises:
        ValueError: if log_prob does not return shape (C,).
    """
    closed_form = own_method(log_prob, "log_prob_and_grad")
    if closed_form is not None:
        f, grad = closed_form(x)
    else:
        with torch.enable_grad():
            x_req = x.detach().requires_grad_(True)
            f = log_prob(x_req)
            if f.shape == x.shape[:1]:
                (grad,) = torch.autograd.grad(f.sum(), x_req)
    if f.shape != x.shape[:1]:
        raise ValueError(f"log_prob must return shape ({x.shape[0]},), got {tuple(f.shape)}")
    return f.detach(), grad.detach()
