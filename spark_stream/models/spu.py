"""The SPU object: a registered storage/processing unit and its connectivity status.

Spec (seed ``003``)::

    spec:
      spuId: 100
      spuType: Custom
      rack: Zone1
      publicEndpoint: {port: 9005, ingress: [{hostname: localhost}], encryption: TLS}
      privateEndpoint: {port: 9006, host: localhost, encryption: TLS}
      secretVerifier: "sha256:..."   # of the SPU's own secret; the KV never holds it

Status: ``resolution`` is ``Init`` until the SC sees the SPU connect, then
``Online``/``Offline`` as its connection comes and goes.
"""

from __future__ import annotations

from typing import Any, ClassVar, Self

from pydantic import Field, model_validator

from spark_stream.models._base import CaseInsensitiveEnum, FrozenModel, KvObject

__all__ = [
    "SpuType",
    "Encryption",
    "IngressAddr",
    "PublicEndpoint",
    "PrivateEndpoint",
    "SpuSpec",
    "SpuResolution",
    "SpuStatus",
    "Spu",
    "MAX_SPU_ID",
]

#: SPU ids are int32 on the wire, as in Fluvio.
MAX_SPU_ID = 2**31 - 1


class SpuType(CaseInsensitiveEnum):
    """Who provisions the SPU: Fluvio from an SPU group, or someone out of band."""

    CUSTOM = "Custom"
    MANAGED = "Managed"


class Encryption(CaseInsensitiveEnum):
    """Transport security of an endpoint."""

    PLAINTEXT = "PLAINTEXT"
    TLS = "TLS"


class IngressAddr(FrozenModel):
    """One address clients may use to reach the public endpoint."""

    hostname: str | None = None
    ip: str | None = None

    @model_validator(mode="after")
    def _one_of(self) -> Self:
        if not self.hostname and not self.ip:
            raise ValueError("ingress: an address needs a hostname or an ip")
        return self


class PublicEndpoint(FrozenModel):
    """Where producers and consumers reach the SPU (default port 9005)."""

    port: int = Field(default=9005, ge=1, le=65535)
    ingress: tuple[IngressAddr, ...] = ()
    encryption: Encryption = Encryption.PLAINTEXT

    @property
    def host(self) -> str:
        """The first ingress address (hostname preferred), else ``localhost``."""
        for addr in self.ingress:
            if addr.hostname:
                return addr.hostname
            if addr.ip:
                return addr.ip
        return "localhost"


class PrivateEndpoint(FrozenModel):
    """Where peers (SPU-to-SPU replication) reach the SPU (default port 9006)."""

    port: int = Field(default=9006, ge=1, le=65535)
    host: str = "localhost"
    encryption: Encryption = Encryption.PLAINTEXT


class SpuSpec(FrozenModel):
    """Desired state of an SPU; ``spu_id`` is globally unique across SPU types."""

    spu_id: int = Field(ge=0, le=MAX_SPU_ID)
    spu_type: SpuType = SpuType.CUSTOM
    rack: str | None = None
    public_endpoint: PublicEndpoint = PublicEndpoint()
    private_endpoint: PrivateEndpoint = PrivateEndpoint()
    secret_verifier: str | None = Field(
        default=None,
        description="SHA-256 of the SPU's own secret (``spark_stream.spu_identity``); "
        "the SC accepts the SPU only with that secret. Never sent to SPUs.",
    )

    def without_secret(self) -> SpuSpec:
        """This spec without its verifier (what the SC pushes to SPUs)."""
        return (
            self
            if self.secret_verifier is None
            else self.model_copy(update={"secret_verifier": None})
        )


class SpuResolution(CaseInsensitiveEnum):
    """Connectivity of an SPU as the SC sees it."""

    INIT = "Init"
    ONLINE = "Online"
    OFFLINE = "Offline"


class SpuStatus(FrozenModel):
    """Observed state of an SPU."""

    resolution: SpuResolution = SpuResolution.INIT

    @property
    def is_online(self) -> bool:
        """True when the SPU is connected to the SC."""
        return self.resolution is SpuResolution.ONLINE


class Spu(KvObject[SpuSpec, SpuStatus]):
    """An SPU object (kind ``Spu``)."""

    kind: ClassVar[str] = "Spu"

    status: SpuStatus = SpuStatus()

    @classmethod
    def new(cls, name: str, spec: SpuSpec, status: SpuStatus | None = None) -> Spu:
        """Build an SPU object with revision 0 (the store assigns the real one)."""
        return cls.build(name, spec, status)

    @property
    def spu_id(self) -> int:
        """The SPU's id (``spec.spu_id``)."""
        return self.spec.spu_id

    def public_dict(self) -> dict[str, Any]:
        """``to_dict()`` without the secret verifier: what the SC sends SPUs and clients."""
        return self.with_spec(self.spec.without_secret()).to_dict()
