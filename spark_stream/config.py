"""Process configuration: defaults in the packaged ``conf/*.yaml``, overridden by ``FLUVIO_*``.

Each process reads one YAML file through pydantic-settings. The defaults ship inside the
package (``spark_stream/conf/sc.yaml``, ``spu.yaml``, read through ``importlib.resources``)
so a wheel install finds them wherever it lives. Precedence, highest first: keyword
arguments, environment (``FLUVIO_SC_PUBLIC_PORT=9103``, nested fields with ``__``), the
same-named file in the directory ``FLUVIO_CONF_DIR`` names (an operator's overrides: only
the fields it sets; missing there is fine), the packaged YAML, the defaults written here.
"""

from __future__ import annotations

import os
from importlib.resources import as_file, files
from importlib.resources.abc import Traversable
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
from spark_stream.net.tls import TlsConfig

__all__ = ["conf_dir", "packaged_conf", "settings_files", "ProcessSettings", "load_settings"]


_S = TypeVar("_S", bound="ProcessSettings")


def conf_dir() -> Path | None:
    """The operator's override directory, ``FLUVIO_CONF_DIR``, or None when unset."""
    env = os.environ.get("FLUVIO_CONF_DIR")
    return Path(env) if env else None


def packaged_conf(name: str) -> Traversable:
    """The default YAML file ``name`` shipped in the package (``spark_stream/conf/``)."""
    return files("spark_stream") / "conf" / name


def settings_files(cls: type[ProcessSettings]) -> list[str]:
    """The YAML files ``cls`` reads, highest precedence first (logged by the servers)."""
    if not cls.yaml_file:
        return []
    found: list[str] = []
    override = conf_dir()
    if override is not None and (override / cls.yaml_file).is_file():
        found.append(str(override / cls.yaml_file))
    packaged = packaged_conf(cls.yaml_file)
    if packaged.is_file():
        found.append(str(packaged))
    return found


class ProcessSettings(BaseSettings):
    """Base for a process's settings: one packaged YAML file, its override, environment."""

    yaml_file: ClassVar[str] = ""
    model_config = SettingsConfigDict(extra="forbid", env_nested_delimiter="__")

    # What every server process (SC, SPU) takes alike.
    request_budget_bytes: int = Field(
        256 * 2**20,
        gt=0,
        description="Bytes of request frames held in memory at once, over all connections "
        "of both servers; a connection whose next frame does not fit stops reading until "
        "bytes are released (one frame larger than this is let in alone).",
    )
    metrics_port: int | None = Field(
        None,
        ge=0,
        le=65535,
        description="Serve Prometheus metrics on this port of host (0: any free); off when unset.",
    )
    tls: TlsConfig | None = Field(
        None,
        description="TLS on both servers (cert, key; ca and require_client_cert for mutual "
        "TLS) and on the connections this process opens (it trusts ca and presents cert); "
        "plaintext when unset. Environment: FLUVIO_SC_TLS__CERT=..., FLUVIO_SPU_TLS__CA=...",
    )
    auth_key_file: str | None = Field(
        None,
        description="Client authentication: the cluster key (hex) that signs client tokens; "
        "the SC and every SPU read the same file. Unset: off, clients need no token.",
    )

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        sources: list[PydanticBaseSettingsSource] = [init_settings, env_settings]
        if not cls.yaml_file:
            return tuple(sources)
        override = conf_dir()
        if override is not None and (override / cls.yaml_file).is_file():
            sources.append(YamlConfigSettingsSource(settings_cls, override / cls.yaml_file))
        packaged = packaged_conf(cls.yaml_file)
        if packaged.is_file():
            # The source reads the file when built, so a temporary copy (a zipped install)
            # may go once it exists.
            with as_file(packaged) as path:
                sources.append(YamlConfigSettingsSource(settings_cls, path))
        return tuple(sources)


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
