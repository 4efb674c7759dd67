"""Building blocks shared by every cluster object: config, metadata, the object envelope.

Objects follow the Kubernetes shape ``{metadata, spec, status}``. Python uses snake_case
field names; the wire and YAML use the seed's camelCase (``spuId``, ``replicationFactor``)
through aliases, and both spellings are accepted on input. Models are frozen: the local
store hands out shared read-only objects, and ``with_spec``/``with_status`` return copies.
Unknown fields are rejected, and every validation failure surfaces as one
``InvalidConfigError`` whose message names the field path.
"""

from __future__ import annotations

import re
from enum import StrEnum
from typing import Any, ClassVar, Generic, Self, TypeVar

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator
from pydantic.alias_generators import to_camel

from spark_stream.errors import InvalidConfigError

__all__ = [
    "FrozenModel",
    "CaseInsensitiveEnum",
    "ObjectRef",
    "Metadata",
    "KvObject",
    "NAME_RULE",
    "check_name",
    "config_error",
    "parse_model",
]

#: A DNS-label-like name: lowercase letters, digits and '-', starting and ending alnum.
NAME_RULE = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_MAX_NAME = 253

SpecT = TypeVar("SpecT", bound="FrozenModel")
StatusT = TypeVar("StatusT", bound="FrozenModel")
ModelT = TypeVar("ModelT", bound=BaseModel)


class FrozenModel(BaseModel):
    """Immutable model with camelCase aliases, snake_case names and no unknown fields."""

    model_config = ConfigDict(
        alias_generator=to_camel,
        populate_by_name=True,
        extra="forbid",
        frozen=True,
    )

    def to_dict(self) -> dict[str, Any]:
        """Return the msgpack/JSON-friendly camelCase dict (``None`` fields omitted)."""
        return self.model_dump(by_alias=True, mode="json", exclude_none=True)

    @classmethod
    def from_dict(cls, data: Any) -> Self:
        """Validate ``data`` (camelCase or snake_case keys).

        Raises:
            InvalidConfigError: the data is invalid; the message names the field.
        """
        return parse_model(cls, data)


class CaseInsensitiveEnum(StrEnum):
    """A string enum that also accepts its values in any letter case (``online``)."""

    @classmethod
    def _missing_(cls, value: object) -> Self | None:
        if isinstance(value, str):
            folded = value.casefold()
            for member in cls:
                if member.value.casefold() == folded:
                    return member
        return None


def check_name(name: str, max_len: int = _MAX_NAME) -> str:
    """Return ``name`` if it is a DNS-label-like name no longer than ``max_len``.

    Raises:
        ValueError: the name breaks the rule (pydantic reports it against the field).
    """
    if not NAME_RULE.match(name):
        raise ValueError(
            f"name {name!r} must be lowercase letters, digits and '-', "
            "starting and ending with a letter or digit"
        )
    if len(name) > max_len:
        raise ValueError(f"name {name!r} is longer than {max_len} characters")
    return name


class ObjectRef(FrozenModel):
    """Points at another object by kind and name (a partition's parent topic)."""

    kind: str
    name: str


class Metadata(FrozenModel):
    """Identity of an object: its name, the store revision of its last write, its parent.

    ``revision`` is assigned by the KV store (a store-wide counter) and is what
    compare-and-set writes compare against; ``parent`` makes the store delete this
    object together with its parent. ``uid`` is assigned by the KV store when the object
    is created and never changes: an object deleted and created again under the same
    name gets a new one, which is how an SPU tells a re-created topic's partitions from
    the deleted ones (``None`` only for objects built outside a store).
    """

    name: str
    revision: int = Field(default=0, ge=0)
    parent: ObjectRef | None = None
    uid: str | None = Field(default=None, min_length=1, max_length=64)

    @field_validator("name")
    @classmethod
    def _valid_name(cls, value: str) -> str:
        return check_name(value)


