"""The SPU group object: a template from which managed SPUs are provisioned.

Spec (seed ``003``)::

    spec:
      replicas: 2
      minId: 11
      template:
        storage:
          size: 20Gi

``replicas`` SPUs get ids ``minId .. minId + replicas - 1``; raising it provisions
more, lowering it terminates the highest ids. Status ``resolution`` is ``Init``,
``Invalid`` (with a ``reason``) or ``Reserved`` (ids reserved, SPUs provisioned).
"""

from __future__ import annotations

from typing import ClassVar, Self

from pydantic import Field, field_validator, model_validator

from spark_stream import units
from spark_stream.errors import InvalidConfigError
from spark_stream.models._base import CaseInsensitiveEnum, FrozenModel, KvObject
from spark_stream.models.spu import MAX_SPU_ID

__all__ = [
    "StorageConfig",
    "SpuTemplate",
    "SpuGroupSpec",
    "SpuGroupResolution",
    "SpuGroupStatus",
    "SpuGroup",
    "parse_size",
]


def parse_size(text: str) -> int:
    """Parse a quantity (``20Gi``, ``500M``, ``100MB``, ``1024``) into bytes
    (``spark_stream.units.parse_size``, as a ``ValueError`` for pydantic validators).

    Raises:
        ValueError: the text is not such a quantity.
    """
    try:
        return units.parse_size(text, "size")
    except InvalidConfigError as exc:
        raise ValueError(str(exc)) from None


class StorageConfig(FrozenModel):
    """Storage of each SPU in the group: volume size (default 1 gigabyte) and log dir."""

    size: str = "1Gi"
    log_dir: str | None = None

    @field_validator("size")
    @classmethod
    def _valid_size(cls, value: str) -> str:
        if parse_size(value) <= 0:
            raise ValueError("size must be positive")
        return value

    @property
    def size_bytes(self) -> int:
        """``size`` in bytes."""
        return parse_size(self.size)


class SpuTemplate(FrozenModel):
    """Configuration passed to every SPU of the group."""

    storage: StorageConfig = StorageConfig()
    rack: str | None = None
    public_port: int | None = Field(default=None, ge=1, le=65535)
    private_port: int | None = Field(default=None, ge=1, le=65535)


class SpuGroupSpec(FrozenModel):
    """Desired state of an SPU group."""

    replicas: int = Field(ge=0)
    min_id: int = Field(default=0, ge=0, le=MAX_SPU_ID)
    template: SpuTemplate = SpuTemplate()

    @model_validator(mode="after")
    def _ids_fit(self) -> Self:
        if self.replicas and self.min_id + self.replicas - 1 > MAX_SPU_ID:
            raise ValueError(f"replicas: ids minId..minId+replicas-1 exceed {MAX_SPU_ID}")
        return self

    @property
    def spu_ids(self) -> range:
        """The ids of the group's SPUs, ``min_id .. min_id + replicas - 1``."""
        return range(self.min_id, self.min_id + self.replicas)


class SpuGroupResolution(CaseInsensitiveEnum):
    """Provisioning state of an SPU group."""

    INIT = "Init"
    INVALID = "Invalid"
    RESERVED = "Reserved"


class SpuGroupStatus(FrozenModel):
    """Observed state of an SPU group; ``reason`` explains ``Invalid``."""

    resolution: SpuGroupResolution = SpuGroupResolution.INIT
    reason: str | None = None


class SpuGroup(KvObject[SpuGroupSpec, SpuGroupStatus]):
    """An SPU group object (kind ``SpuGroup``)."""

    kind: ClassVar[str] = "SpuGroup"

    status: SpuGroupStatus = SpuGroupStatus()

    @classmethod
    def new(cls, name: str, spec: SpuGroupSpec, status: SpuGroupStatus | None = None) -> SpuGroup:
        """Build an SPU group object with revision 0 (the store assigns the real one)."""
        return cls.build(name, spec, status)
