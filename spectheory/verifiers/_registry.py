"""The verifier registry: one :class:`Verifier` record per verifier, the single source of its facts.

Every verifier is one function ``fn(p, q, drafts, coins, *, sampling) -> int``
written against the coins protocol (:mod:`spectheory.coins`): ``p`` and ``q``
are 1-D target and draft rows (float64 or Fraction object arrays), ``drafts``
the tuple of draft token ids in draw order (``n = len(drafts)``), and the
return value is the output token ``y``.  Membership acceptance is
:math:`P(y \\in \\{x_1..x_n\\})`.

A record holds everything the rest of the package needs to know about a
verifier: its draft laws, closed form, numba kernel, torch form and how many
uniforms a trial consumes.  The name lists kept elsewhere
(``spectheory.sim._kernels.KERNEL_VERIFIERS``, ``spectheory.sim.replay.REPLAY_VERIFIERS``,
``spectheory.torch.TORCH_VERIFIERS``, ``spectheory.exact.CLOSED_FORMS``) are
computed from :data:`REGISTRY`.

Dispatch goes by the function's identity, never by a name: a kernel, torch
form or built-in closed form belongs to the one function it was written and
tested for, and a record that pairs it with any other function is refused.  A
user record named ``"rrs"`` around another function therefore runs that
function (in Python), not the registered kernel.

Two protocols (:data:`PROTOCOLS`):

``"coins"``
    ``fn(p, q, drafts, coins, *, sampling) -> int``: sampled, replayed and
    enumerated exactly (:mod:`spectheory.exact`), so it works everywhere.
``"blackbox"``
    ``fn(target, draft, drafts, rng) -> int`` with a :class:`numpy.random.Generator`:
    sampled only, so it works wherever a statistical answer suffices
    (:func:`spectheory.simulate`, :func:`spectheory.check_lossless`, replay,
    sweep); the exact paths refuse it.
"""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from .._errors import InvalidParameterError
from ..drafting import SAMPLINGS
from . import _closed_forms as cf
from .coupling import khisti, optimal_lp
from .embedded import embedded_iid
from .hub import greedy, spechub
from .kseq import kseq
from .optimal import optimal, optimal_acceptance
from .pair_scores import pair_scores
from .pair_tiers import pair_tiers
from .pointmass import nss
from .random_utility import random_utility
from .rrs import rrs, rrs_wor
from .single import naive, sd
from .typical import typical

__all__ = [
    "PROTOCOLS",
    "REGISTRY",
    "Verifier",
    "as_verifier",
    "builtin_names",
    "get_verifier",
    "register_verifier",
    "unregister_verifier",
    "verifier",
]

#: The two verifier protocols (module docstring).
PROTOCOLS = ("coins", "blackbox")

# The built-in backends and the one function each implements (dispatch by identity).
_KERNEL_OF = {
    "sd": sd, "naive": naive, "rrs": rrs, "rrs_wor": rrs_wor, "kseq": kseq,
    "greedy": greedy, "spechub": spechub, "nss": nss, "typical": typical, "optimal": optimal,
    "pair_scores": pair_scores,
}  # fmt: skip
_CLOSED_FORM_OF = {
    cf.sd_acceptance: sd, cf.rrs_acceptance: rrs, cf.kseq_acceptance: kseq,
    cf.spechub_acceptance: spechub, cf.greedy_acceptance: greedy,
    cf.nss_acceptance: nss, cf.naive_acceptance: naive, optimal_acceptance: optimal,
}  # fmt: skip


def _two(n):
    """Accept coin and residual draw (``sd``, ``naive``, ``greedy``)."""
    return 2


def _four(n):
    """SpecHub: pair-type coin, two accept coins, residual draw."""
    return 4


def _none(n):
    """Typical acceptance flips no coin."""
    return 0


def _three(n):
    """``pair_scores``: selection coin, accept coin, residual draw."""
    return 3


def _optimal_coins(n):
    """``optimal``: component, accept coin, residual draw (SD's two for one draft)."""
    return 2 if n == 1 else 3


def _per_draft(n):
    """One coin per draft and one residual draw (``rrs``, ``rrs_wor``, ``kseq``, ``nss``)."""
    return n + 1


def _describe(fn):
    return getattr(fn, "__qualname__", None) or repr(fn)


