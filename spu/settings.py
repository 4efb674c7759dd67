"""A Streaming Processing Unit's settings.

Defaults come from the packaged ``spark_stream/conf/spu.yaml``, overridden by a ``spu.yaml``
in ``FLUVIO_CONF_DIR`` and by ``FLUVIO_SPU_*`` variables (see ``spark_stream.config`` for
the precedence).
"""

from __future__ import annotations

from typing import ClassVar

from pydantic import Field
from pydantic_settings import SettingsConfigDict

from spark_stream.config import ProcessSettings
from spark_stream.frame_check import PayloadCheck

__all__ = ["SpuSettings"]


class SpuSettings(ProcessSettings):
    """Streaming Processing Unit settings (packaged ``spu.yaml``, ``FLUVIO_SPU_*``)."""

    yaml_file: ClassVar[str] = "spu.yaml"
    model_config = SettingsConfigDict(env_prefix="FLUVIO_SPU_")  # merged with the base's

    id: int = Field(0, ge=0, description="The SPU id registered in the SC.")
    host: str = Field("127.0.0.1", description="Address both servers bind to.")
    public_port: int = Field(9005, ge=0, le=65535, description="Producers and consumers.")
    private_port: int = Field(9006, ge=0, le=65535, description="Replication from peers.")
    sc_endpoint: str = Field("127.0.0.1:9004", description="The SC's private address.")
    token: str = Field("fluvio-local", description="Shared secret presented to the SC.")
    group: str | None = Field(
        None,
        description="The SPU group that manages this SPU (set by the SC's provisioner); "
        "None: a custom SPU. Reported on connect: an SC whose store forgot this SPU "
        "registers a custom one again, a managed one comes back with its group.",
    )
    data_dir: str = Field(".fluvio/spu", description="Replica logs live below this.")
    heartbeat_interval_s: float = Field(2.0, gt=0, description="LRS/heartbeat period.")
    replica_max_lag_ms: int = Field(10_000, gt=0, description="Follower lag before eviction.")
    gate_audit_file: str | None = Field(
        None,
        description="Debug: append every delivery-gate change to this file as JSON lines "
        "(tests check the audit of SPUs they kill); relative to data_dir.",
    )
    max_batch_bytes: int = Field(16 * 2**20, gt=0, description="Largest produce batch accepted.")
    frame_validation: PayloadCheck = Field(
        "full",
        description="How much of each appended batch's Arrow payload is checked before it is "
        "written: none (crc only), structure (message header and buffer bounds) or full "
        "(every reader can decode it).",
    )
    retention_interval_s: float = Field(
        60.0, gt=0, description="How often retention runs over the logs."
    )
    tier_interval_s: float = Field(
        1.0, gt=0, description="How often leaders look for sealed segments to tier."
    )
    tier_concurrency: int = Field(2, ge=1, description="Tiering jobs (threads) at once.")
    scrub_mb_per_s: float = Field(
        4.0,
        ge=0,
        description="Read budget (MiB/s) of the background scrub of sealed segments; 0: off.",
    )
    scrub_pass_interval_s: float = Field(
        3600.0, gt=0, description="Pause between two scrub passes over every sealed segment."
    )
