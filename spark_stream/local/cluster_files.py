"""Where a local cluster's files live, and what follows from its recorded layout.

Why apart from ``cluster``: the data directory's tree (described at the top of
``spark_stream.local.cluster``) and the facts derived from ``cluster.json`` (endpoints,
process names, the servers' TLS, metrics and auth settings) are read by ``start``,
``stop``, ``status`` and the diagnostics alike; ``ClusterFiles`` holds them once, and
``LocalCluster`` adds the processes on top. Reading the files a process wrote (pid files,
``sc.ready``, metrics URLs) is here too; nothing here starts or stops a process.
"""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path

from spark_stream.auth import CLUSTER, Claims, Grant, Permission, load_key, new_key, sign, write_key
from spark_stream.errors import InvalidConfigError
from spark_stream.local._state import ClusterLayout
from spark_stream.local.certs import LocalCerts, ensure_local_certs
from spark_stream.local.launcher import process_alive
from spark_stream.net.tls import TlsConfig
from spark_stream.spu_identity import read_secret_file
from spark_stream.supervision import ManagedSpuDirs

__all__ = ["HOST", "LAYOUT_FILE", "ClusterFiles", "load_layout"]

HOST = "127.0.0.1"
"""Every process of a local cluster listens on loopback only."""
LAYOUT_FILE = "cluster.json"


def load_layout(path: Path, default: ClusterLayout) -> ClusterLayout:
    """The layout saved at ``path``; ``default`` when none was saved yet.

    Raises:
        InvalidConfigError: the file exists but is unreadable or not a layout.
    """
    try:
        data = json.loads(path.read_text())
        return ClusterLayout(**data)
    except FileNotFoundError:
        return default
    except (OSError, ValueError, TypeError) as exc:
        raise InvalidConfigError(f"{path} is unreadable: {exc}") from exc