def _protocol_of(fn) -> str | None:
    """``"coins"`` if ``fn`` takes a ``sampling`` keyword and four positional
    arguments, ``"blackbox"`` if it takes exactly four positional arguments
    and no ``sampling``; None when its signature says neither."""
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return None
    params = list(sig.parameters.values())
    positional = [
        q for q in params if q.kind in (q.POSITIONAL_ONLY, q.POSITIONAL_OR_KEYWORD)
    ]
    varargs = any(q.kind == q.VAR_POSITIONAL for q in params)
    required = [q for q in positional if q.default is q.empty]
    fits_four = len(required) <= 4 and (len(positional) >= 4 or varargs)
    if "sampling" in sig.parameters or any(q.kind == q.VAR_KEYWORD for q in params):
        return "coins" if fits_four else None
    return "blackbox" if fits_four else None


@dataclass(frozen=True)
class Verifier:
    """A verifier and its facts.

    Attributes
    ----------
    name : str
        Label (registry key once registered).  Never used for dispatch.
    function : callable
        ``function(p, q, drafts, coins, *, sampling) -> int`` (protocol
        ``"coins"``) or ``function(target, draft, drafts, rng) -> int``
        (``"blackbox"``).
    paper : str
        Authors and title (short).
    arxiv : str or None
        arXiv id(s) of the source.
    samplings : tuple of str
        Draft laws (subset of :data:`spectheory.drafting.SAMPLINGS`) under
        which it is valid; the first is the default law.
    lossless : bool
        Whether its output law is meant to be the target for every valid input.
    closed_form : callable or None
        ``closed_form(p, q, n, sampling)``: exact membership acceptance.
    closed_form_samplings : tuple of str
        The draft laws the closed form covers.
    cost : str
        Cost per position.
    n_values : tuple of int or None
        Allowed numbers of drafts (None: any ``n >= 1``).
    n_values_by_law : dict or tuple of (str, tuple of int) pairs
        Narrower allowed numbers of drafts under some draft laws (stored as
        sorted pairs), e.g. a verifier of yours that takes any ``n`` for i.i.d.
        drafts but only ``n = 3`` without replacement.  :meth:`n_values_for`
        combines it with ``n_values``.
    needs_draft_law : bool
        True if it relies on the drafts having been drawn from ``q`` under
        the declared law (its q-ratios); False for verifiers valid for any
        drafter (point-mass, typical).
    protocol : {"coins", "blackbox"}
        How ``function`` is called (module docstring).
    kernel : str or None
        Key of its numba kernel in :mod:`spectheory.sim._kernels` (built-in
        verifiers only: the kernel must implement ``function`` itself).
    torch_form : str or None
        Key of its batched form in :mod:`spectheory.torch.verifiers` (idem).
    uniforms : callable or None
        ``uniforms(n) -> int``: the most uniforms one trial consumes, the
        budget of the kernel and torch form.

    Raises
    ------
    InvalidParameterError
        Unknown draft laws or protocol, a non-callable function, or a built-in
        kernel, torch form or closed form paired with a function that is not
        the one it implements.
    """

    name: str
    function: Callable
    paper: str = ""
    arxiv: str | None = None
    samplings: tuple[str, ...] = SAMPLINGS
    lossless: bool = True
    closed_form: Callable | None = None
    closed_form_samplings: tuple[str, ...] = ()
    cost: str = ""
    n_values: tuple[int, ...] | None = None
    n_values_by_law: tuple[tuple[str, tuple[int, ...]], ...] = ()
    needs_draft_law: bool = True
    protocol: str = "coins"
    kernel: str | None = None
    torch_form: str | None = None
    uniforms: Callable | None = None

    def __post_init__(self):
        if not isinstance(self.name, str) or not self.name:
            raise InvalidParameterError(f"name must be a non-empty str; got {self.name!r}")
        if not callable(self.function):
            raise InvalidParameterError(
                f"function of verifier {self.name!r} must be callable; got {self.function!r}"
            )
        if self.protocol not in PROTOCOLS:
            raise InvalidParameterError(
                f"protocol of verifier {self.name!r} must be one of {PROTOCOLS}; "
                f"got {self.protocol!r}"
            )
        seen = _protocol_of(self.function)
        if seen is not None and seen != self.protocol:
            # A black box stored as coins (or the reverse) would fail at its first call
            # with a foreign TypeError, or worse, be fed the wrong arguments.
            raise InvalidParameterError(
                f"verifier {self.name!r} is declared protocol={self.protocol!r}, but the "
                f"signature of its function reads as the {seen!r} protocol "
                "(coins: fn(p, q, drafts, coins, *, sampling); blackbox: "
                f"fn(target, draft, drafts, rng)); pass protocol={seen!r}"
            )
        # Facts are trusted everywhere (the report reads `lossless`, every call `n_values`):
        # a wrong type is refused here, not read as something else later ("no" is truthy,
        # the str "iid" iterates letter by letter, n_values=2 fails as a foreign TypeError).
        for field in ("lossless", "needs_draft_law"):
            value = getattr(self, field)
            if not isinstance(value, bool | np.bool_):
                raise InvalidParameterError(
                    f"{field} of verifier {self.name!r} must be a bool; got {value!r}"
                )
            object.__setattr__(self, field, bool(value))
        for field in ("samplings", "closed_form_samplings"):
            value = getattr(self, field)
            if isinstance(value, str) or not isinstance(value, tuple | list):
                raise InvalidParameterError(
                    f"{field} of verifier {self.name!r} must be a tuple of draft laws "
                    f"(e.g. ('iid',)); got {value!r}"
                )
            object.__setattr__(self, field, tuple(value))
        if self.n_values is not None:
            ok = isinstance(self.n_values, tuple | list) and len(self.n_values) > 0 and all(
                isinstance(k, int | np.integer) and not isinstance(k, bool | np.bool_) and k >= 1
                for k in self.n_values
            )
            if not ok:
                raise InvalidParameterError(
                    f"n_values of verifier {self.name!r} must be None or a tuple of integers "
                    f">= 1; got {self.n_values!r}"
                )
            object.__setattr__(self, "n_values", tuple(int(k) for k in self.n_values))
        object.__setattr__(self, "n_values_by_law", self._checked_n_values_by_law())
        for field in ("closed_form", "uniforms"):
            value = getattr(self, field)
            if value is not None and not callable(value):
                raise InvalidParameterError(
                    f"{field} of verifier {self.name!r} must be callable or None; got {value!r}"
                )
        bad = [s for s in self.samplings if s not in SAMPLINGS]
        if bad or not self.samplings:
            raise InvalidParameterError(
                f"verifier {self.name!r} lists unknown draft laws {bad or self.samplings!r}"
            )
        if self.closed_form is not None and not self.closed_form_samplings:
            # closed_form_for() answers only for the laws listed: with none, the closed
            # form was stored and never used (replay's `exact` empty, acceptance refused)
            raise InvalidParameterError(
                f"verifier {self.name!r} has a closed_form but no closed_form_samplings: "
                f"name the draft laws it covers, e.g. closed_form_samplings=('iid',) (of "
                f"its samplings {self.samplings})"
            )
        if not set(self.closed_form_samplings) <= set(self.samplings):
            raise InvalidParameterError(
                f"verifier {self.name!r}: closed_form_samplings {self.closed_form_samplings} "
                f"are not among its samplings {self.samplings}"
            )
        for field, key in (("kernel", self.kernel), ("torch_form", self.torch_form)):
            if key is None:
                continue
            owner = _KERNEL_OF.get(key)
            if owner is None or owner is not self.function:
                raise InvalidParameterError(
                    f"verifier {self.name!r}: {field}={key!r} implements "
                    f"{_describe(owner)}, not {_describe(self.function)}; a {field} is "
                    "dispatched by the function it implements, never by name"
                )
            if self.uniforms is None:
                raise InvalidParameterError(
                    f"verifier {self.name!r}: a {field} needs uniforms(n), its coin budget"
                )
        owner = _CLOSED_FORM_OF.get(self.closed_form)
        if owner is not None and owner is not self.function:
            raise InvalidParameterError(
                f"verifier {self.name!r}: closed_form {_describe(self.closed_form)} is the "
                f"acceptance of {_describe(owner)}, not of {_describe(self.function)}"
            )

    def __call__(self, *args, **kwargs):
        """Call :attr:`function` (so a decorated function stays callable)."""
        return self.function(*args, **kwargs)

    @property
    def exact(self) -> bool:
        """Whether its law can be enumerated exactly (the coins protocol)."""
        return self.protocol == "coins"

    def _checked_n_values_by_law(self):
        value = self.n_values_by_law
        pairs = value.items() if isinstance(value, dict) else value
        try:
            pairs = [(law, tuple(ns)) for law, ns in pairs]
        except (TypeError, ValueError):
            pairs = None
        ok = pairs is not None and all(
            law in self.samplings and len(ns) > 0 and all(
                isinstance(k, int | np.integer) and not isinstance(k, bool | np.bool_) and k >= 1
                for k in ns)
            for law, ns in pairs
        )
        if not ok:
            raise InvalidParameterError(
                f"n_values_by_law of verifier {self.name!r} must map some of its samplings "
                f"{self.samplings} to tuples of integers >= 1; got {value!r}"
            )
        return tuple(sorted((law, tuple(int(k) for k in ns)) for law, ns in pairs))

    def n_values_for(self, sampling: str) -> tuple[int, ...] | None:
        """Allowed numbers of drafts under ``sampling`` (None: any ``n >= 1``)."""
        narrower = dict(self.n_values_by_law).get(sampling)
        if narrower is None:
            return self.n_values
        if self.n_values is None:
            return narrower
        return tuple(k for k in narrower if k in self.n_values)

    def supports(self, n: int, sampling: str) -> bool:
        """Whether it is valid with ``n`` drafts drawn under ``sampling``."""
        allowed = self.n_values_for(sampling)
        return sampling in self.samplings and (allowed is None or n in allowed)

    def closed_form_for(self, sampling: str):
        """Its closed-form acceptance under ``sampling``, or None."""
        if self.closed_form is not None and sampling in self.closed_form_samplings:
            return self.closed_form
        return None


