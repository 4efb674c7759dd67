"""Local fetches: read a leader's segment files directly when they are on this host.

A ``FetchLocalResponse`` names a segment file, a byte range and the file's (device,
inode). When this process can open that path and finds the very same file there, the
frames are read with ``pread``: one copy out of the page cache, and no bytes through the
leader or the socket (HDFS calls this a short-circuit local read). Anything else (the
leader runs on another host or as another user, retention deleted the segment, a short
read) makes ``read`` return None and the caller fetches over the network instead; the
frames' crc is checked either way, so a local read can never return other bytes.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections import OrderedDict

__all__ = ["LocalFiles", "MAX_OPEN"]

MAX_OPEN = 32
"""Segment files kept open per client (least recently used closed first)."""


class LocalFiles:
    """Open segment files of leaders on this host, by path, each checked to be the one the
    leader named. Thread-safe: reads run off the event loop."""

    def __init__(self, max_open: int = MAX_OPEN) -> None:
        """Keep at most ``max_open`` files open."""
        self._max_open = max_open
        self._open: OrderedDict[str, tuple[int, int, int]] = OrderedDict()  # fd, dev, ino
        self._lock = threading.Lock()
        self._closed = False

    def read(self, path: str, position: int, length: int, device: int, inode: int) -> bytes | None:
        """``length`` bytes at ``position`` of the file the leader named, or None when this
        process cannot read that very file (the caller then fetches over the network)."""
        with self._lock:
            if self._closed:
                return None
            fd = self._fd(path, device, inode)
            if fd is None:
                return None
            try:
                data = os.pread(fd, length, position)
            except OSError:
                self._forget(path)
                return None
        return data if len(data) == length else None

    @property
    def open_files(self) -> tuple[str, ...]:
        """Paths of the files open now, least recently used first."""
        with self._lock:
            return tuple(self._open)

    def close(self) -> None:
        """Close every open file; later reads return None."""
        with self._lock:
            self._closed = True
            for path in list(self._open):
                self._forget(path)

    def _fd(self, path: str, device: int, inode: int) -> int | None:
        cached = self._open.get(path)
        if cached is not None and cached[1:] == (device, inode) and _linked(cached[0]):
            self._open.move_to_end(path)
            return cached[0]
        if cached is not None:
            self._forget(path)  # deleted, or the path names another file now
        try:
            fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
        except OSError:
            return None  # another host's path, no permission, or deleted by retention
        stat = os.fstat(fd)
        if (stat.st_dev, stat.st_ino) != (device, inode):
            os.close(fd)
            return None
        self._open[path] = (fd, device, inode)
        while len(self._open) > self._max_open:
            self._forget(next(iter(self._open)))
        return fd

    def _forget(self, path: str) -> None:
        entry = self._open.pop(path, None)
        if entry is not None:
            with contextlib.suppress(OSError):
                os.close(entry[0])


def _linked(fd: int) -> bool:
    """The open file still has a name (a deleted segment's inode may be reused by a new
    segment at the same path, e.g. after a topic is recreated)."""
    try:
        return os.fstat(fd).st_nlink > 0
    except OSError:
        return False
