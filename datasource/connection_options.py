"""The connection options a read and a write share: ``endpoint``, ``token``, ``tls.*``.

Each is checked on the driver when the options are parsed, so a malformed endpoint or an
unusable PEM file fails the query before any task runs. Unlike the rest of the option
parsing this touches files: ``tls_option`` loads the TLS files once to check them (the
executors get the paths, in ``TlsConfig``). Errors are ``DataSourceOptionError`` naming
the option, with the messages the Java connector's vectors share.
"""

from __future__ import annotations

from collections.abc import Mapping

from datasource.option_names import GivenOptions
from spark_stream.errors import DataSourceOptionError, InvalidConfigError
from spark_stream.net.endpoint import parse_endpoint
from spark_stream.net.tls import TlsConfig

__all__ = ["TLS_OPTIONS", "endpoint_option", "named_token", "tls_option"]

TLS_OPTIONS = ("tls.ca", "tls.cert", "tls.key")
"""PEM files of TLS to the cluster: the CA to trust, and a client certificate and key
for mutual TLS. Paths on every host of the query (driver and executors)."""


def named_token(options: Mapping[str, str]) -> str | None:
    """The ``token`` option of a read or write (None when not given or empty)."""
    for name, value in options.items():
        if name.lower() == "token":
            return value.strip() or None
    return None


def endpoint_option(opts: GivenOptions) -> str | None:
    """The ``endpoint`` option (``kafka.bootstrap.servers``), each entry checked by the one
    endpoint parser. Kafka's form lists several servers, comma-separated: the client tries
    them in turn and follows the active SC a standby names (``ScEndpoints``), so a read
    or write still connects when the first listed SC is dead."""
    endpoint = opts.values.get("endpoint")
    if endpoint is None:
        return None
    name = opts.name("endpoint")
    hosts = [h.strip() for h in endpoint.split(",")]
    for host in hosts:
        try:
            parse_endpoint(host, what=f"option '{name}'")
        except InvalidConfigError as exc:
            raise DataSourceOptionError(str(exc)) from None
    return ",".join(hosts)


def tls_option(opts: GivenOptions) -> TlsConfig | None:
    """The ``tls.*`` options as a ``TlsConfig``, its files checked here (on the driver)."""
    given = {name[len("tls.") :]: opts.values[name] for name in TLS_OPTIONS if name in opts.values}
    if not given:
        return None
    config = TlsConfig(ca=given.get("ca"), cert=given.get("cert"), key=given.get("key"))
    try:
        config.client_context()
    except InvalidConfigError as exc:
        raise DataSourceOptionError(f"options tls.*: {exc}") from None
    return config
