"""LogConfig: documented defaults and rejected values."""

from __future__ import annotations

import pydantic
import pytest

from spu.storage import LogConfig
from spu.storage.config import DAY_MS, GIB, MIB


def test_defaults_are_the_documented_ones() -> None:
    config = LogConfig()
    assert config.segment_max_bytes == GIB
    assert config.segment_max_age_ms == 7 * DAY_MS
    assert config.index_interval_bytes == 4096
    assert (config.retention_ms, config.retention_bytes) == (7 * DAY_MS, None)
    assert (config.flush_bytes, config.flush_interval_ms) == (None, 1000)
    assert config.max_batch_bytes == 16 * MIB
    assert config.recovery_scan == "active"
    assert config.check_payload == "full"


@pytest.mark.parametrize(
    "field, value",
    [
        ("segment_max_bytes", 10),
        ("segment_max_bytes", 1 << 31),
        ("index_interval_bytes", -1),
        ("retention_ms", 0),
        ("flush_bytes", 0),
        ("recovery_scan", "some"),
        ("no_such_setting", 1),
    ],
)
def test_bad_values_are_rejected(field: str, value: object) -> None:
    with pytest.raises(pydantic.ValidationError, match=field):
        LogConfig(**{field: value})


def test_config_is_frozen() -> None:
    config = LogConfig()
    with pytest.raises(pydantic.ValidationError):
        config.segment_max_bytes = 1  # type: ignore[misc]
