"""Cached and incremental target evaluations for the discrete kernels.

A gradient kernel such as GWG needs f(x) and grad f(x) at the current state and the same at its
proposal x'. When x' is accepted it becomes the next step's x, so the kernels keep the last
:class:`Evaluation` in their state and evaluate the target ONCE per step, at x'. Structured targets
(RBM, lattice Ising, dense and lattice Potts) also keep target-specific intermediate results (``aux``:
the RBM's pre-activations W x + c, the Ising neighbour field A s), from which a state that differs from
x in a few sites is evaluated in O(changed sites) instead of a full pass.

Exactness: a cache is exact only while the target is fixed, and PCD and AIS change it between steps.
Every cached evaluation is therefore stored with a :class:`CacheKey`, which holds the target object
itself (so its ``id`` cannot be reused while the key lives), the state tensor x the evaluation is of
(with its version counter), and a :class:`Fingerprint` of the target's numbers: for an ``nn.Module``,
the identity, version counter and storage address of every parameter, buffer and tensor attribute of
every submodule, holding those tensors so that no new tensor can take their identity (in-place updates,
e.g. an optimiser step, bump the version counter; re-assigning a tensor changes the identity), plus its
scalar attributes (``theta``, ``training``, ...). A module with an attribute whose changes cannot be
seen (a list, an array, a function) is not cached at all. A kernel uses its cache only when the key of
the target passed to ``step`` matches the stored one and the state's x is the one the cache was made
for, unchanged; otherwise it evaluates afresh (counted in ``Info``). Targets that are neither modules
nor declare ``cache_fingerprint()`` are never cached. Writes through ``tensor.data`` (``W.data.copy_(...)``,
``W.data.mul_(...)``) bypass the version counter and keep the storage, so the marks cannot see them; the
fingerprint therefore also reads a few probe entries of each floating tensor (:data:`PROBES`, every
:data:`PROBE_EVERY` steps: one small host read), and a key whose marks match but whose probes differ from the
last reading raises :class:`StaleTargetError` naming the tensor and the fix, within 2 * PROBE_EVERY steps of the
edit (a continued chain would mix the old and the new target, and targets' own derived caches, such as the RBM's
transposed weight, are stale too). An edit through ``.data`` that leaves every probed entry unchanged (a few rows
of a large tensor) and changes hidden in a closure are not detected. PCD and AIS in gradmc re-initialise or pass a new
target object after every change, so they never rely on the check; it is the guard against misuse.

The incremental methods below (and the closed-form ``log_prob_and_grad``) are used only while they
belong to the target's density: a class declares ``closed_forms_for = forward``, and a subclass that
overrides ``forward`` without restating it gets the generic path (:func:`~gradmc.core.gradients.own_method`).

The target must be a function of each chain's own state (no statistics over the batch, such as a
BatchNorm layer in training mode): Metropolis-Hastings itself needs that, and so does the cache.

Drift: incremental updates of floating-point intermediates (the RBM's pre-activations) accumulate
rounding error, so every :data:`REFRESH_EVERY` steps a kernel evaluates afresh from x.

The optional target methods (each returns exactly what the generic path below computes, up to
rounding; the targets' tests compare them):

- ``eval_state(x, grad) -> Evaluation``: f, grad f (if ``grad``) and ``aux`` at x (C, ...);
- binary states (C, D): ``eval_flips(x, ev, sites, mask, grad, known_log_prob) -> Evaluation`` at x with bits
  ``sites[c, k]`` flipped where ``mask[c, k]``, sites (C, X) int64, mask (C, X) bool (a site may repeat
  in a row where all but one of its entries are masked out);
  ``eval_flip_candidates(x, ev, sites, masks) -> (C, B)`` f at x with the bits of ``sites`` flipped
  where ``masks[c, b]`` (C, B, X) bool (Gibbs-X, Hamming-ball);
  ``eval_flip_mask(x, ev, x_new, mask, grad) -> Evaluation`` at x_new = x with the bits of a dense (C, D) mask
  ``mask`` (bool, or 0/1 floats) flipped (the factorised kernels: DMALA, DLMC, ...);
- one-hot states (C, D, K): ``eval_change(x, ev, site, value, grad, known_log_prob) -> Evaluation`` at x with site
  ``site[c]`` set to ``value[c]`` (C,) int64; ``eval_change_candidates(x, ev, site) -> (C, K)`` f at x
  with site ``site[c]`` set to each of the K values (categorical Gibbs-1).

Cost accounting (:class:`~gradmc.samplers.base.Info`): each state whose f is computed counts once,
whether from scratch or from ``aux``, so "per energy evaluation" comparisons count the states a kernel
looked at; a value read from the cache is not counted again, and the evaluation ``init`` makes for the
cache is counted by the first step. A chain of n GWG steps from ``init`` counts n + 1 evaluations (the
first step 2, the others 1, plus 1 at each refresh or target change); before caching it was 2 n.
"""

