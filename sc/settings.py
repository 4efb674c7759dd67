"""The Streaming Controller's settings.

Defaults come from the packaged ``spark_stream/conf/sc.yaml``, overridden by a ``sc.yaml``
in ``FLUVIO_CONF_DIR`` and by ``FLUVIO_SC_*`` variables (see ``spark_stream.config`` for
the precedence).
"""

from __future__ import annotations

from typing import ClassVar

from pydantic import Field
from pydantic_settings import SettingsConfigDict

from spark_stream.config import ProcessSettings
from spark_stream.models import ConsumerGroupSpec

__all__ = ["ScSettings"]


class ScSettings(ProcessSettings):
    """Streaming Controller settings (packaged ``sc.yaml``, ``FLUVIO_SC_*``)."""

    yaml_file: ClassVar[str] = "sc.yaml"
    model_config = SettingsConfigDict(env_prefix="FLUVIO_SC_")  # merged with the base's

    host: str = Field("127.0.0.1", description="Address both servers bind to.")
    public_port: int = Field(9003, ge=0, le=65535, description="Clients, admin, metadata watch.")
    private_port: int = Field(9004, ge=0, le=65535, description="SPU connections.")
    redis_url: str = Field("redis://127.0.0.1:6379/0", description="The KV store.")
    key_prefix: str = Field("fluvio", description="Prefix of every Redis key the SC writes.")
    spu_token: str = Field("fluvio-local", description="Shared secret SPUs present on connect.")
    heartbeat_timeout_s: float = Field(
        6.0, gt=0, description="Silence after which an SPU is Offline."
    )
    data_dir: str = Field(".fluvio", description="Where managed SPUs keep their data.")
    tier_root: str | None = Field(
        None,
        description="Default tier of new topics: {tier_root}/{topic} (an fsspec URL every "
        "SPU can write); None: topics are tiered only when created with a tier.",
    )
    admin_kv_timeout_s: float = Field(
        3.0,
        gt=0,
        description="How long an admin request retries an unreachable Redis before it "
        "answers KvUnavailableError (retriable); the SC's own loops retry for 30 s.",
    )
    require_redis_persistence: bool = Field(
        False,
        description="Refuse to start on a Redis that would lose writes on a restart "
        "(no append-only file, or appendfsync no); off: log a warning (sc.kv.persistence).",
    )
    redis_start_timeout_s: float = Field(
        10.0,
        gt=0,
        description="How long a starting SC retries an unreachable Redis before it exits.",
    )
    group_session_timeout_ms: int = Field(
        10_000, ge=3_000, le=60_000, description="Consumer groups: default session timeout."
    )
    group_heartbeat_interval_ms: int = Field(
        1_000, ge=500, le=5_000, description="Consumer groups: default heartbeat interval."
    )
    group_rebalance_timeout_ms: int = Field(
        60_000,
        ge=1_000,
        le=1_800_000,
        description="Consumer groups: default time a member has to release a revoke.",
    )

    def group_defaults(self) -> ConsumerGroupSpec:
        """The spec a group gets when a join creates it without its own timeouts."""
        return ConsumerGroupSpec(
            session_timeout_ms=self.group_session_timeout_ms,
            heartbeat_interval_ms=self.group_heartbeat_interval_ms,
            rebalance_timeout_ms=self.group_rebalance_timeout_ms,
        )
