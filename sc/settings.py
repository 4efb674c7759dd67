"""The Streaming Controller's settings.

Defaults come from ``conf/sc.yaml``, overridden by ``FLUVIO_SC_*`` variables (see
``spark_stream.config`` for the precedence).
"""

from __future__ import annotations

from typing import ClassVar

from pydantic import Field
from pydantic_settings import SettingsConfigDict

from spark_stream.config import ProcessSettings

__all__ = ["ScSettings"]


class ScSettings(ProcessSettings):
    """Streaming Controller settings (``conf/sc.yaml``, ``FLUVIO_SC_*``)."""

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
    redis_start_timeout_s: float = Field(
        10.0,
        gt=0,
        description="How long a starting SC retries an unreachable Redis before it exits.",
    )