_ALL = SAMPLINGS


def _builtin(name, function, *args, uniforms=None, **kwargs):
    """A built-in record; ``uniforms`` given means it has a numba kernel and a torch form."""
    fast = {} if uniforms is None else {"kernel": name, "torch_form": name, "uniforms": uniforms}
    return Verifier(name, function, *args, **kwargs, **fast)


_ENTRIES = [
    _builtin("sd", sd, "Leviathan, Kalman, Matias; Chen et al.", "2211.17192, 2302.01318",
             _ALL, True, cf.sd_acceptance, _ALL, "O(V)", n_values=(1,), uniforms=_two),
    _builtin("rrs", rrs, "Miao et al., SpecInfer (multi-step speculative sampling)",
             "2305.09781", ("iid",), True, cf.rrs_acceptance, ("iid",), "O(nV)",
             uniforms=_per_draft),
    _builtin("rrs_wor", rrs_wor, "Jeon et al., RSD; Chen et al., Sequoia; EAGLE",
             "2402.14160, 2402.12374", ("without_replacement",), True, None, (), "O(nV)",
             uniforms=_per_draft),
    _builtin("kseq", kseq, "Sun et al., SpecTr (K-SEQ)", "2310.15141", ("iid",), True,
             cf.kseq_acceptance, ("iid",), "O(V log 1/eps) bisection for rho*, then O(n + V)",
             uniforms=_per_draft),
    _builtin("spechub", spechub, "R. Sun et al., SpecHub", "2411.05289", ("greedy",), True,
             cf.spechub_acceptance, ("greedy",), "O(V)", n_values=(2,), uniforms=_four),
    _builtin("greedy", greedy, "Hu, Zheng, Liu, Huang, Towards Optimal Multi-draft SD",
             "2502.18779", ("greedy",), True, cf.greedy_acceptance, ("greedy",),
             "O(V) (plus top-(n-1) selection)", uniforms=_two),
    _builtin("nss", nss, "Miao et al., SpecInfer (naive sampling); point-mass recursion",
             "2305.09781", _ALL, True, cf.nss_acceptance, ("iid", "greedy"), "O(nV)",
             needs_draft_law=False, uniforms=_per_draft),
    _builtin("naive", naive, "Thomas et al., Alg. 7 (SD on the first draft)", None,
             ("iid", "without_replacement"), True, cf.naive_acceptance, ("iid",), "O(V)",
             uniforms=_two),
    _builtin("khisti", khisti, "Khisti et al., canonical decomposition (IS + SD)",
             "2410.18234", _ALL, True, None, (),
             "transport LP over draft sets once per instance, then O(V)"),
    _builtin("optimal_lp", optimal_lp, "Sun et al., SpecTr / Hu et al. (optimal transport LP)",
             "2310.15141, 2502.18779", _ALL, True, None, (),
             "transport LP over draft sets once per instance, then O(V)"),
    _builtin("optimal", optimal, "Thomas & Pal (Global Resolution); polymatroid tier mixture",
             "2511.15898, 2410.18234", ("iid", "greedy", "without_replacement"), True,
             optimal_acceptance, ("iid", "greedy"),
             "O(V log V) plan per row, then O(n^2) per trial (without replacement: one "
             "projected Newton solve per row for two drafts, greedy passes of O(nV) per node "
             "of a log-time grid for more; then O(n log n) per trial)",
             uniforms=_optimal_coins),
    _builtin("embedded_iid", embedded_iid,
             "spectheory: optimal i.i.d. verifier on the i.i.d. sample inside the drafts",
             None, ("without_replacement",), True, None, (),
             "one O(V log V) i.i.d. plan per stage reached (at most n), cached per instance"),
    _builtin("pair_tiers", pair_tiers,
             "spectheory: tier rule with a first-draft coin for two drafts without replacement",
             "2410.18234, 2502.18779", ("without_replacement",), True, None, (),
             "one tier search per row (a sort, then O(V) per candidate tier), then O(1) per trial",
             n_values=(2,)),
    _builtin("pair_scores", pair_scores,
             "spectheory: ramp score rule for two drafts without replacement (reaches the bound, "
             "certified per row)",
             "2410.18234, 2502.18779", ("without_replacement",), True, None, (),
             "one projected Newton solve per row (O(V log V) a step), then O(1) per trial",
             n_values=(2,), uniforms=_three),
    _builtin("random_utility", random_utility,
             "spectheory: uniform random-utility rule for any n and draft law (reaches the "
             "bound, certified per row)",
             # without replacement first: the default law, as the function's and the plan's
             "2410.18234, 2502.18779", ("without_replacement", "iid", "greedy"), True, None, (),
             "one score solve over the draft sets per instance (small draft support), then "
             "O(n) per trial and O(V) for the residual draw after a rejection"),
    _builtin("typical", typical, "Cai et al., Medusa (typical acceptance), LOSSY", "2401.10774",
             _ALL, False, None, (), "O(V)", needs_draft_law=False, uniforms=_none),
]  # fmt: skip

