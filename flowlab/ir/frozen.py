"""FrozenDict: the IR's read-only mapping, so a Job or Plan handed to the next stage cannot be changed under it.

``types.MappingProxyType`` would do, but it is neither hashable nor printable as a dict, and the IR's printers,
JSON and equality want both. A stage that needs a changed mapping builds a new one: ``{**fd, key: value}`` or
``fd | {key: value}`` (which returns a new FrozenDict).
"""

from __future__ import annotations

from collections.abc import ItemsView, Iterable, Iterator, KeysView, Mapping, ValuesView
from typing import Any, Generic, TypeVar

K = TypeVar("K")
V = TypeVar("V")


class FrozenDict(Mapping[K, V], Generic[K, V]):
    __slots__ = ("_data", "_hash")

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
        return self._hash  # type: ignore[return-value]

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


def freeze_mapping(data: Mapping[K, V] | None) -> FrozenDict[K, V]:
    return data if isinstance(data, FrozenDict) else FrozenDict(data or {})