class ClusterFiles:
    """The files of the cluster under ``data_dir`` and what its ``layout`` implies.

    Args:
        data_dir: where everything lives (resolved).
        layout: the cluster's layout (``cluster.json``, or the one a first start makes).
    """

    def __init__(self, data_dir: Path, layout: ClusterLayout) -> None:
        self.data_dir = data_dir
        self.layout = layout
        self._admin_token: str | None = None
        self._spu_dirs = ManagedSpuDirs(self.data_dir / "spus")

    # -- paths ---------------------------------------------------------------------------

    @property
    def layout_file(self) -> Path:
        """``cluster.json``: the recorded layout."""
        return self.data_dir / LAYOUT_FILE

    def save_layout(self) -> None:
        """Write ``layout`` to ``cluster.json`` (atomically: a temp file, then rename)."""
        self.data_dir.mkdir(parents=True, exist_ok=True)
        tmp = self.layout_file.with_suffix(".tmp")
        tmp.write_text(json.dumps(asdict(self.layout), indent=2) + "\n")
        tmp.replace(self.layout_file)

    def pid_file(self, name: str) -> Path:
        """The pid file of process ``name`` (``redis``, ``sc``, ``spu-5001``)."""
        return self.data_dir / "pids" / f"{name}.pid"

    @property
    def tier_root(self) -> Path:
        """The default tier of the cluster's topics: ``{data_dir}/tier/{topic}``."""
        return self.data_dir / "tier"

    def log_file(self, name: str) -> Path:
        """The log file of process ``name``."""
        return self.data_dir / "logs" / f"{name}.log"

    def spu_dir(self, spu_id: int) -> Path:
        """The data dir of SPU ``spu_id`` (the provisioner's layout for managed SPUs)."""
        return self._spu_dirs.spu_dir(spu_id)

    def spu_pid_file(self, spu_id: int) -> Path:
        """The pid file of SPU ``spu_id``: the provisioner's for a group, ours for custom."""
        if self.layout.spu_mode == "group":
            return self._spu_dirs.pid_file(spu_id)  # written by the SC's provisioner
        return self.pid_file(f"spu-{spu_id}")

    def spu_log(self, spu_id: int) -> Path:
        """The log of SPU ``spu_id``: the provisioner's for a group, ours for custom."""
        if self.layout.spu_mode == "group":
            return self._spu_dirs.log_file(spu_id)
        return self.log_file(f"spu-{spu_id}")

    @property
    def auth_key_file(self) -> Path:
        """The cluster key signing client tokens (used when ``auth`` is on)."""
        return self.data_dir / "auth" / "cluster.key"

    @property
    def redis_password_file(self) -> Path:
        """The password of the cluster's own Redis (0600), given to the SC as a file."""
        return self.data_dir / "redis.password"

    @property
    def certs(self) -> LocalCerts:
        """The cluster's TLS files (made by the first ``--tls`` start)."""
        return LocalCerts(self.data_dir / "tls")

    # -- what the layout implies ---------------------------------------------------------

    @property
    def admin_token(self) -> str | None:
        """A cluster-admin token (``*=admin``) when auth is on, else None.

        Raises:
            InvalidConfigError: the key file is unreadable.
        """
        if not self.layout.auth:
            return None
        if self._admin_token is None:
            if not self.auth_key_file.is_file():
                write_key(self.auth_key_file, new_key())
            admin = Claims("admin", (Grant(CLUSTER, frozenset({Permission.ADMIN})),))
            self._admin_token = sign(admin, load_key(self.auth_key_file))
        return self._admin_token

    @property
    def endpoint(self) -> str:
        """The SC's public ``host:port``; with standby SCs, every SC's, comma separated."""
        ports = [self.layout.sc_public_port] + [p[0] for p in self.layout.standby_ports]
        return ",".join(f"{HOST}:{port}" for port in ports)

    @property
    def sc_private_endpoints(self) -> str:
        """Every SC's private ``host:port``, comma separated (what SPUs are given)."""
        ports = [self.layout.sc_private_port] + [p[1] for p in self.layout.standby_ports]
        return ",".join(f"{HOST}:{port}" for port in ports)

    @property
    def standby_names(self) -> list[str]:
        """The process names of the standby SCs (``sc-standby-1``...)."""
        return [f"sc-standby-{n}" for n in range(1, len(self.layout.standby_ports) + 1)]

    @property
    def client_tls(self) -> TlsConfig | None:
        """How clients connect (None: plaintext): the profile written by ``start`` has it."""
        if self.layout.tls == "off":
            return None
        return self.certs.client_config(mutual=self.layout.tls == "mtls")

    def redis_password(self) -> str | None:
        """The password of the cluster's own Redis; None for an external one or none."""
        if not self.layout.redis_port or not self.redis_password_file.exists():
            return None
        return read_secret_file(self.redis_password_file)

    def known_spu_ids(self) -> list[int]:
        """Every SPU id this data dir has heard of: layout, custom ports, SPU dirs."""
        ids = set(self.layout.spu_ids) | {int(k) for k in self.layout.spu_ports}
        return sorted(ids | set(self._spu_dirs.spu_ids()))

    def spu_pid(self, spu_id: int) -> int | None:
        """The pid of SPU ``spu_id`` if it runs."""
        return process_alive(self.spu_pid_file(spu_id))

    def metrics_url(self, name: str) -> str | None:
        """The metrics URL process ``name`` (``sc``, ``spu-5001``) wrote, if any."""
        try:
            if name == "sc":
                url = json.loads((self.data_dir / "sc.ready").read_text()).get("metrics_url")
            else:
                url = self._spu_dirs.metrics_file(int(name[4:])).read_text().strip()
        except (OSError, ValueError):
            return None
        return url if isinstance(url, str) and url else None

    # -- the servers' settings -----------------------------------------------------------

    def tls_env(self) -> dict[str, str]:
        """``FLUVIO_SC_TLS__*`` and ``FLUVIO_SPU_TLS__*``: every server's certificate,
        the CA, and whether client certificates are required (made now if missing)."""
        if self.layout.tls == "off":
            return {}
        certs = ensure_local_certs(self.certs.directory)
        server = certs.server_config(mutual=self.layout.tls == "mtls")
        env = {}
        for role in ("SC", "SPU"):
            for key, value in server.model_dump(exclude_defaults=True).items():
                env[f"FLUVIO_{role}_TLS__{key.upper()}"] = (
                    str(value).lower() if isinstance(value, bool) else str(value)
                )
        return env

    def metrics_env(self) -> dict[str, str]:
        """SPU settings for metrics on a free port each (``FLUVIO_SPU_METRICS_PORT``)."""
        return {"FLUVIO_SPU_METRICS_PORT": "0"} if self.layout.metrics else {}

    def auth_env(self) -> dict[str, str]:
        """The SC's and SPUs' ``auth_key_file`` setting when auth is on."""
        if not self.layout.auth:
            return {}
        key = str(self.auth_key_file)
        return {"FLUVIO_SC_AUTH_KEY_FILE": key, "FLUVIO_SPU_AUTH_KEY_FILE": key}