#: Registered verifiers by name: the built-in ones, then those added with
#: :func:`register_verifier`.
REGISTRY: dict[str, Verifier] = {v.name: v for v in _ENTRIES}
_BUILTIN_NAMES = frozenset(REGISTRY)


def as_verifier(verifier, *, protocol: str | None = None) -> Verifier:
    """A :class:`Verifier` for a registry name, a record or a plain function.

    A plain function becomes an unregistered record named after it, with no
    kernel, torch form or closed form (so it always runs its own code).  Its
    protocol is ``protocol`` when given, else read from its signature: a
    ``sampling`` keyword means the coins protocol ``fn(p, q, drafts, coins, *,
    sampling)``; four positional parameters and no ``sampling`` mean the
    black-box protocol ``fn(target, draft, drafts, rng)``.  Use
    :func:`verifier` (or build a :class:`Verifier`) to state it explicitly.

    Examples
    --------
    >>> as_verifier("rrs") is REGISTRY["rrs"]
    True
    >>> def mine(target, draft, drafts, rng):
    ...     return int(drafts[0])
    >>> v = as_verifier(mine)
    >>> v.name, v.protocol, v.kernel
    ('mine', 'blackbox', None)
    """
    if isinstance(verifier, Verifier):
        if protocol is not None and protocol != verifier.protocol:
            raise InvalidParameterError(
                f"verifier {verifier.name!r} has protocol {verifier.protocol!r}, not {protocol!r}"
            )
        return verifier
    if isinstance(verifier, str):
        if verifier in REGISTRY:
            return REGISTRY[verifier]
        if ":" in verifier:
            return _imported(verifier, protocol)
        raise InvalidParameterError(
            f"verifier must be a Verifier, a function, 'package.module:function' or one of "
            f"{', '.join(map(repr, REGISTRY))}; got {verifier!r}"
        )
    if callable(verifier):
        found = protocol or _protocol_of(verifier)
        if found is None:
            raise InvalidParameterError(
                f"cannot tell the protocol of verifier {verifier!r} from its signature: write "
                "fn(p, q, drafts, coins, *, sampling) (coins protocol) or "
                "fn(target, draft, drafts, rng) (black box), or wrap it with "
                "spectheory.verifier(protocol=...)"
            )
        name = getattr(verifier, "__name__", None) or type(verifier).__name__
        return Verifier(name, verifier, protocol=found)
    raise InvalidParameterError(
        f"verifier must be a Verifier, a function or one of {', '.join(map(repr, REGISTRY))}; "
        f"got {verifier!r}"
    )