from __future__ import annotations

import itertools
import weakref
from typing import NamedTuple

import torch
from torch import nn

from gradmc.core.gradients import log_prob_and_grad, own_method

__all__ = ["REFRESH_EVERY", "DERIVED_PREFIX", "PROBES", "PROBE_EVERY", "Evaluation", "Fingerprint",
           "StaleTargetError", "CacheKey", "bind_state", "cache_key",
           "fingerprint", "current_evaluation",
           "evaluate", "eval_flips", "eval_flip_candidates", "eval_flip_mask", "eval_change", "eval_change_candidates",
           "RowChoice", "select", "flipped_entries", "flip_bits", "flip_deltas", "offers"]

#: A kernel re-evaluates its cached f, grad f and aux from x every this many steps (bounds the rounding
#: drift of incremental updates; costs 1 / REFRESH_EVERY of an evaluation per step).
REFRESH_EVERY = 128

_SCALARS = (bool, int, float, str, type(None))

#: Entries of each floating tensor a :class:`Fingerprint` reads (evenly spaced over the flattened tensor), to see
#: edits through ``tensor.data`` (module docstring).
PROBES = 8
#: :func:`current_evaluation` reads the probes every this many steps (a host read costs tens of microseconds, a
#: few percent of a small step): an edit through ``.data`` raises within 2 * PROBE_EVERY steps.
PROBE_EVERY = 4


class StaleTargetError(ValueError):
    """A cached target's tensor changed through ``.data`` (no version-counter bump): the cache cannot be trusted."""


class Evaluation(NamedTuple):
    """The target at the chains' states x.

    Attributes:
        log_prob: (C,) f(x), detached.
        grad: grad_x f(x), shaped as x, detached; None when not computed (the Gibbs-type kernels).
        aux: target-specific intermediate results with leading dimension C (RBM: pre-activations
            (C, H); lattice Ising: neighbour field (C, D)), or None.
    """

    log_prob: torch.Tensor
    grad: torch.Tensor | None = None
    aux: torch.Tensor | None = None


class Fingerprint:
    """The numbers of a target at one moment: ``marks`` (compared), ``refs`` and ``named`` (held, not compared),
    ``probes`` (compared by :func:`current_evaluation` every :data:`PROBE_EVERY` steps, not by ``==``).

    A mark of a tensor is (id, version counter, storage address, dtype, device, shape). ``refs`` holds the
    tensors themselves, so while a fingerprint lives no other tensor can take their ids (an id or an address
    alone could be reused by a new tensor after the old one is freed). Equal when the marks are equal.
    ``named``: (name, tensor) of the target's tensors; ``probes``: None until :meth:`probe` reads them, then
    ((name, values), ...), the values of :data:`PROBES` entries of each floating tensor (:func:`_probe`).
    """

    __slots__ = ("marks", "refs", "named", "probes")

    def __init__(self, marks: tuple, refs: tuple, named: tuple = (), probes: tuple | None = None):
        self.marks, self.refs, self.named, self.probes = marks, refs, named, probes

    def __eq__(self, other) -> bool:
        return isinstance(other, Fingerprint) and self.marks == other.marks

    __hash__ = None

    def probe(self) -> tuple:
        """Read the probe entries now (one small host read per device and dtype) and keep them in ``probes``."""
        self.probes = _probe(list(self.named))
        return self.probes

    def edited_through_data(self, earlier: Fingerprint) -> list[str]:
        """Names of the tensors whose probed values differ from ``earlier``'s while every mark (identity, version,
        storage) is the same: edits through ``.data``. Empty when the marks differ (a visible change) or either
        has not been probed."""
        if (not isinstance(earlier, Fingerprint) or self.marks != earlier.marks or self.probes is None
                or earlier.probes is None or self.probes == earlier.probes):
            return []
        return [name for (name, now), (_, then) in zip(self.probes, earlier.probes, strict=True)
                if not _same_values(now, then)]


