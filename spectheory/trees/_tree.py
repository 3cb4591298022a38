r"""The draft tree: parent array, token per node, draws per node with multiplicities.

Node 0 is the root (the context; it carries no token).  Every other node ``i``
has a parent ``parents[i] < i`` (so the arrays are in topological order) and a
token ``tokens[i]``; siblings carry distinct tokens (identical draws are merged
into one node).  ``draws[u]`` lists the children of ``u`` *in draw order*, a
child appearing once per draw that produced its token: its multiplicity.  A
verifier at ``u`` sees the draft tuple ``tuple(tokens[c] for c in draws[u])``,
which is what the drafter sampled, so per-node multi-draft verifiers
(:mod:`spectheory.verifiers`) apply unchanged.

``kind`` is the law of the draws at every node, given the path to it:

``"chain"``
    one draw per node (a block of ``gamma`` tokens);
``"iid"``
    i.i.d. draws from :math:`q(\cdot \mid \text{path})` (SpecInfer, SpecTr);
``"without_replacement"``
    sequential draws without replacement (RSD, Sequoia, EAGLE);
``"deterministic"``
    any other drafter (argmax, fixed top-k): only point-mass verification
    (NSS) is valid.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .._errors import InvalidParameterError
from .._validate import check_choice

__all__ = ["TREE_KINDS", "DraftTree", "TreeBuilder"]

#: Laws of the draws at each node (see the module docstring).
TREE_KINDS = ("chain", "iid", "without_replacement", "deterministic")


def _int_tuple(values, name: str) -> tuple:
    """``values`` as a tuple of Python ints, refusing bools, floats and strings (``int(1.9)``
    would silently truncate); Python and numpy integers are accepted."""
    if isinstance(values, str | bytes):
        raise InvalidParameterError(f"{name} must be a sequence of ints; got {values!r}")
    try:
        values = tuple(values)
    except TypeError:
        raise InvalidParameterError(f"{name} must be a sequence of ints; got {values!r}") from None
    for i, x in enumerate(values):
        if isinstance(x, bool | np.bool_) or not isinstance(x, int | np.integer):
            raise InvalidParameterError(
                f"{name}[{i}] must be an int; got {x!r} of type {type(x).__name__}"
            )
    return tuple(int(x) for x in values)


@dataclass(frozen=True)
class DraftTree:
    """A validated draft tree.

    Parameters
    ----------
    parents : tuple of int, length N
        ``parents[0] == -1``; ``0 <= parents[i] < i`` for ``i >= 1``.
    tokens : tuple of int, length N
        ``tokens[0] == -1``; ``tokens[i] >= 0``; siblings distinct.
    draws : tuple of tuple of int, length N
        ``draws[u]``: the children of ``u`` in draw order, with repeats; each
        child of ``u`` appears at least once, and nothing else appears.
    kind : str
        One of :data:`TREE_KINDS`.

    Examples
    --------
    A root with children ``a = 0`` (drawn twice) and ``b = 1``, and ``a``'s child ``c = 2``:

    >>> t = DraftTree((-1, 0, 0, 1), (-1, 0, 1, 2), ((1, 2, 1), (3,), (), ()), "iid")
    >>> t.size, t.depth, t.path(3), t.multiplicity(1), t.draft_tokens(0)
    (4, 2, (0, 2), 2, (0, 1, 0))
    """

    parents: tuple
    tokens: tuple
    draws: tuple
    kind: str

    def __post_init__(self):
        check_choice(self.kind, "kind", TREE_KINDS)
        parents = _int_tuple(self.parents, "parents")
        tokens = _int_tuple(self.tokens, "tokens")
        try:
            draws = tuple(_int_tuple(d, f"draws[{u}]") for u, d in enumerate(self.draws))
        except TypeError:
            raise InvalidParameterError(
                f"draws must be a sequence of sequences of ints; got {self.draws!r}"
            ) from None
        n = len(parents)
        if n == 0 or len(tokens) != n or len(draws) != n:
            raise InvalidParameterError(
                f"parents, tokens and draws must have the same positive length; got "
                f"{len(parents)}, {len(tokens)}, {len(draws)}"
            )
        if parents[0] != -1 or tokens[0] != -1:
            raise InvalidParameterError(
                f"node 0 is the root: parents[0] and tokens[0] must be -1; got "
                f"{parents[0]} and {tokens[0]}"
            )
        children = [[] for _ in range(n)]
        for i in range(1, n):
            if not 0 <= parents[i] < i:
                raise InvalidParameterError(
                    f"parents[{i}] = {parents[i]} must lie in [0, {i}) (topological order)"
                )
            if tokens[i] < 0:
                raise InvalidParameterError(f"tokens[{i}] = {tokens[i]} is negative")
            children[parents[i]].append(i)
        for u in range(n):
            toks = [tokens[c] for c in children[u]]
            if len(set(toks)) != len(toks):
                raise InvalidParameterError(
                    f"node {u} has two children with the same token ({toks}); merge them "
                    "and record the repeat in draws"
                )
            if set(draws[u]) != set(children[u]):
                raise InvalidParameterError(
                    f"draws[{u}] = {draws[u]} must list exactly the children {children[u]} "
                    f"of node {u} (in draw order, with repeats)"
                )
            if self.kind in ("chain", "without_replacement") and len(draws[u]) != len(children[u]):
                raise InvalidParameterError(
                    f"a {self.kind!r} tree cannot repeat a draw; draws[{u}] = {draws[u]}"
                )
            if self.kind == "chain" and len(children[u]) > 1:
                raise InvalidParameterError(
                    f"a chain has at most one child per node; node {u} has {children[u]}"
                )
        object.__setattr__(self, "parents", parents)
        object.__setattr__(self, "tokens", tokens)
        object.__setattr__(self, "draws", draws)
        depth = [0] * n
        for i in range(1, n):
            depth[i] = depth[parents[i]] + 1
        object.__setattr__(self, "_depths", tuple(depth))
        object.__setattr__(self, "_children", tuple(tuple(c) for c in children))

    @property
    def size(self) -> int:
        """Number of nodes, root included."""
        return len(self.parents)

    @property
    def depth(self) -> int:
        """Largest node depth (the root has depth 0)."""
        return max(self._depths)

    def node_depth(self, i: int) -> int:
        """Depth of node ``i``."""
        return self._depths[i]

    def children(self, u: int) -> tuple:
        """Children of ``u`` in order of first draw."""
        return self._children[u]

    def child_with_token(self, u: int, token: int):
        """The child of ``u`` carrying ``token``, or None."""
        for c in self._children[u]:
            if self.tokens[c] == token:
                return c
        return None

    def multiplicity(self, i: int) -> int:
        """How many draws at ``parents[i]`` produced node ``i``'s token."""
        return self.draws[self.parents[i]].count(i)

    def draft_tokens(self, u: int) -> tuple:
        """The draft tuple at ``u``: the tokens of ``draws[u]`` in draw order."""
        return tuple(self.tokens[c] for c in self.draws[u])

    def path(self, i: int) -> tuple:
        """Tokens from the root to ``i`` (empty for the root)."""
        out = []
        while i > 0:
            out.append(self.tokens[i])
            i = self.parents[i]
        return tuple(reversed(out))