def _imported(spec, protocol=None) -> Verifier:
    """The verifier ``"package.module:attr"`` names (a function or a :class:`Verifier`).

    The current folder is importable, as with ``python -m``, so a file of one's own
    next to the command works; a function is named by ``spec`` itself in tables (two
    functions of one name in two modules stay apart).  Every process that resolves the
    spec imports it again, so the workers of a sweep cluster find it too.
    """
    import importlib
    import os
    import sys

    module, _, attr = spec.partition(":")
    cwd = os.getcwd()
    added = cwd not in sys.path and "" not in sys.path
    if added:
        sys.path.insert(0, cwd)
    try:
        obj = getattr(importlib.import_module(module), attr)
    except (ImportError, AttributeError, ValueError) as exc:
        raise InvalidParameterError(f"verifier {spec!r} cannot be imported: {exc}") from None
    finally:
        if added and cwd in sys.path:
            sys.path.remove(cwd)
    if isinstance(obj, Verifier):
        return as_verifier(obj, protocol=protocol)
    if not callable(obj):
        raise InvalidParameterError(
            f"verifier {spec!r} is not a function or a Verifier; got {type(obj).__name__}"
        )
    return dataclasses.replace(as_verifier(obj, protocol=protocol), name=spec)


def get_verifier(verifier) -> Verifier:
    """Resolve a registry name, pass a :class:`Verifier` through, or wrap a function.

    Same as :func:`as_verifier`.

    Examples
    --------
    >>> get_verifier("rrs").samplings
    ('iid',)
    """
    return as_verifier(verifier)