class KvObject(FrozenModel, Generic[SpecT, StatusT]):
    """The envelope every stored object shares: ``metadata``, ``spec``, ``status``.

    Subclasses set ``kind`` (the store's key for the type) and concrete spec and status
    types. The SC writes specs; status is written separately (for partitions, by the
    SPU leader), which is why the KV store has one write for each.
    """

    kind: ClassVar[str] = ""

    metadata: Metadata
    spec: SpecT
    status: StatusT

    @property
    def name(self) -> str:
        """The object's name (``metadata.name``)."""
        return self.metadata.name

    @property
    def revision(self) -> int:
        """Store revision of the object's last write (``metadata.revision``)."""
        return self.metadata.revision

    def with_spec(self, spec: SpecT) -> Self:
        """Return a copy with ``spec`` replaced."""
        return self.model_copy(update={"spec": spec})

    def with_status(self, status: StatusT) -> Self:
        """Return a copy with ``status`` replaced."""
        return self.model_copy(update={"status": status})

    def with_revision(self, revision: int) -> Self:
        """Return a copy whose ``metadata.revision`` is ``revision``."""
        meta = self.metadata.model_copy(update={"revision": revision})
        return self.model_copy(update={"metadata": meta})

    @property
    def uid(self) -> str | None:
        """The identity the store gave the object at creation (``metadata.uid``)."""
        return self.metadata.uid

    def with_uid(self, uid: str) -> Self:
        """Return a copy whose ``metadata.uid`` is ``uid`` (what a store's create does)."""
        meta = self.metadata.model_copy(update={"uid": uid})
        return self.model_copy(update={"metadata": meta})

    @classmethod
    def build(
        cls, name: str, spec: Any, status: Any = None, parent: ObjectRef | None = None
    ) -> Self:
        """Construct from parts with revision 0, raising ``InvalidConfigError`` if invalid."""
        data: dict[str, Any] = {"metadata": {"name": name, "parent": parent}, "spec": spec}
        if status is not None:
            data["status"] = status
        return parse_model(cls, data)

    @classmethod
    def from_dict(cls, data: Any) -> Self:
        """Validate a dict, accepting (and checking) an optional ``kind`` key.

        Raises:
            InvalidConfigError: invalid data or a ``kind`` that is not this class's.
        """
        if isinstance(data, dict) and "kind" in data:
            data = dict(data)
            kind = data.pop("kind")
            if kind != cls.kind:
                raise InvalidConfigError(f"kind: expected {cls.kind!r}, got {kind!r}")
        return parse_model(cls, data)

    def to_yaml(self) -> str:
        """Render as YAML in the seed's shape, ``kind`` first, camelCase keys."""
        doc = {"kind": self.kind, **self.to_dict()}
        return yaml.safe_dump(doc, sort_keys=False)

    @classmethod
    def from_yaml(cls, text: str, name: str | None = None) -> Self:
        """Parse YAML written by ``to_yaml`` or by hand.

        Args:
            text: a YAML mapping with ``spec`` and optionally ``metadata``/``status``/``kind``.
            name: the object's name when the document has no ``metadata`` (seed examples).

        Raises:
            InvalidConfigError: the YAML does not parse or does not validate.
        """
        doc = load_yaml_mapping(text)
        if name is not None and "metadata" not in doc:
            doc["metadata"] = {"name": name}
        doc.setdefault("status", {})
        return cls.from_dict(doc)


def load_yaml_mapping(text: str) -> dict[str, Any]:
    """Parse ``text`` as one YAML mapping.

    Raises:
        InvalidConfigError: not YAML, or not a mapping at the top.
    """
    try:
        doc = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise InvalidConfigError(f"not valid YAML: {exc}") from exc
    if not isinstance(doc, dict):
        raise InvalidConfigError(f"expected a YAML mapping, got {type(doc).__name__}")
    return doc


def config_error(exc: ValidationError, what: str | None = None) -> InvalidConfigError:
    """Turn a pydantic ``ValidationError`` into ``InvalidConfigError`` naming the fields.

    The message reads ``invalid Topic: spec.partitions: Input should be ...``; one
    ``path: reason`` per failure, joined with ``; ``.
    """
    parts = []
    for err in exc.errors(include_url=False):
        path = ".".join(str(p) for p in err["loc"])
        msg = str(err["msg"]).removeprefix("Value error, ")
        parts.append(f"{path}: {msg}" if path else msg)
    title = what or exc.title
    return InvalidConfigError(f"invalid {title}: " + "; ".join(parts))


def parse_model(cls: type[ModelT], data: Any) -> ModelT:
    """Validate ``data`` into ``cls``, raising ``InvalidConfigError`` on failure."""
    try:
        return cls.model_validate(data)
    except ValidationError as exc:
        raise config_error(exc, cls.__name__) from None
