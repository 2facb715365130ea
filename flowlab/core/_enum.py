"""A protobuf enum as Python's generated code gives it (``EnumTypeWrapper``): ``Name(number)``, ``Value(name)``,
``keys()``, ``values()``, ``items()``, and each value as a module constant beside it."""

from __future__ import annotations

from collections.abc import Mapping


class ProtoEnum:
    def __init__(self, name: str, values: Mapping[str, int]) -> None:
        self._name = name
        self._values = dict(values)

    def Name(self, number: int) -> str:
        for key, value in self._values.items():
            if value == number:
                return key
        raise ValueError(f"enum {self._name} has no value with number {number!r}; its values are {self._values}")

    def Value(self, name: str) -> int:
        if name not in self._values:
            raise ValueError(f"enum {self._name} has no value named {name!r}; its values are {list(self._values)}")
        return self._values[name]

    def keys(self) -> list[str]:
        return list(self._values)

    def values(self) -> list[int]:
        return list(self._values.values())

    def items(self) -> list[tuple[str, int]]:
        return list(self._values.items())

    def __repr__(self) -> str:
        return f"<enum {self._name}>"
