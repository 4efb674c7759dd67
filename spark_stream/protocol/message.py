"""Message types: a dataclass per (api, role), its meta fields and an optional raw tail.

A message is what one frame carries once decoded: ``to_meta()`` gives the msgpack-able
control fields and ``tail`` the raw bytes (batch frames) that travel after them
untouched. Defining one is a frozen dataclass plus ``@message(api_key, role)``; the
registry then lets a receiver turn a ``Payload`` (api key, version, meta, tail) into the
right type. Control-plane apis may skip typed classes and send pydantic models dumped
to dicts as meta directly; ``Payload`` is the generic "meta + tail" form.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, ClassVar, Self, TypeVar

from spark_stream.errors import (
    FluvioError,
    InvalidRequestError,
    UnsupportedVersionError,
    error_for_code,
)
from spark_stream.protocol._fields import TAIL_FIELD, meta_fields, to_wire
from spark_stream.protocol.api import api_name
from spark_stream.protocol.frame import Buffer, Tail, tail_length
from spark_stream.protocol.meta import encode_meta

__all__ = [
    "Role",
    "Message",
    "ErrorReply",
    "Encoded",
    "Payload",
    "Request",
    "Push",
    "message",
    "message_type",
]


class Role(StrEnum):
    """Which side of an api a message type is."""

    REQUEST = "request"
    RESPONSE = "response"
    PUSH = "push"


class Message:
    """Base of typed messages: a frozen dataclass whose fields are the meta.

    A field named ``tail`` (if declared) is the raw binary tail, never msgpack'd.
    ``__post_init__`` may validate and raise ``InvalidRequestError``; it runs both when a
    sender builds a message and when a receiver decodes one.
    """

    API_KEY: ClassVar[int]
    ROLE: ClassVar[Role]
    VERSION: ClassVar[int] = 0
    MIN_VERSION: ClassVar[int] = 0

    def wire_version(self) -> int:
        """The version this instance is sent as (``VERSION`` unless a class that speaks
        several picks the lowest its fields need, so an older peer still understands it)."""
        return self.VERSION

    def check_version(self, version: int) -> None:
        """Refuse fields the received ``version`` does not carry (decoding only).

        Raises:
            InvalidRequestError: a field not part of ``version``, named.
        """

    def to_meta(self) -> dict[str, Any]:
        """The control fields as a msgpack-able dict (enums by value)."""
        return {name: to_wire(getattr(self, name)) for name in meta_fields(type(self)).names}

    def tail_parts(self) -> Tail:
        """The raw tail to send after the meta (empty unless the class has ``tail``)."""
        return getattr(self, TAIL_FIELD, b"")

    @classmethod
    def from_meta(cls, meta: dict[str, Any], tail: Buffer = b"") -> Self:
        """Build the message from decoded meta and the received tail.

        Raises:
            InvalidRequestError: a field is missing, of the wrong type, or out of range.
        """
        fields = meta_fields(cls)
        kwargs = fields.kwargs(meta)
        if fields.has_tail:
            kwargs[TAIL_FIELD] = tail
        return cls(**kwargs)


_REGISTRY: dict[tuple[int, Role], type[Message]] = {}
M = TypeVar("M", bound=type[Message])


def message(
    api_key: int, role: Role, version: int = 0, min_version: int | None = None
) -> Callable[[M], M]:
    """Class decorator: mark a dataclass as the ``role`` message of ``api_key``, ``version``.

    A class may speak versions ``min_version..version`` (default: ``version`` only);
    it then says which one an instance is sent as (``wire_version``) and which fields
    each carries (``check_version``).

    Raises:
        RuntimeError: another class is already registered for that api key and role.
    """

    def register(cls: M) -> M:
        if not dataclasses.is_dataclass(cls):
            raise TypeError(f"{cls.__name__} must be a dataclass to be a message")
        key = (int(api_key), role)
        if key in _REGISTRY and _REGISTRY[key].__qualname__ != cls.__qualname__:
            raise RuntimeError(f"{api_name(api_key)} {role} is already {_REGISTRY[key]}")
        cls.API_KEY = int(api_key)
        cls.ROLE = role
        cls.VERSION = version
        cls.MIN_VERSION = version if min_version is None else min_version
        meta_fields(cls)  # an unsupported annotation fails here, at definition
        _REGISTRY[key] = cls
        return cls

    return register


def message_type(api_key: int, role: Role) -> type[Message] | None:
    """The registered message class for ``api_key`` and ``role``, if there is one."""
    return _REGISTRY.get((int(api_key), role))


@dataclass(frozen=True, slots=True)
class ErrorReply(Message):
    """The meta of an error frame: a code from ``errors.py`` and a message for humans."""

    code: int
    message: str = ""

    def to_error(self) -> FluvioError:
        """The typed exception this reply stands for."""
        return error_for_code(self.code, self.message)

    @classmethod
    def from_error(cls, exc: BaseException) -> ErrorReply:
        """The reply for an exception: typed errors keep their code, others become code 1."""
        if isinstance(exc, FluvioError):
            return cls(exc.code, str(exc) or type(exc).__name__)
        return cls(FluvioError.code, f"internal error: {type(exc).__name__}: {exc}")


@dataclass(frozen=True, slots=True)
class Encoded:
    """A message whose meta is already msgpack: one encoding sent to many streams.

    A server fanning the same push out to many subscribers (the SC's metadata watch)
    encodes it once with ``of`` and sends these bytes on every stream; only the frame
    header (the stream's correlation id) differs. The receiver decodes it as the message
    it was built from. Messages with a tail are not supported (meta only).
    """

    api_key: int
    version: int
    meta: bytes

    @classmethod
    def of(cls, msg: Message) -> Encoded:
        """Encode ``msg``'s meta once.

        Raises:
            InvalidRequestError: the meta is not encodable, or ``msg`` carries a tail.
        """
        if tail_length(msg.tail_parts()):
            raise InvalidRequestError(f"{type(msg).__name__} has a tail; send it as it is")
        return cls(msg.API_KEY, msg.wire_version(), encode_meta(msg.to_meta()))


@dataclass(frozen=True, slots=True)
class Payload:
    """A decoded frame body in generic form: which api, which version, meta and tail."""

    api_key: int
    version: int
    meta: dict[str, Any]
    tail: memoryview

    def decode(self, role: Role) -> Message:
        """The typed message for this payload.

        Raises:
            UnsupportedVersionError: no message type is registered for this api and role,
                or it speaks another version.
            InvalidRequestError: the meta does not fit the type.
        """
        cls = message_type(self.api_key, role)
        if cls is None:
            raise UnsupportedVersionError(f"no {role} message type for {api_name(self.api_key)}")
        if not cls.MIN_VERSION <= self.version <= cls.VERSION:
            speaks = (
                str(cls.VERSION)
                if cls.MIN_VERSION == cls.VERSION
                else f"{cls.MIN_VERSION}..{cls.VERSION}"
            )
            raise UnsupportedVersionError(
                f"{api_name(self.api_key)} {role} version {self.version} is not supported "
                f"(this side speaks {speaks})"
            )
        msg = cls.from_meta(self.meta, self.tail)
        msg.check_version(self.version)
        return msg


@dataclass(frozen=True, slots=True)
class Request(Payload):
    """A request as a server handler receives it."""

    correlation_id: int = 0
    stream: bool = False

    def message(self) -> Message:
        """The typed request message (see ``Payload.decode``)."""
        return self.decode(Role.REQUEST)


@dataclass(frozen=True, slots=True)
class Push(Payload):
    """One item of a stream as the client receives it; ``api_key`` names its kind."""

    def message(self) -> Message:
        """The typed push message (see ``Payload.decode``)."""
        return self.decode(Role.PUSH)


def check_tail_present(tail: Tail, what: str) -> None:
    """Raise ``InvalidRequestError`` when a message that needs a tail has none."""
    if tail_length(tail) == 0:
        raise InvalidRequestError(f"{what} carries no batch frames")
