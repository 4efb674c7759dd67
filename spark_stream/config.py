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

from pydantic import ValidationError
from pydantic_settings import (
    BaseSettings,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    YamlConfigSettingsSource,
)

from spark_stream.errors import InvalidConfigError

__all__ = ["conf_dir", "ProcessSettings", "load_settings"]


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
