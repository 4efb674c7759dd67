"""``fluvio token create``: mint a client token signed with the cluster key.

Tokens are signed, not stored (``spark_stream.auth``): whoever holds the key file mints
them, here on the command line, without asking the SC. The key is the local cluster's
(``{data_dir}/auth/cluster.key``) unless ``--key-file`` names another. The token goes to
stdout alone, so ``export FLUVIO_TOKEN=$(fluvio token create ...)`` works.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from spark_stream.auth import Claims, grants_of, load_key, sign
from spark_stream.cli.cluster_cmds import data_dir
from spark_stream.errors import InvalidConfigError

__all__ = ["token_create"]


def _key_file(args: argparse.Namespace) -> Path:
    if args.key_file:
        return Path(args.key_file)
    path = data_dir(args) / "auth" / "cluster.key"
    if not path.is_file():
        raise InvalidConfigError(
            f"no cluster key at {path}: start the cluster with `fluvio cluster start --auth`, "
            "or give --key-file"
        )
    return path


def token_create(args: argparse.Namespace) -> int:
    """Print a token for ``--principal`` with the ``--grant``s, signed with the key."""
    if not args.principal.strip():
        raise InvalidConfigError("token create: --principal must not be empty")
    grants = grants_of(args.grant)
    expires = None if args.expires is None else time.time() + args.expires
    print(sign(Claims(args.principal, grants, expires), load_key(_key_file(args))))
    return 0
