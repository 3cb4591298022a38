"""The key-value cache's name in transformers' forward calls, across its versions.

Until transformers 5.23 a model's ``forward`` takes the cache as
``past_key_values`` and returns it in ``out.past_key_values``; from 5.24 the
keyword and the output field are ``cache`` and the old keyword warns
(``FutureWarning``, removal announced for 5.40).  Every forward call of this
package goes through :func:`cache_kwargs` and :func:`cache_of`, so that it runs
on both without warnings.
"""

from __future__ import annotations

import inspect
from functools import lru_cache

__all__ = ["cache_kwargs", "cache_of"]


@lru_cache(maxsize=64)
def _keyword(forward_owner: type) -> str:
    """``"cache"`` when the class's ``forward`` takes it, else ``"past_key_values"``."""
    params = inspect.signature(forward_owner.forward).parameters
    return "cache" if "cache" in params else "past_key_values"


def cache_kwargs(module, past) -> dict:
    """``{keyword: past}`` for ``module(...)``, the keyword its ``forward`` takes.

    Examples
    --------
    >>> class New:
    ...     def forward(self, input_ids=None, cache=None, use_cache=None): ...
    >>> class Old:
    ...     def forward(self, input_ids=None, past_key_values=None, use_cache=None): ...
    >>> cache_kwargs(New(), "kv"), cache_kwargs(Old(), "kv")
    ({'cache': 'kv'}, {'past_key_values': 'kv'})
    """
    return {_keyword(type(module)): past}


def cache_of(out):
    """The cache a forward's output carries (``out.cache``, or ``out.past_key_values`` before 5.24).

    Examples
    --------
    >>> from types import SimpleNamespace
    >>> cache_of(SimpleNamespace(cache="new")), cache_of(SimpleNamespace(past_key_values="old"))
    ('new', 'old')
    """
    cache = getattr(out, "cache", None)
    return cache if cache is not None else out.past_key_values
