"""The public API has one spelling - pyspark's and delta-spark's camelCase, keyword-only after
the first few arguments - and the spellings it replaced keep working for one release, each
with a :class:`DeprecationWarning` that names the new one.

``renamed(old="new", ...)`` accepts a keyword argument's old name; ``keyword_only`` accepts,
with a warning, positional values for arguments that have become keyword-only. Both keep the
wrapped function's signature (what ``help()``, IDEs and mypy show is the new spelling).
"""

from __future__ import annotations

import functools
import inspect
import warnings
from typing import Callable, TypeVar

from .errors import InvalidArgumentError

F = TypeVar("F", bound=Callable)

#: the release that removes the old spellings
REMOVED_IN = "0.3"


def warn(old: str, new: str, *, stacklevel: int = 3) -> None:
    """One deprecation warning: ``old`` is spelled ``new`` now."""
    warnings.warn(f"acidorc: {old} is deprecated, use {new} (the old spelling goes in acidorc {REMOVED_IN})",
                  DeprecationWarning, stacklevel=stacklevel)


def renamed(**old_to_new: str) -> Callable[[F], F]:
    """Accept each keyword argument under its old name too, with a warning; giving both names
    is an :class:`~acid_source.errors.InvalidArgumentError`."""

    def decorate(fn: F) -> F:
        @functools.wraps(fn)
        def call(*args, **kwargs):
            for old, new in old_to_new.items():
                if old in kwargs:
                    if new in kwargs:
                        raise InvalidArgumentError(new, f"given twice: as {new}= and as its old name {old}=")
                    warn(f"{_name(fn)}({old}=...)", f"{new}=...")
                    kwargs[new] = kwargs.pop(old)
            return fn(*args, **kwargs)

        return call  # type: ignore[return-value]  # functools.wraps keeps fn's signature

    return decorate


def keyword_only(fn: F) -> F:
    """Accept positional values for ``fn``'s keyword-only arguments, in their order of the
    signature (the order they had as positional arguments), with a warning."""
    signature = inspect.signature(fn)
    positional = [p.name for p in signature.parameters.values()
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    keyword = [p.name for p in signature.parameters.values() if p.kind is p.KEYWORD_ONLY]

    @functools.wraps(fn)
    def call(*args, **kwargs):
        if len(args) > len(positional):
            extra = args[len(positional):]
            if len(extra) > len(keyword):
                raise TypeError(f"{_name(fn)}() takes {len(positional)} positional arguments "
                                f"but {len(args)} were given")
            names = keyword[:len(extra)]
            for name, value in zip(names, extra):
                if name in kwargs:
                    raise TypeError(f"{_name(fn)}() got multiple values for argument {name!r}")
                kwargs[name] = value
            warn(f"passing {', '.join(names)} of {_name(fn)}() by position",
                 f"keyword arguments ({', '.join(f'{n}=...' for n in names)})")
            args = args[:len(positional)]
        return fn(*args, **kwargs)

    return call  # type: ignore[return-value]  # functools.wraps keeps fn's signature


def _name(fn: Callable) -> str:
    qualname = getattr(fn, "__qualname__", getattr(fn, "__name__", "function"))
    return qualname.replace(".<locals>", "")
