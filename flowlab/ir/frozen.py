"""FrozenDict: the IR's read-only mapping, so a Job or Plan handed to the next stage cannot be changed under it.

``types.MappingProxyType`` would do, but it is neither hashable nor printable as a dict, and the IR's printers,
JSON and equality want both. A stage that needs a changed mapping builds a new one: ``{**fd, key: value}`` or
``fd | {key: value}`` (which returns a new FrozenDict).

``derived``: a view of a frozen IR object (an index by id or name, a grouping) computed once, on first access.
"""

from __future__ import annotations

from collections.abc import Callable, ItemsView, Iterable, Iterator, KeysView, Mapping, ValuesView
from typing import Any, Generic, TypeVar, overload

K = TypeVar("K")
V = TypeVar("V")
T = TypeVar("T")


class FrozenDict(Mapping[K, V], Generic[K, V]):
    __slots__ = ("_data", "_hash")
    _data: dict[K, V]
    _hash: int | None

    def __init__(self, data: Mapping[K, V] | Iterable[tuple[K, V]] = (), /) -> None:
        object.__setattr__(self, "_data", dict(data))
        object.__setattr__(self, "_hash", None)

    def __getitem__(self, key: K) -> V:
        return self._data[key]

    def __iter__(self) -> Iterator[K]:
        return iter(self._data)

    def __len__(self) -> int:
        return len(self._data)

    def __contains__(self, key: object) -> bool:
        return key in self._data

    def get(self, key: K, default: Any = None) -> Any:
        return self._data.get(key, default)

    # the dict's own views (read-only) instead of Mapping's generic ones: compiling walks these a lot
    def keys(self) -> KeysView[K]:
        return self._data.keys()

    def values(self) -> ValuesView[V]:
        return self._data.values()

    def items(self) -> ItemsView[K, V]:
        return self._data.items()

    def __eq__(self, other: object) -> bool:
        if isinstance(other, FrozenDict):
            return self._data == other._data
        if isinstance(other, Mapping):
            return self._data == dict(other)
        return NotImplemented

    def __hash__(self) -> int:
        if self._hash is None:
            object.__setattr__(self, "_hash", hash(frozenset(self._data.items())))
        assert self._hash is not None
        return self._hash

    def __or__(self, other: Mapping[K, V]) -> FrozenDict[K, V]:
        return FrozenDict({**self._data, **other})

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"FrozenDict is read-only; build a new one (fd | {{...}}) instead of setting {name!r}")

    def __delattr__(self, name: str) -> None:
        raise AttributeError("FrozenDict is read-only")

    def __reduce__(self) -> tuple[Any, ...]:
        return (FrozenDict, (self._data,))

    def __repr__(self) -> str:
        return repr(self._data)  # prints as the dict it holds, so printed IR reads as before


_MUTABLE = (dict, list, set, bytearray)


class derived(Generic[T]):  # lower case: a decorator, like property
    """A view derived from a frozen IR object's fields (an index, a grouping), computed on first access and kept.

    An IR object never changes once built, so a view of it never goes stale; recomputing one on every access made
    work over a Plan quadratic (the runtime's wiring asked for every register desc, rebuilt, once per task). The
    value lives in the instance's ``__dict__`` under the view's name, which a non-data descriptor like this one
    lets win over the class from then on: later reads are plain attribute reads. Like ``functools.cached_property``
    (which OpConf uses for its lbns) but without its per-class lock, and it refuses a mutable value: one shared
    object is handed to every caller, so it must be a FrozenDict, a tuple or a frozenset.

    Equality, hashing, ``dataclasses.replace`` and the JSON form read only the dataclass's fields, and a frozen
    dataclass's ``__setattr__`` still refuses every write, so freezing, comparing and serializing are unchanged.
    A pickle carries the views computed so far (the instance ``__dict__``); they are views of the same fields.
    """

    def __init__(self, func: Callable[[Any], T]) -> None:
        self.func = func
        self.name = func.__name__
        self.__doc__ = func.__doc__

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    @overload
    def __get__(self, obj: None, owner: type | None = None) -> derived[T]: ...
    @overload
    def __get__(self, obj: object, owner: type | None = None) -> T: ...

    def __get__(self, obj: object | None, owner: type | None = None) -> T | derived[T]:
        if obj is None:
            return self
        value = self.func(obj)
        if isinstance(value, _MUTABLE):
            raise TypeError(f"{type(obj).__name__}.{self.name} derived a mutable {type(value).__name__}; a derived "
                            "view is shared by every caller, so return a FrozenDict, tuple or frozenset")
        obj.__dict__[self.name] = value  # bypasses the frozen dataclass's __setattr__: a cache, not a field
        return value
