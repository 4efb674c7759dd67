"""The per-partition tier manifest: which Parquet files hold which offsets (pure).

Theory of operation. A partition's leader writes the sealed pieces of its log to the
tier in offset order; after each file is in place it records the file in the manifest
``T/_fluvio/partition={p}.json`` (written whole, atomically). The manifest is the truth
readers and local retention go by: a file not in it does not exist for them, so a crash
between writing a file and recording it only leaves a file that the next attempt
overwrites with the same content under the same name. Entries are contiguous and
ascending: each starts where the one before it ends (``next_offset``), except where tier
retention removed a prefix. ``with_entry`` is idempotent: recording an entry that is
already there (same base offset and content) changes nothing; anything else that does
not continue the manifest is refused, so two writers cannot interleave silently.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from spark_stream.errors import StorageError

__all__ = ["MANIFEST_VERSION", "TierEntry", "TierManifest"]

MANIFEST_VERSION = 1


class TierEntry(BaseModel):
    """One tiered file: the offsets ``[base_offset, next_offset)`` it holds.

    Attributes:
        base_offset: first offset in the file (also its name).
        next_offset: offset after its last record.
        records: rows in the file (``next_offset - base_offset``).
        bytes: the file's size.
        file: its path relative to the topic's tier (``partition={p}/{base:020}.parquet``).
        max_timestamp: newest record timestamp in it, microseconds since the epoch (tier
            retention goes by it).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    base_offset: int = Field(ge=0)
    next_offset: int = Field(ge=0)
    records: int = Field(ge=0)
    bytes: int = Field(ge=0)
    file: str = Field(min_length=1)
    max_timestamp: int = -1

    @model_validator(mode="after")
    def _offsets(self) -> TierEntry:
        if self.next_offset - self.base_offset != self.records:
            raise ValueError(
                f"offsets [{self.base_offset}, {self.next_offset}) do not hold "
                f"{self.records} records"
            )
        return self


class TierManifest(BaseModel):
    """The files of one partition in its tier, oldest first.

    Attributes:
        version: manifest format version.
        partition: the partition.
        files: the entries, contiguous and ascending.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    version: int = MANIFEST_VERSION
    partition: int = Field(ge=0)
    files: tuple[TierEntry, ...] = ()

    @model_validator(mode="after")
    def _contiguous(self) -> TierManifest:
        for before, after in zip(self.files, self.files[1:], strict=False):
            if after.base_offset != before.next_offset:
                raise ValueError(
                    f"entry at {after.base_offset} does not continue the one before it, "
                    f"which ends at {before.next_offset}"
                )
        return self

    @property
    def start_offset(self) -> int | None:
        """The first offset the tier holds, or ``None`` when it holds nothing."""
        return self.files[0].base_offset if self.files else None

    @property
    def end_offset(self) -> int | None:
        """The offset after the last one the tier holds, or ``None`` when empty."""
        return self.files[-1].next_offset if self.files else None

    def with_entry(self, entry: TierEntry) -> TierManifest:
        """The manifest with ``entry`` recorded (unchanged when it is already there).

        Raises:
            StorageError: ``entry`` neither continues the manifest nor repeats an entry
                it has (another writer, or a log that diverged from the tier).
        """
        for held in self.files:
            if held.base_offset == entry.base_offset:
                if held == entry:
                    return self
                raise StorageError(
                    f"partition {self.partition}: the tier already holds a different file at "
                    f"offset {entry.base_offset} ({held.file}, to {held.next_offset})"
                )
        end = self.end_offset
        if end is not None and entry.base_offset != end:
            raise StorageError(
                f"partition {self.partition}: a file at offset {entry.base_offset} does not "
                f"continue the tier, which ends at {end}"
            )
        return self.model_copy(update={"files": (*self.files, entry)})

    def expired(self, cutoff_us: int) -> tuple[TierEntry, ...]:
        """The oldest entries whose newest record is older than ``cutoff_us`` (a prefix:
        removing one from the middle would leave a hole)."""
        count = 0
        for entry in self.files:
            if entry.max_timestamp >= cutoff_us:
                break
            count += 1
        return self.files[:count]

    def without(self, entries: Sequence[TierEntry]) -> TierManifest:
        """The manifest without a prefix of its entries (``expired``)."""
        return self.model_copy(update={"files": self.files[len(entries) :]})

    def to_json(self) -> str:
        """The manifest file's text."""
        return json.dumps(self.model_dump(mode="json"), indent=1)

    @classmethod
    def from_json(cls, text: str | bytes, where: str = "the manifest") -> TierManifest:
        """Parse a manifest file.

        Raises:
            StorageError: not a valid manifest; the message names ``where``.
        """
        try:
            return cls.model_validate_json(text)
        except ValidationError as exc:
            raise StorageError(f"{where} is not a valid tier manifest: {exc}") from None