def _same_values(a: list, b: list) -> bool:
    """Equal value lists, NaN equal to NaN (a NaN entry that stays NaN is no edit)."""
    return len(a) == len(b) and all(x == y or (x != x and y != y) for x, y in zip(a, b, strict=True))


#: id(tensor) -> (weak reference to it, storage address, shape, strides, the probe view of :func:`_probe_view`); the
#: view sees every write to that storage, ``.data`` writes included. Cleared when it grows past _PROBE_VIEWS_MAX.
_PROBE_VIEWS: dict[int, tuple] = {}
_PROBE_VIEWS_MAX = 4096


def _probe_view(t: torch.Tensor) -> torch.Tensor:
    """:data:`PROBES` evenly spaced entries of ``t`` (flattened) as a view of its storage, made once per tensor and
    storage (a contiguous tensor; others get a fresh copy each time)."""
    mark = (t.data_ptr(), t.shape, t.stride())
    hit = _PROBE_VIEWS.get(id(t))
    if hit is not None and hit[0]() is t and hit[1:4] == mark:
        return hit[4]
    flat = t.detach().reshape(-1)
    view = flat[::max(1, flat.numel() // PROBES)][:PROBES]
    if t.is_contiguous():
        if len(_PROBE_VIEWS) >= _PROBE_VIEWS_MAX:
            _PROBE_VIEWS.clear()
        _PROBE_VIEWS[id(t)] = (weakref.ref(t), *mark, view)
    return view


def _probe(named: list[tuple[str, torch.Tensor]]) -> tuple:
    """((name, values), ...) for the floating tensors of ``named``: :data:`PROBES` evenly spaced entries of each,
    read with one host transfer per (device, dtype) group."""
    groups: dict = {}
    for name, t in named:
        if t.is_floating_point() and t.numel() and not t.is_complex():
            groups.setdefault((t.device, t.dtype), []).append((name, _probe_view(t)))
    out = []
    for members in groups.values():
        values = torch.cat([v for _, v in members]).tolist()
        start = 0
        for name, v in members:
            out.append((name, values[start:start + v.numel()]))
            start += v.numel()
    return tuple(out)


class CacheKey(NamedTuple):
    """Identifies the target and the state x an :class:`Evaluation` belongs to (module docstring).

    owner: the target object (for a bound method, the object it is bound to); func: the bound method's
    function, or None; fingerprint: :func:`fingerprint` of ``owner`` when the key was made; x and
    x_version: the state tensor the evaluation is of and its version counter (set by :func:`bind_state`),
    so a state whose x was replaced (``state._replace(x=...)``) or edited in place is evaluated afresh.
    """

    owner: object
    func: object
    fingerprint: object
    x: torch.Tensor | None = None
    x_version: int = -1

    def matches(self, other: CacheKey | None) -> bool:
        """True when ``other`` names the same object, method and fingerprint (identity, not equality)."""
        return (other is not None and self.owner is other.owner and self.func is other.func
                and self.fingerprint == other.fingerprint)


def bind_state(state):
    """``state`` with its cache key bound to ``state.x`` (its identity and version counter now)."""
    key = state.cache_key
    if key is None:
        return state
    return state._replace(cache_key=key._replace(x=state.x, x_version=state.x._version))


#: nn.Module's own attributes (hooks, registries, flags other than ``training``): not the target's numbers
_MODULE_INTERNALS = frozenset(nn.Module().__dict__) - {"training"}
#: attribute names with this prefix hold values derived from the others (e.g. a transposed weight):
#: skipped by the fingerprint, whose job is the values they are derived from
DERIVED_PREFIX = "_cached_"


def _value_mark(value, refs: list):
    """A comparable mark of an attribute value, or _UNKNOWN when its changes cannot be seen."""
    if isinstance(value, _SCALARS):
        return value
    if isinstance(value, torch.Tensor):
        refs.append(value)
        return (id(value), value._version, value.data_ptr(), value.dtype, value.device, tuple(value.shape))
    if type(value).__module__ == "numpy" and getattr(value, "shape", None) == () and hasattr(value, "item"):
        return ("numpy", type(value).__name__, value.item())  # a NumPy scalar (np.float32(0.9))
    if isinstance(value, tuple) and len(value) <= 64:
        marks = tuple(_value_mark(v, refs) for v in value)
        return _UNKNOWN if any(m is _UNKNOWN for m in marks) else ("tuple", marks)
    return _UNKNOWN


_UNKNOWN = object()


def _module_fingerprint(module: nn.Module) -> Fingerprint | None:
    marks, refs, named = [], [], []
    for sub in module.modules():
        marks.append(type(sub))
        for name, t in itertools.chain(sub._parameters.items(), sub._buffers.items()):
            marks.append((name, None if t is None else _value_mark(t, refs)))
            if t is not None:
                named.append((f"{type(sub).__name__}.{name}", t))
        for name, value in sub.__dict__.items():
            if name in _MODULE_INTERNALS or name.startswith(DERIVED_PREFIX):
                continue
            mark = _value_mark(value, refs)
            if mark is _UNKNOWN:
                return None  # a list, an array, a callable, an object: its changes cannot be seen
            marks.append((name, mark))
            if isinstance(value, torch.Tensor):
                named.append((f"{type(sub).__name__}.{name}", value))
    return Fingerprint(tuple(marks), tuple(refs), tuple(named))


def fingerprint(target) -> object | None:
    """A value that changes whenever ``target``'s numbers change, or None if that cannot be known.

    ``target.cache_fingerprint()`` when the object defines it. For an ``nn.Module`` (or a method bound to
    one): a :class:`Fingerprint` of its parameters, buffers, tensor attributes and scalar attributes
    (Python and NumPy scalars, tuples of them) over all submodules; None when a module holds an
    attribute of any other kind (a list, an array, a function: changes inside it cannot be seen) other
    than those named ``_cached_*``. None for any other callable (a plain function or closure).
    """
    declared = getattr(target, "cache_fingerprint", None)
    if declared is not None:
        return declared()
    if isinstance(target, nn.Module):
        return _module_fingerprint(target)
    return None


def cache_key(log_prob) -> CacheKey | None:
    """The :class:`CacheKey` of ``log_prob`` now, or None when it is not cacheable."""
    owner, func = log_prob, None
    if getattr(log_prob, "__self__", None) is not None and hasattr(log_prob, "__func__"):
        owner, func = log_prob.__self__, log_prob.__func__  # a new bound-method object on every access
    mark = fingerprint(owner)
    return None if mark is None else CacheKey(owner, func, mark)


def offers(log_prob, method: str) -> bool:
    """Whether the target offers one of the optional methods above, e.g. ``"eval_flip_candidates"``: the
    Gibbs-type kernels cache only then (for other targets a cache would cost an evaluation and save none)."""
    return own_method(log_prob, method) is not None


def current_evaluation(state, log_prob, x: torch.Tensor, grad: bool) -> tuple[Evaluation, CacheKey | None, int]:
    """The evaluation at a kernel state's x: its cache when valid, otherwise a fresh one.

    The cache (``state.cache``, ``state.cache_key``) is valid when the key of ``log_prob`` now matches
    the stored one, the stored key is bound to this very x at its current version (:func:`bind_state`),
    it holds a gradient if ``grad`` is asked for, and the state is not due for its periodic refresh
    (``num_steps`` a positive multiple of :data:`REFRESH_EVERY`).

    Args:
        state: a kernel state with fields ``cache`` (Evaluation or None), ``cache_key`` and ``num_steps``.
        log_prob: the target passed to ``step``.
        x: (C, ...) the state's x.
        grad: whether grad f is needed.

    Returns:
        (evaluation, key to store with the next state, evaluations of x to count in this step's Info):
        1 for a fresh evaluation, 1 for the first step after ``init`` (whose evaluation it uses: each
        evaluation is counted once, by the step that needs it), else 0.

    Raises:
        StaleTargetError: a tensor of the target changed through ``.data`` since the cache was made (module
            docstring); the message names it and the fix.
    """
    key = cache_key(log_prob)
    cached, stored = state.cache, state.cache_key
    if (key is not None and key.matches(stored) and isinstance(key.fingerprint, Fingerprint)
            and isinstance(stored.fingerprint, Fingerprint)):
        key.fingerprint.probes = stored.fingerprint.probes  # the last reading, carried while the marks hold
        if state.num_steps % PROBE_EVERY == 0:
            key.fingerprint.probe()
            edited = key.fingerprint.edited_through_data(stored.fingerprint)
        else:
            edited = []
        if edited:
            raise StaleTargetError(
                f"{type(key.owner).__name__}: {', '.join(edited)} changed through .data since the last step (no "
                "version-counter bump), which the sampler's cached evaluation and the target's own derived caches "
                "cannot see. Edit parameters in place under torch.no_grad() (param.copy_(...)) or assign a new "
                "tensor; to keep an edit already made, run param.add_(0) under torch.no_grad() (it marks the "
                "tensor changed) and continue")
    if (key is not None and cached is not None and key.matches(stored) and stored.x is x
            and stored.x_version == x._version and (cached.grad is not None or not grad)
            and not _refresh_due(state.num_steps)):
        return cached, key, int(state.num_steps == 0)
    return evaluate(log_prob, x, grad), key, 1


def _refresh_due(num_steps: int) -> bool:
    return num_steps > 0 and num_steps % REFRESH_EVERY == 0


def evaluate(log_prob, x: torch.Tensor, grad: bool = True) -> Evaluation:
    """f (and grad f) at x: ``log_prob.eval_state`` when offered, else the generic path.

    Generic path: :func:`~gradmc.core.gradients.log_prob_and_grad` with ``grad``, else one no-grad call.

    Args:
        log_prob: target callable (C, ...) -> (C,).
        x: (C, ...) states.

    Raises:
        ValueError: if log_prob does not return shape (C,).
    """
    own = own_method(log_prob, "eval_state")
    if own is not None:
        return own(x, grad)
    if grad:
        f, g = log_prob_and_grad(log_prob, x)
        return Evaluation(f, g)
    with torch.no_grad():
        f = log_prob(x)
    if f.shape != x.shape[:1]:
        raise ValueError(f"log_prob must return shape ({x.shape[0]},), got {tuple(f.shape)}")
    return Evaluation(f.detach())


def flip_deltas(x: torch.Tensor, sites: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """The bit changes x'_k - x_k (1 - 2 x_k where masked, else 0) at ``sites``: x (C, D), sites (C, X),
    mask (C, X) or (C, B, X) bool -> shaped as mask, in x's dtype."""
    sign = 1.0 - 2.0 * x.gather(1, sites)  # (C, X)
    if mask.dim() == 3:
        sign = sign[:, None, :]
    return torch.where(mask, sign, torch.zeros((), dtype=x.dtype, device=x.device))


def flip_bits(x: torch.Tensor, sites: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """A copy of binary x (C, D) with bits ``sites`` (C, X) flipped where ``mask`` (C, X) bool (a site may
    repeat in a row where all but one of its entries are masked out)."""
    return x.scatter_add(1, sites, flip_deltas(x, sites, mask))


def eval_flips(log_prob, x: torch.Tensor, ev: Evaluation, sites: torch.Tensor, mask: torch.Tensor,
               grad: bool = True, known_log_prob: torch.Tensor | None = None) -> Evaluation:
    """The evaluation at x with bits ``sites[c, k]`` flipped where ``mask[c, k]``.

    Args:
        x: (C, D) binary; ev: the evaluation at x; sites: (C, X) int64; mask: (C, X) bool. A site may
            repeat within a row only where all but one of its entries are masked out (GWG-N's draws).
        known_log_prob: (C,) f at the flipped states when the caller has it (a Gibbs step's chosen
            candidate): then it is the result's log_prob, and a target may skip computing it.

    Returns:
        :class:`Evaluation` at the flipped states (``log_prob.eval_flips`` when offered, else a full
        evaluation of them).
    """
    own = own_method(log_prob, "eval_flips")
    if own is not None:
        return own(x, ev, sites, mask, grad, known_log_prob)
    new = evaluate(log_prob, flip_bits(x, sites, mask), grad)
    return new if known_log_prob is None else new._replace(log_prob=known_log_prob)


_SAME_SIZE_INT = {torch.float16: torch.int16, torch.bfloat16: torch.int16, torch.float32: torch.int32,
                  torch.float64: torch.int64}


def flipped_entries(mask: torch.Tensor) -> torch.Tensor:
    """The flat indices (F,) int64, in row-major order, of the nonzero entries of a flip mask (C, D), bool or 0/1
    floats. A float mask is read through its bits (|m| viewed as an integer of its size: zero exactly where
    m = 0), which ``nonzero`` scans about twice as fast as the floats themselves on the CPU."""
    if mask.is_floating_point():
        mask = mask.abs().view(_SAME_SIZE_INT[mask.dtype])
    return mask.reshape(-1).nonzero().squeeze(1)


def eval_flip_mask(log_prob, x: torch.Tensor, ev: Evaluation, x_new: torch.Tensor, mask: torch.Tensor,
                   grad: bool = True) -> Evaluation:
    """The evaluation at x_new, x with the bits of ``mask`` flipped (every bit may flip).

    Args:
        x, x_new: (C, D) binary; ev: the evaluation at x; mask: (C, D) bool or 0/1 floats, x_new = x XOR mask.

    Returns:
        :class:`Evaluation` at x_new: ``log_prob.eval_flip_mask`` when offered (e.g. the RBM updates its
        pre-activations by the flipped bits only, when few flip), else a full evaluation of x_new.
    """
    own = own_method(log_prob, "eval_flip_mask")
    if own is not None:
        return own(x, ev, x_new, mask, grad)
    return evaluate(log_prob, x_new, grad)


def eval_flip_candidates(log_prob, x: torch.Tensor, ev: Evaluation, sites: torch.Tensor,
                         masks: torch.Tensor) -> torch.Tensor:
    """f at B candidates per chain: x with the bits ``sites`` flipped where ``masks``.

    Args:
        x: (C, D) binary; ev: the evaluation at x (``grad`` may be None); sites: (C, X) int64 distinct
            within a row; masks: (C, B, X) bool.

    Returns:
        (C, B) log_prob of the candidates (``log_prob.eval_flip_candidates`` when offered, else one
        log_prob call on the (C * B, D) candidates).
    """
    own = own_method(log_prob, "eval_flip_candidates")
    if own is not None:
        return own(x, ev, sites, masks)
    C, D = x.shape
    B = masks.shape[1]
    candidates = x[:, None, :].repeat(1, B, 1)
    candidates.scatter_add_(2, sites[:, None, :].expand(C, B, sites.shape[1]), flip_deltas(x, sites, masks))
    with torch.no_grad():
        return log_prob(candidates.reshape(C * B, D)).reshape(C, B)


def _set_site(x: torch.Tensor, site: torch.Tensor, value: torch.Tensor) -> torch.Tensor:
    rows = torch.arange(x.shape[0], device=x.device)
    out = x.clone()
    out[rows, site] = 0.0
    out[rows, site, value] = 1.0
    return out


def eval_change(log_prob, x: torch.Tensor, ev: Evaluation, site: torch.Tensor, value: torch.Tensor,
                grad: bool = True, known_log_prob: torch.Tensor | None = None) -> Evaluation:
    """The evaluation at one-hot x (C, D, K) with site ``site[c]`` set to value ``value[c]`` ((C,) int64).

    ``log_prob.eval_change`` when offered, else a full evaluation of the changed states; ``known_log_prob``
    as in :func:`eval_flips`.
    """
    own = own_method(log_prob, "eval_change")
    if own is not None:
        return own(x, ev, site, value, grad, known_log_prob)
    new = evaluate(log_prob, _set_site(x, site, value), grad)
    return new if known_log_prob is None else new._replace(log_prob=known_log_prob)


def eval_change_candidates(log_prob, x: torch.Tensor, ev: Evaluation, site: torch.Tensor) -> torch.Tensor:
    """(C, K) f at one-hot x (C, D, K) with site ``site[c]`` set to each value k = 0..K-1.

    ``log_prob.eval_change_candidates`` when offered, else one log_prob call on the (C * K, D, K)
    candidates.
    """
    own = own_method(log_prob, "eval_change_candidates")
    if own is not None:
        return own(x, ev, site)
    C, D, K = x.shape
    candidates = x[:, None].repeat(1, K, 1, 1)  # (C, K, D, K)
    rows = torch.arange(C, device=x.device)
    candidates[rows, :, site] = torch.eye(K, dtype=x.dtype, device=x.device)
    with torch.no_grad():
        return log_prob(candidates.reshape(C * K, D, K)).reshape(C, K)


#: :class:`RowChoice` copies the rejected rows into a copy of ``new`` on the CPU from this many entries on
#: (a bool-conditioned ``torch.where`` there costs several times a plain copy)
_ROW_COPY_MIN = 4096


class RowChoice:
    """Per chain (row), a new tensor where ``accepted`` (C,) bool, else an old one, for every tensor of a step's
    result: ``choose = RowChoice(accepted); choose(new, old)``. The rejected rows' indices, which the CPU's row
    copy needs, are found once and shared by all the tensors chosen.

    Args:
        accepted: (C,) bool.
    """

    __slots__ = ("accepted", "_rejected")

    def __init__(self, accepted: torch.Tensor):
        self.accepted = accepted
        self._rejected: torch.Tensor | None = None

    def __call__(self, new: torch.Tensor, old: torch.Tensor) -> torch.Tensor:
        """``new`` where accepted, else ``old``: a new tensor, (C, ...) like ``new`` (``old`` may broadcast
        against it). Same values as ``torch.where(accepted[:, None, ...], new, old)``; on the CPU, for tensors of
        at least :data:`_ROW_COPY_MIN` entries, a copy of ``new`` with the rejected rows copied in (no bool pass
        over the entries), which neither input shares."""
        if (new.device.type == "cpu" and new.numel() >= _ROW_COPY_MIN and new.shape == old.shape
                and new.dtype == old.dtype):
            if self._rejected is None:
                self._rejected = (~self.accepted).nonzero().squeeze(1)
            return new.index_copy(0, self._rejected, old.index_select(0, self._rejected))
        return torch.where(self.accepted.reshape(-1, *([1] * (new.dim() - 1))), new, old)


def select(accepted: torch.Tensor | RowChoice, new: Evaluation, old: Evaluation) -> Evaluation:
    """Per chain, ``new`` where accepted (C,) bool (or a :class:`RowChoice`), else ``old`` (fields that are None
    stay None; one :class:`RowChoice` for all the fields)."""
    choose = accepted if isinstance(accepted, RowChoice) else RowChoice(accepted)

    def pick(a, b):
        if a is None or b is None:
            return None
        return choose(a, b)

    return Evaluation(pick(new.log_prob, old.log_prob), pick(new.grad, old.grad), pick(new.aux, old.aux))
