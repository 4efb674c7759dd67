"""Local fetches: read a leader's segment files directly when they are on this host.

A ``FetchLocalResponse`` names a segment file, a byte range and the file's (device,
inode). When this process can open that path and finds the very same file there, the
frames are read from it directly: no bytes pass through the leader or a socket (HDFS
calls this a short-circuit local read). Anything else (the leader runs on another host
or as another user, retention deleted the segment, the range is past the file's end)
makes ``read`` return None and the caller fetches over the network instead; the frames'
crc is checked either way, so a local read never returns other bytes.

Committed ranges are returned as views of a read-only memory map of the file, so Arrow
buffers point straight at the page cache (no copy at all). That is safe because frames
below the high watermark are never truncated, only deleted with their whole segment,
which leaves a mapping intact. Uncommitted ranges may be truncated when leadership
moves (touching truncated mapped pages raises SIGBUS), so those are copied with
``pread`` instead.
"""

from __future__ import annotations

import contextlib
import mmap
import os
import threading
from collections import OrderedDict
from dataclasses import dataclass

__all__ = ["LocalFiles", "MAX_OPEN"]

MAX_OPEN = 32
"""Segment files kept open per client (least recently used closed first)."""


@dataclass
class _OpenFile:
    fd: int
    device: int
    inode: int
    mapped: mmap.mmap | None = None  # of the whole file as it was when mapped


class LocalFiles:
    """Open segment files of leaders on this host, by path, each checked to be the one the
    leader named. Thread-safe: reads may run off the event loop."""

    def __init__(self, max_open: int = MAX_OPEN) -> None:
        """Keep at most ``max_open`` files open."""
        self._max_open = max_open
        self._open: OrderedDict[str, _OpenFile] = OrderedDict()
        self._lock = threading.Lock()
        self._closed = False

    def read(
        self,
        path: str,
        position: int,
        length: int,
        device: int,
        inode: int,
        *,
        mapped: bool = False,
    ) -> memoryview | bytes | None:
        """``length`` bytes at ``position`` of the file the leader named, or None when this
        process cannot read that very file (the caller then fetches over the network).

        Args:
            mapped: return a view of a memory map of the file instead of a copy; only for
                ranges that can never be truncated (committed frames).
        """
        end = position + length
        with self._lock:
            if self._closed:
                return None
            entry = self._entry(path, device, inode)
            if entry is None:
                return None
            try:
                if not mapped:
                    data = os.pread(entry.fd, length, position)
                    return data if len(data) == length else None
                if entry.mapped is None or len(entry.mapped) < end:
                    size = os.fstat(entry.fd).st_size
                    if size < end:
                        return None
                    # The old map (if any) lives on while batches still use its pages.
                    entry.mapped = mmap.mmap(entry.fd, size, mmap.MAP_SHARED, mmap.PROT_READ)
                return memoryview(entry.mapped)[position:end]
            except (OSError, ValueError):
                self._forget(path)
                return None

    @property
    def open_files(self) -> tuple[str, ...]:
        """Paths of the files open now, least recently used first."""
        with self._lock:
            return tuple(self._open)

    def close(self) -> None:
        """Close every open file; later reads return None (maps live on in their views)."""
        with self._lock:
            self._closed = True
            for path in list(self._open):
                self._forget(path)

    def _entry(self, path: str, device: int, inode: int) -> _OpenFile | None:
        cached = self._open.get(path)
        if cached is not None:
            if (cached.device, cached.inode) == (device, inode) and _linked(cached.fd):
                self._open.move_to_end(path)
                return cached
            self._forget(path)  # deleted, or the path names another file now
        try:
            fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
        except OSError:
            return None  # another host's path, no permission, or deleted by retention
        stat = os.fstat(fd)
        if (stat.st_dev, stat.st_ino) != (device, inode):
            os.close(fd)
            return None
        entry = self._open[path] = _OpenFile(fd, device, inode)
        while len(self._open) > self._max_open:
            self._forget(next(iter(self._open)))
        return entry

    def _forget(self, path: str) -> None:
        entry = self._open.pop(path, None)
        if entry is not None:
            with contextlib.suppress(OSError):
                os.close(entry.fd)  # a map of it stays valid without the descriptor


def _linked(fd: int) -> bool:
    """The open file still has a name (a deleted segment's inode may be reused by a new
    segment at the same path, e.g. after a topic is recreated)."""
    try:
        return os.fstat(fd).st_nlink > 0
    except OSError:
        return False
