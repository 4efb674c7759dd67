"""Meta field checking: what each supported annotation accepts and refuses off the wire.

The table pins the semantics peers rely on: strict scalars (no bool for an int, no
bytearray for bytes, no tuple for a list), ints widened to floats, enums by value, and
``InvalidRequestError`` naming the class and the field.
"""

from __future__ import annotations

from dataclasses import dataclass, field, make_dataclass
from enum import IntEnum, StrEnum
from typing import Any

import pytest

from spark_stream.errors import InvalidRequestError
from spark_stream.protocol import Message, Role, message, message_type


class Kind(IntEnum):
    A = 1
    B = -1


class Mode(StrEnum):
    X = "x"
    Y = "y"


@dataclass(frozen=True)
class Sample(Message):
    """One field of every supported kind, all optional, and a tail."""

    i: int = 0
    f: float = 0.0
    s: str = ""
    b: bool = False
    raw: bytes = b""
    kind: Kind = Kind.A
    mode: Mode = Mode.X
    maybe: int | None = None
    maybe_kind: Kind | None = None
    names: list[str] = field(default_factory=list)
    labels: dict[str, int] = field(default_factory=dict)
    anything: Any = None
    tail: bytes = b""


@dataclass(frozen=True)
class Required(Message):
    """Required fields, no tail."""

    x: int
    y: str


@pytest.mark.parametrize(
    ("name", "value", "expected"),
    [
        ("i", 7, 7),
        ("i", 2**64 - 1, 2**64 - 1),
        ("i", -(2**63), -(2**63)),
        ("f", 1, 1.0),
        ("f", 1.5, 1.5),
        ("s", "a", "a"),
        ("b", True, True),
        ("raw", b"\x00\xff", b"\x00\xff"),
        ("kind", 1, Kind.A),
        ("kind", -1, Kind.B),
        ("kind", Kind.B, Kind.B),
        ("mode", "y", Mode.Y),
        ("maybe", None, None),
        ("maybe", 3, 3),
        ("maybe_kind", -1, Kind.B),
        ("maybe_kind", None, None),
        ("names", ["a", "b"], ["a", "b"]),
        ("labels", {"x": 1}, {"x": 1}),
        ("anything", {"deep": [1, "two", None]}, {"deep": [1, "two", None]}),
    ],
)
def test_accepted_values(name: str, value: Any, expected: Any) -> None:
    got = getattr(Sample.from_meta({name: value}), name)
    assert got == expected
    assert type(got) is type(expected)


def test_any_passes_the_value_through_untouched() -> None:
    value = {"deep": [object()]}
    assert Sample.from_meta({"anything": value}).anything is value


@pytest.mark.parametrize(
    ("name", "value", "match"),
    [
        ("i", True, r"^Sample\.i: expected an integer, got bool True$"),
        ("i", 1.0, r"^Sample\.i: expected an integer, got float 1\.0$"),
        ("i", "1", r"^Sample\.i: expected an integer, got str '1'$"),
        ("f", True, r"^Sample\.f: expected a number, got bool True$"),
        ("f", "1.5", r"^Sample\.f: expected a number"),
        ("s", b"a", r"^Sample\.s: expected a string, got bytes b'a'$"),
        ("b", 1, r"^Sample\.b: expected a bool, got int 1$"),
        ("raw", bytearray(b"a"), r"^Sample\.raw: expected binary"),
        ("raw", "a", r"^Sample\.raw: expected binary, got str 'a'$"),
        ("kind", 2, r"^Sample\.kind: 2 is not one of 1, -1$"),
        ("kind", "1", r"^Sample\.kind: '1' is not one of 1, -1$"),
        ("mode", "z", r"^Sample\.mode: 'z' is not one of 'x', 'y'$"),
        ("mode", b"x", r"^Sample\.mode: b'x' is not one of 'x', 'y'$"),
        ("maybe", "3", r"^Sample\.maybe: expected an integer, got str '3'$"),
        ("maybe_kind", 5, r"^Sample\.maybe_kind: 5 is not one of 1, -1$"),
        ("names", ("a",), r"^Sample\.names: expected a list, got tuple"),
        ("names", ["a", 3], r"^Sample\.names\[1\]: expected a string, got int 3$"),
        ("labels", [], r"^Sample\.labels: expected a map, got list \[\]$"),
        ("labels", {"x": "1"}, r"^Sample\.labels\['x'\]: expected an integer, got str '1'$"),
        ("labels", {1: 1}, r"^Sample\.labels key: expected a string, got int 1$"),
    ],
)
def test_refused_values_name_the_class_and_field(name: str, value: Any, match: str) -> None:
    with pytest.raises(InvalidRequestError, match=match) as info:
        Sample.from_meta({name: value})
    assert type(info.value) is InvalidRequestError


def test_long_values_are_shortened_in_the_message() -> None:
    with pytest.raises(InvalidRequestError) as info:
        Sample.from_meta({"i": "x" * 500})
    assert str(info.value).endswith("...")
    assert len(str(info.value)) < 100


def test_missing_required_field_is_named() -> None:
    with pytest.raises(InvalidRequestError, match=r"^Required: missing field 'y'$"):
        Required.from_meta({"x": 1})
    with pytest.raises(InvalidRequestError, match=r"^Required: missing field 'x'$"):
        Required.from_meta({})


def test_defaults_fill_what_the_meta_leaves_out() -> None:
    assert Sample.from_meta({}) == Sample()
    assert Required.from_meta({"x": 1, "y": "a"}) == Required(1, "a")


def test_unknown_keys_and_a_tail_key_in_meta_are_ignored() -> None:
    got = Sample.from_meta({"i": 1, "later_field": [1, 2], "tail": b"meta"}, b"TAIL")
    assert got == Sample(i=1, tail=b"TAIL")
    assert Required.from_meta({"x": 1, "y": "a", "tail": b"t"}, b"ignored") == Required(1, "a")


def test_to_meta_sends_enums_by_value_and_sequences_as_lists() -> None:
    meta = Sample(kind=Kind.B, mode=Mode.Y, names=("a",), labels={"k": 2}).to_meta()  # type: ignore[arg-type]
    assert meta["kind"] == -1 and type(meta["kind"]) is int
    assert meta["mode"] == "y" and type(meta["mode"]) is str
    assert meta["names"] == ["a"] and type(meta["names"]) is list
    assert "tail" not in meta
    assert Sample.from_meta(meta) == Sample(kind=Kind.B, mode=Mode.Y, names=["a"], labels={"k": 2})


@pytest.mark.parametrize(
    "annotation",
    [tuple[int, int], set[str], memoryview, list, dict[int, str], int | str, object],
    ids=repr,
)
def test_an_unsupported_annotation_fails_at_definition(annotation: Any) -> None:
    cls = make_dataclass("Bad", [("x", annotation)], bases=(Message,), frozen=True)
    with pytest.raises(TypeError, match=r"Bad\.x: unsupported annotation"):
        message(4997, Role.REQUEST)(cls)
    assert message_type(4997, Role.REQUEST) is None