class TreeBuilder:
    """Grows a :class:`DraftTree` draw by draw, merging identical sibling tokens.

    Examples
    --------
    >>> b = TreeBuilder()
    >>> b.draw(0, 4), b.draw(0, 4), b.draw(0, 2)
    (1, 1, 2)
    >>> b.build("iid").draws[0]
    (1, 1, 2)
    """

    def __init__(self):
        self.parents = [-1]
        self.tokens = [-1]
        self.draws = [[]]

    def draw(self, u: int, token: int) -> int:
        """Record a draw of ``token`` at ``u``; return the (possibly existing) child."""
        if isinstance(token, bool) or not isinstance(token, int | np.integer) or token < 0:
            raise InvalidParameterError(f"token must be a token id (an int >= 0); got {token!r}")
        token = int(token)
        for c in self.draws[u]:
            if self.tokens[c] == token:
                self.draws[u].append(c)
                return c
        self.parents.append(u)
        self.tokens.append(token)
        self.draws.append([])
        c = len(self.parents) - 1
        self.draws[u].append(c)
        return c

    def path(self, i: int) -> tuple:
        out = []
        while i > 0:
            out.append(self.tokens[i])
            i = self.parents[i]
        return tuple(reversed(out))

    def build(self, kind: str) -> DraftTree:
        return DraftTree(
            tuple(self.parents), tuple(self.tokens), tuple(map(tuple, self.draws)), kind
        )
