"""A Streaming Processing Unit's settings.

Defaults come from the packaged ``spark_stream/conf/spu.yaml``, overridden by a ``spu.yaml``
in ``FLUVIO_CONF_DIR`` and by ``FLUVIO_SPU_*`` variables (see ``spark_stream.config`` for
the precedence).
"""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

from pydantic import Field
from pydantic_settings import SettingsConfigDict

from spark_stream.config import ProcessSettings
from spark_stream.errors import InvalidConfigError
from spark_stream.frame_check import PayloadCheck
from spark_stream.spu_identity import SECRET_FILE, read_secret_file

__all__ = ["SpuSettings"]


class SpuSettings(ProcessSettings):
    """Streaming Processing Unit settings (packaged ``spu.yaml``, ``FLUVIO_SPU_*``)."""

    yaml_file: ClassVar[str] = "spu.yaml"
    model_config = SettingsConfigDict(env_prefix="FLUVIO_SPU_")  # merged with the base's

    id: int = Field(0, ge=0, description="The SPU id registered in the SC.")
    host: str = Field("127.0.0.1", description="Address both servers bind to.")
    public_port: int = Field(9005, ge=0, le=65535, description="Producers and consumers.")
    private_port: int = Field(9006, ge=0, le=65535, description="Replication from peers.")
    sc_endpoint: str = Field(
        "127.0.0.1:9004",
        description="The SC's private address; several, comma separated, when standby "
        "SCs run (the SPU follows the active one).",
    )
    secret: str | None = Field(
        None,
        description="This SPU's own secret, made at registration (FLUVIO_SPU_SECRET); "
        "None: read it from secret_file.",
    )
    secret_file: str = Field(
        SECRET_FILE,
        description="The file (mode 0600) holding the secret when secret is not set; "
        "relative to data_dir.",
    )
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
    open_segments_max: int = Field(
        1024,
        ge=1,
        description="Segments with their files open at once (up to 6 descriptors each); "
        "beyond it the least recently used ones close their files until used again.",
    )
    segment_idle_close_s: float = Field(
        10.0,
        ge=1.0,
        description="A segment unused this long closes its files (an idle replica keeps "
        "only its directory lock open); they reopen on the next read or write.",
    )

    def load_secret(self) -> str:
        """The secret this SPU presents to the SC: ``secret``, else ``secret_file``'s.

        Raises:
            InvalidConfigError: neither is set, or the file is unreadable, empty or
                readable by others (the message names the file).
        """
        if self.secret:
            return self.secret
        path = Path(self.data_dir) / self.secret_file
        if not path.exists():
            raise InvalidConfigError(
                f"SPU {self.id} has no secret: set FLUVIO_SPU_SECRET or write the secret "
                f"given at its registration to {path} (mode 0600)"
            )
        return read_secret_file(path)
