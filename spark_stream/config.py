"""Process configuration: defaults in ``conf/*.yaml``, overridden by ``FLUVIO_*`` variables.

Each process reads one section of its YAML file through pydantic-settings. Precedence,
highest first: keyword arguments, environment (``FLUVIO_SC_PUBLIC_PORT=9103``, nested
fields with ``__``), the YAML file (``FLUVIO_CONF_DIR`` or the packaged ``conf/``), the
defaults written here.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, ClassVar, TypeVar

from pydantic import Field, ValidationError
from pydantic_settings import (
    BaseSettings,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    YamlConfigSettingsSource,
)

from spark_stream.errors import InvalidConfigError

__all__ = ["conf_dir", "ProcessSettings", "ScSettings", "SpuSettings", "load_settings"]


_S = TypeVar("_S", bound="ProcessSettings")


def conf_dir() -> Path:
    """The directory holding the YAML defaults: ``FLUVIO_CONF_DIR`` or the repository's."""
    env = os.environ.get("FLUVIO_CONF_DIR")
    return Path(env) if env else Path(__file__).resolve().parent.parent / "conf"


class ProcessSettings(BaseSettings):
    """Base for a process's settings: one YAML file under ``conf/`` plus environment."""

    yaml_file: ClassVar[str] = ""
    model_config = SettingsConfigDict(extra="forbid", env_nested_delimiter="__")

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        path = conf_dir() / cls.yaml_file
        sources: list[PydanticBaseSettingsSource] = [init_settings, env_settings]
        if cls.yaml_file and path.is_file():
            sources.append(YamlConfigSettingsSource(settings_cls, yaml_file=path))
        return tuple(sources)


class ScSettings(ProcessSettings):
    """Streaming Controller settings (``conf/sc.yaml``, ``FLUVIO_SC_*``)."""

    yaml_file: ClassVar[str] = "sc.yaml"
    model_config = SettingsConfigDict(env_prefix="FLUVIO_SC_", extra="forbid",
                                      env_nested_delimiter="__")

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


class SpuSettings(ProcessSettings):
    """Streaming Processing Unit settings (``conf/spu.yaml``, ``FLUVIO_SPU_*``)."""

    yaml_file: ClassVar[str] = "spu.yaml"
    model_config = SettingsConfigDict(env_prefix="FLUVIO_SPU_", extra="forbid",
                                      env_nested_delimiter="__")

    id: int = Field(0, ge=0, description="The SPU id registered in the SC.")
    host: str = Field("127.0.0.1", description="Address both servers bind to.")
    public_port: int = Field(9005, ge=0, le=65535, description="Producers and consumers.")
    private_port: int = Field(9006, ge=0, le=65535, description="Replication from peers.")
    sc_endpoint: str = Field("127.0.0.1:9004", description="The SC's private address.")
    token: str = Field("fluvio-local", description="Shared secret presented to the SC.")
    data_dir: str = Field(".fluvio/spu", description="Replica logs live below this.")
    heartbeat_interval_s: float = Field(2.0, gt=0, description="LRS/heartbeat period.")
    replica_max_lag_ms: int = Field(10_000, gt=0, description="Follower lag before eviction.")
    max_batch_bytes: int = Field(16 * 2**20, gt=0, description="Largest produce batch accepted.")


def load_settings(cls: type[_S], **overrides: Any) -> _S:
    """Build settings, turning validation failures into one ``InvalidConfigError``.

    Raises:
        InvalidConfigError: naming every invalid field.
    """
    try:
        return cls(**overrides)
    except ValidationError as exc:
        fields = "; ".join(
            f"{'.'.join(str(p) for p in err['loc'])}: {err['msg']}" for err in exc.errors()
        )
        raise InvalidConfigError(f"invalid {cls.__name__}: {fields}") from exc
