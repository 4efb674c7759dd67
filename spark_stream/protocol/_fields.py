"""The meta fields of a message class, checked by pydantic.

A peer can send any msgpack; this turns a meta dict into constructor arguments, or an
``InvalidRequestError`` naming the class and the field. Each message class gets, once,
a pydantic ``TypeAdapter`` over a ``TypedDict`` of its meta fields (every dataclass field
but ``tail``) in strict mode: no bool for an int, no float for an int, no bytearray for
bytes, no tuple for a list; an int is taken for a float and becomes one. Enums are taken
by value exactly as ``EnumType(value)`` takes them (pydantic's strict enums want
members, its lax ones would also take ``"1"`` for ``1``). Keys the class does not know
are ignored, so a newer peer may add optional fields without a version bump.

Supported annotations are what msgpack carries: ``int``, ``float``, ``str``, ``bool``,
``bytes``, enums, ``X | None``, ``list[X]``, ``dict[str, X]`` and ``Any``. Any other
fails when the message class is defined, not when a peer first sends it.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum
from typing import Annotated, Any, NotRequired, Required

from pydantic import ConfigDict, PlainValidator, TypeAdapter, ValidationError, with_config
from pydantic_core import PydanticCustomError
from typing_extensions import TypedDict  # pydantic needs this one before Python 3.12

from spark_stream.errors import InvalidRequestError

__all__ = ["TAIL_FIELD", "MetaFields", "meta_fields", "to_wire"]

TAIL_FIELD = "tail"

_SCALARS = (int, float, str, bool, bytes)
# The validator is built when a class's first meta arrives, so a process pays only for the
# messages it decodes; ``_wire_type`` has already refused what pydantic could not build.
_STRICT = ConfigDict(strict=True, defer_build=True)
_EXPECTED = {
    "int_type": "an integer",
    "float_type": "a number",
    "bool_type": "a bool",
    "string_type": "a string",
    "bytes_type": "binary",
    "list_type": "a list",
    "dict_type": "a map",
}
"""What a pydantic type error says was expected, in the words of the wire."""


@dataclass(frozen=True, slots=True)
class MetaFields:
    """The meta of one message class: its field names, its tail, its validator.

    Attributes:
        owner: the class name, which errors start with.
        names: the meta fields in declaration order (``tail`` excluded).
        has_tail: the class declares a ``tail`` field for the raw tail.
        adapter: validates a meta dict into constructor arguments.
    """

    owner: str
    names: tuple[str, ...]
    has_tail: bool
    adapter: TypeAdapter[dict[str, Any]]

    def kwargs(self, meta: dict[str, Any]) -> dict[str, Any]:
        """Constructor arguments from a decoded meta dict; absent fields keep their defaults.

        Raises:
            InvalidRequestError: a required field is missing or a value has the wrong type.
        """
        try:
            return self.adapter.validate_python(meta)
        except ValidationError as exc:
            raise _invalid(self.owner, exc) from None


_BUILT: dict[type, MetaFields] = {}


def meta_fields(cls: type) -> MetaFields:
    """The ``MetaFields`` of dataclass ``cls``, built on first use and kept.

    Raises:
        TypeError: a field's annotation is not one the wire supports.
    """
    built = _BUILT.get(cls)
    if built is None:
        built = _BUILT[cls] = _build(cls)
    return built


def _build(cls: type) -> MetaFields:
    """The ``MetaFields`` of ``cls``: a ``TypedDict`` of its meta fields, required where the
    dataclass has no default."""
    hints = typing.get_type_hints(cls)
    fields = [f for f in dataclasses.fields(cls) if f.name != TAIL_FIELD]
    schema: dict[str, Any] = {}
    for f in fields:
        tp = _wire_type(hints[f.name], f"{cls.__name__}.{f.name}")
        required = f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
        schema[f.name] = Required[tp] if required else NotRequired[tp]
    return MetaFields(
        owner=cls.__name__,
        names=tuple(f.name for f in fields),
        has_tail=len(fields) < len(dataclasses.fields(cls)),
        adapter=TypeAdapter(_strict_typed_dict(f"{cls.__name__}Meta", schema)),
    )


def _strict_typed_dict(name: str, fields: dict[str, Any]) -> Any:
    """A ``TypedDict`` class of ``fields`` that pydantic checks in strict mode."""
    # The functional form, as the fields are known only now; mypy checks literal ones only.
    return with_config(_STRICT)(TypedDict(name, fields))  # type: ignore[operator]


def _wire_type(tp: Any, where: str) -> Any:
    """Annotation ``tp`` as pydantic should check it off the wire (enums by value).

    Raises:
        TypeError: naming ``where``, when ``tp`` is not a supported annotation.
    """
    if tp is Any or tp in _SCALARS:
        return tp
    if isinstance(tp, type) and issubclass(tp, Enum):
        return Annotated[tp, PlainValidator(_by_value(tp))]
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin in (types.UnionType, typing.Union) and len(args) == 2 and type(None) in args:
        (inner,) = (a for a in args if a is not type(None))
        return _wire_type(inner, where) | None
    if origin is list and len(args) == 1:
        return types.GenericAlias(list, (_wire_type(args[0], where),))  # list[X], built
    if origin is dict and len(args) == 2 and args[0] is str:
        return types.GenericAlias(dict, (str, _wire_type(args[1], where)))
    raise TypeError(f"{where}: unsupported annotation {tp!r} in a message class")


def _by_value(enum: type[Enum]) -> Callable[[Any], Enum]:
    """A validator taking a member of ``enum`` or its value, as ``enum(value)`` does."""
    choices = ", ".join(repr(m.value) for m in enum)

    def validate(value: Any) -> Enum:
        try:
            return enum(value)
        except ValueError:
            raise PydanticCustomError(
                "enum",
                "{value} is not one of {choices}",
                {"value": repr(value), "choices": choices},
            ) from None

    return validate


def _invalid(owner: str, exc: ValidationError) -> InvalidRequestError:
    """The first error of ``exc``, naming ``owner``, the field and what was wrong."""
    error = exc.errors(include_url=False)[0]
    loc = error["loc"]
    if error["type"] == "missing":
        return InvalidRequestError(f"{owner}: missing field {loc[-1]!r}")
    path = owner + _path(loc)
    expected = _EXPECTED.get(error["type"])
    if expected is None:
        return InvalidRequestError(f"{path}: {error['msg']}")
    value = error["input"]
    shown = repr(value)
    if len(shown) > 60:
        shown = shown[:57] + "..."
    return InvalidRequestError(f"{path}: expected {expected}, got {type(value).__name__} {shown}")


def _path(loc: tuple[int | str, ...]) -> str:
    """``.names[1]``, ``.labels['x']`` for pydantic's locations; a bad map key ends `` key``."""
    bad_key = bool(loc) and loc[-1] == "[key]"
    if bad_key:
        loc = loc[:-2]  # pydantic puts the key itself before the "[key]" marker
    steps = "".join(f".{step}" if i == 0 else f"[{step!r}]" for i, step in enumerate(loc))
    return steps + (" key" if bad_key else "")


def to_wire(value: Any) -> Any:
    """A field value as msgpack can carry it (enums by value, containers recursively)."""
    if isinstance(value, Enum):
        return value.value
    if isinstance(value, list | tuple):
        return [to_wire(v) for v in value]
    if isinstance(value, dict):
        return {k: to_wire(v) for k, v in value.items()}
    return value
