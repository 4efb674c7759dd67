"""The Streaming Controller's settings.

Defaults come from the packaged ``spark_stream/conf/sc.yaml``, overridden by a ``sc.yaml``
in ``FLUVIO_CONF_DIR`` and by ``FLUVIO_SC_*`` variables (see ``spark_stream.config`` for
the precedence).
"""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

from pydantic import Field
from pydantic_settings import SettingsConfigDict

from spark_stream.config import ProcessSettings
from spark_stream.models import ConsumerGroupSpec
from spark_stream.spu_identity import read_secret_file

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
    redis_password_file: str | None = Field(
        None,
        description="A file (mode 0600) holding the Redis password (AUTH); None: the "
        "password in redis_url if any (redis://:PASSWORD@host:port/0), else none.",
    )
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
    lease_ttl_s: float = Field(
        5.0,
        gt=0,
        description="The active-SC lease's time to live: a standby SC takes over at most "
        "this long after the active one stopped renewing (it renews every third of it).",
    )
    lease_poll_s: float = Field(
        0.5, gt=0, description="How often a standby SC tries to take the lease."
    )
    spu_sc_endpoints: str | None = Field(
        None,
        description="The SC private endpoints managed SPUs are given, comma separated "
        "(every SC of the cluster, active and standby); None: this SC's own.",
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
    leader_rebalance_enabled: bool = Field(
        True,
        description="Move leadership back to each partition's preferred replica (the "
        "first of its replica list) once it is online and in sync again (Kafka's "
        "auto.leader.rebalance.enable).",
    )
    leader_rebalance_interval_s: float = Field(
        60.0, gt=0, description="How often the SC looks for leaders off their preferred replica."
    )
    leader_imbalance_pct: float = Field(
        10.0,
        ge=0,
        le=100,
        description="An SPU gets its preferred partitions back once the share of them it "
        "does not lead is above this percentage (0: any).",
    )
    leader_rebalance_max_moves: int = Field(
        100, ge=1, description="Most partitions one rebalance sweep moves (next: the rest)."
    )

    def redis_password(self) -> str | None:
        """The password in ``redis_password_file``, or None when it is not set.

        Raises:
            InvalidConfigError: the file cannot be read, is empty or readable by others.
        """
        if self.redis_password_file is None:
            return None
        return read_secret_file(Path(self.redis_password_file))

    def group_defaults(self) -> ConsumerGroupSpec:
        """The spec a group gets when a join creates it without its own timeouts."""
        return ConsumerGroupSpec(
            session_timeout_ms=self.group_session_timeout_ms,
            heartbeat_interval_ms=self.group_heartbeat_interval_ms,
            rebalance_timeout_ms=self.group_rebalance_timeout_ms,
        )
