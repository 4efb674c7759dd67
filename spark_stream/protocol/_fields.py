"""Checking decoded meta against a message dataclass's annotations.

A peer can send any msgpack; this turns a meta dict into constructor arguments, or an
``InvalidRequestError`` naming the field. Supported annotations are the few the wire
needs: ``int``, ``float``, ``str``, ``bool``, ``bytes``, enums, ``X | None``,
``list[X]``, ``dict[str, X]`` and ``Any``. Keys the class does not know are ignored,
so a newer peer may add optional fields without a version bump.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from enum import Enum
from functools import cache
from typing import Any

from spark_stream.errors import InvalidRequestError

__all__ = ["FieldSpec", "field_specs", "check_value", "meta_kwargs", "to_wire"]

TAIL_FIELD = "tail"


@dataclasses.dataclass(frozen=True, slots=True)
class FieldSpec:
    """One meta field of a message class."""

    name: str
    type: Any
    required: bool


@cache
def field_specs(cls: type) -> tuple[FieldSpec, ...]:
    """The meta fields of dataclass ``cls`` (every field but ``tail``), in order."""
    hints = typing.get_type_hints(cls)
    return tuple(
        FieldSpec(
            f.name,
            hints[f.name],
            f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING,
        )
        for f in dataclasses.fields(cls)
        if f.name != TAIL_FIELD
    )


def meta_kwargs(cls: type, meta: dict[str, Any]) -> dict[str, Any]:
    """Constructor arguments for ``cls`` from a decoded meta dict.

    Raises:
        InvalidRequestError: a required field is missing or a value has the wrong type.
    """
    kwargs: dict[str, Any] = {}
    for spec in field_specs(cls):
        if spec.name not in meta:
            if spec.required:
                raise InvalidRequestError(f"{cls.__name__}: missing field {spec.name!r}")
            continue
        kwargs[spec.name] = check_value(meta[spec.name], spec.type, f"{cls.__name__}.{spec.name}")
    return kwargs


def check_value(value: Any, tp: Any, path: str) -> Any:
    """Return ``value`` checked against annotation ``tp`` (enums converted from their value).

    Raises:
        InvalidRequestError: naming ``path`` and what was expected.
    """
    if tp is Any:
        return value
    origin = typing.get_origin(tp)
    if origin is types.UnionType or origin is typing.Union:
        for option in typing.get_args(tp):
            try:
                return check_value(value, option, path)
            except InvalidRequestError:
                continue
        raise InvalidRequestError(f"{path}: {value!r} matches none of {tp}")
    if origin is list:
        if not isinstance(value, list):
            raise _wrong(path, "a list", value)
        (item,) = typing.get_args(tp) or (Any,)
        return [check_value(v, item, f"{path}[{i}]") for i, v in enumerate(value)]
    if origin is dict:
        if not isinstance(value, dict):
            raise _wrong(path, "a map", value)
        _, item = typing.get_args(tp) or (str, Any)
        out = {}
        for k, v in value.items():
            if not isinstance(k, str):
                raise _wrong(f"{path} key", "a string", k)
            out[k] = check_value(v, item, f"{path}[{k!r}]")
        return out
    if tp is type(None):
        if value is not None:
            raise _wrong(path, "nil", value)
        return None
    if isinstance(tp, type) and issubclass(tp, Enum):
        try:
            return tp(value)
        except ValueError:
            choices = ", ".join(repr(m.value) for m in tp)
            raise InvalidRequestError(f"{path}: {value!r} is not one of {choices}") from None
    if tp is bool:
        if not isinstance(value, bool):
            raise _wrong(path, "a bool", value)
        return value
    if tp is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise _wrong(path, "an integer", value)
        return value
    if tp is float:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise _wrong(path, "a number", value)
        return float(value)
    if tp is str:
        if not isinstance(value, str):
            raise _wrong(path, "a string", value)
        return value
    if tp is bytes:
        if not isinstance(value, bytes):
            raise _wrong(path, "binary", value)
        return value
    raise TypeError(f"{path}: unsupported annotation {tp!r} in a message class")


def _wrong(path: str, expected: str, value: Any) -> InvalidRequestError:
    shown = repr(value)
    if len(shown) > 60:
        shown = shown[:57] + "..."
    return InvalidRequestError(f"{path}: expected {expected}, got {type(value).__name__} {shown}")


def to_wire(value: Any) -> Any:
    """A field value as msgpack can carry it (enums by value, containers recursively)."""
    if isinstance(value, Enum):
        return value.value
    if isinstance(value, list | tuple):
        return [to_wire(v) for v in value]
    if isinstance(value, dict):
        return {k: to_wire(v) for k, v in value.items()}
    return value
