"""Network namespaces on one bridge: a few "hosts" on one machine, for multi-host tests.

Theory of operation. ``NetnsLab`` creates a Linux bridge in the caller's namespace and,
per host, a network namespace joined to the bridge by a veth pair: the bridge side
(``fv{tag}{n}``) stays here, the other end is ``eth0`` inside the namespace with the
address ``10.251.{subnet}.{n}/24`` (a private range; the bridge itself has no address,
so nothing outside the namespaces, the host included, can reach them, and they reach
nothing else). A process runs in a host with ``ip netns exec NS argv``, which execs
``argv`` in place: its pid is the server's, so processes are still stopped by pid.

``cut(host)`` takes the bridge side of the host's veth down: the host keeps its address
and its processes but reaches no other host (a network partition, not a crash);
``heal(host)`` brings it back up. Names carry a per-run tag (the pid), so parallel runs
do not collide, and ``close`` deletes every namespace (which removes its veth pair) and
the bridge, even after a failed start; it never touches names it did not create.

Everything needs ``CAP_NET_ADMIN`` (root here); ``netns_problem`` says why a run cannot
create namespaces, so a test can skip with that reason.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass
from typing import Self

__all__ = ["NetnsHost", "NetnsLab", "NetnsError", "netns_problem"]

_IP_TIMEOUT_S = 30.0


class NetnsError(RuntimeError):
    """An ``ip`` command failed (its argv and stderr in the message)."""


@dataclass(frozen=True, slots=True)
class NetnsHost:
    """One namespace on the bridge.

    Attributes:
        name: the role (``redis``, ``sc``, ``spu-5001``...).
        netns: the namespace's name.
        address: its IPv4 address on the bridge.
        veth: the bridge side of its veth pair (in the caller's namespace).
    """

    name: str
    netns: str
    address: str
    veth: str

    @property
    def wrapper(self) -> list[str]:
        """The command prefix that runs a command in this namespace."""
        return ["ip", "netns", "exec", self.netns]


def _ip(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    """Run ``ip ARGS`` (bounded); raise ``NetnsError`` when it fails and ``check``."""
    argv = ["ip", *args]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=_IP_TIMEOUT_S, check=False)
    if check and done.returncode != 0:
        raise NetnsError(f"{' '.join(argv)} failed ({done.returncode}): {done.stderr.strip()}")
    return done


def netns_problem() -> str | None:
    """Why this process cannot create network namespaces; None when it can.

    Probes with a throwaway namespace: being root is not enough in a container without
    ``CAP_SYS_ADMIN``/``CAP_NET_ADMIN``.
    """
    if shutil.which("ip") is None:
        return "no `ip` command (iproute2)"
    if os.geteuid() != 0:
        return "not root: creating network namespaces needs CAP_NET_ADMIN"
    probe = f"flprobe{os.getpid()}"
    done = _ip("netns", "add", probe, check=False)
    if done.returncode != 0:
        return f"`ip netns add` failed: {done.stderr.strip()}"
    _ip("netns", "delete", probe, check=False)
    return None


class NetnsLab:
    """A bridge and the namespaces on it; ``close`` removes all of them.

    Args:
        tag: part of every name (default: this process's pid), unique per run.
    """

    def __init__(self, tag: str | None = None) -> None:
        self.tag = tag or str(os.getpid())
        self.subnet = int(self.tag) % 250 if self.tag.isdigit() else 0
        self.bridge = f"fb{self.tag}"[:15]
        self.hosts: dict[str, NetnsHost] = {}
        self._bridge_made = False

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def _ensure_bridge(self) -> None:
        if self._bridge_made:
            return
        _ip("link", "add", self.bridge, "type", "bridge")
        self._bridge_made = True
        _ip("link", "set", self.bridge, "up")

    def add(self, name: str) -> NetnsHost:
        """Create the namespace of host ``name`` on the bridge and return it."""
        self._ensure_bridge()
        n = len(self.hosts) + 2  # .1 is left for a gateway nobody needs
        host = NetnsHost(
            name=name,
            netns=f"fl{self.tag}-{name}",
            address=f"10.251.{self.subnet}.{n}",
            veth=f"fv{self.tag}{n}"[:15],
        )
        _ip("netns", "add", host.netns)
        self.hosts[name] = host  # from here on close() removes it
        _ip("link", "add", host.veth, "type", "veth", "peer", "name", "eth0", "netns", host.netns)
        _ip("link", "set", host.veth, "master", self.bridge)
        _ip("link", "set", host.veth, "up")
        inside = ("-n", host.netns)
        _ip(*inside, "link", "set", "lo", "up")
        _ip(*inside, "addr", "add", f"{host.address}/24", "dev", "eth0")
        _ip(*inside, "link", "set", "eth0", "up")
        return host

    def cut(self, name: str) -> None:
        """Partition host ``name`` from every other host (its processes keep running)."""
        _ip("link", "set", self.hosts[name].veth, "down")

    def heal(self, name: str) -> None:
        """Undo ``cut``."""
        _ip("link", "set", self.hosts[name].veth, "up")

    def close(self) -> None:
        """Delete every namespace created (with its veth pair), then the bridge.

        Raises:
            NetnsError: something could not be deleted (after trying everything).
        """
        failures: list[str] = []
        for host in self.hosts.values():
            done = _ip("netns", "delete", host.netns, check=False)
            if done.returncode != 0:
                failures.append(f"netns {host.netns}: {done.stderr.strip()}")
            # the pair goes with the namespace; delete the bridge side if it did not
            if _ip("link", "show", host.veth, check=False).returncode == 0:
                _ip("link", "delete", host.veth, check=False)
        self.hosts.clear()
        if self._bridge_made:
            done = _ip("link", "delete", self.bridge, check=False)
            if done.returncode != 0:
                failures.append(f"bridge {self.bridge}: {done.stderr.strip()}")
            self._bridge_made = False
        if failures:
            raise NetnsError("; ".join(failures))