def verifier(function=None, *, name=None, protocol="coins", **facts):
    """Decorator: state a function's protocol and facts; returns a :class:`Verifier`.

    The record is callable like the function.  ``facts`` are the other
    :class:`Verifier` fields (``samplings``, ``lossless``, ``n_values``,
    ``needs_draft_law``, ``closed_form``, ...).

    Examples
    --------
    >>> @verifier(samplings=("iid",))
    ... def first_draft(p, q, drafts, coins, *, sampling):
    ...     return drafts[0]
    >>> first_draft.name, first_draft.protocol, first_draft.samplings
    ('first_draft', 'coins', ('iid',))
    """

    def wrap(fn):
        return Verifier(name or getattr(fn, "__name__", repr(fn)), fn, protocol=protocol, **facts)

    return wrap if function is None else wrap(function)


def register_verifier(record: Verifier, *, replace: bool = False) -> Verifier:
    """Add a user's :class:`Verifier` to :data:`REGISTRY` under its name.

    Registered, it can be named by a string everywhere (``check_lossless("mine",
    ...)``, ``replay(..., verifiers=("mine",))``, the command line).  Built-in
    names cannot be taken; another user record of the same name is replaced
    only with ``replace=True``.

    Examples
    --------
    >>> @verifier(samplings=("iid",), lossless=False)
    ... def always_first(p, q, drafts, coins, *, sampling):
    ...     return drafts[0]
    >>> register_verifier(always_first) is REGISTRY["always_first"]
    True
    >>> unregister_verifier("always_first")
    """
    if not isinstance(record, Verifier):
        raise InvalidParameterError(
            f"record must be a Verifier (see spectheory.verifier); got {type(record).__name__}"
        )
    if record.name in _BUILTIN_NAMES:
        raise InvalidParameterError(
            f"name {record.name!r} belongs to a built-in verifier; register yours under another"
        )
    if record.name in REGISTRY and not replace and REGISTRY[record.name] is not record:
        raise InvalidParameterError(
            f"a verifier named {record.name!r} is already registered; pass replace=True"
        )
    REGISTRY[record.name] = record
    return record


def unregister_verifier(name: str) -> None:
    """Remove a user verifier registered with :func:`register_verifier`."""
    if name in _BUILTIN_NAMES:
        raise InvalidParameterError(f"name {name!r} is a built-in verifier; it cannot be removed")
    if name not in REGISTRY:
        raise InvalidParameterError(f"no user verifier named {name!r} is registered")
    del REGISTRY[name]


def builtin_names(fact: str) -> tuple[str, ...]:
    """Names of the built-in verifiers that have ``fact`` (``"kernel"``,
    ``"torch_form"`` or ``"closed_form"``), in registry order."""
    return tuple(v.name for v in _ENTRIES if getattr(v, fact) is not None)
