"""``fluvio profile list | current | switch | delete | add``: the client's named clusters.

Profiles live in one file (``spark_stream.client.profile``); ``fluvio cluster start``
writes the ``local`` one and makes it current. These commands need no cluster.
"""

from __future__ import annotations

import argparse
import sys

from spark_stream.cli.output import emit
from spark_stream.client.profile import (
    Profile,
    delete_profile,
    load_profile,
    load_profiles,
    profile_path,
    save_profile,
    switch_profile,
)
from spark_stream.errors import InvalidConfigError

__all__ = [
    "PROFILE_COLUMNS",
    "profile_list",
    "profile_current",
    "profile_switch",
    "profile_delete",
    "profile_add",
]

PROFILE_COLUMNS = ("current", "profile", "endpoint", "data_dir")


def profile_list(args: argparse.Namespace) -> int:
    """Every profile, the current one marked ``*``."""
    profiles = load_profiles()
    if not profiles.profiles and args.output == "table":
        print(f"no profiles in {profile_path()}: `fluvio cluster start` writes one")
        return 0
    rows = [
        {
            "current": "*" if name == profiles.current else "",
            "profile": name,
            "endpoint": p.endpoint,
            "data_dir": p.data_dir or None,
        }
        for name, p in sorted(profiles.profiles.items())
    ]
    emit(rows, args.output, columns=PROFILE_COLUMNS)
    return 0


def profile_current(args: argparse.Namespace) -> int:
    """The current profile's name (exit 1 when none is current)."""
    print(load_profile().name)
    return 0


def profile_switch(args: argparse.Namespace) -> int:
    """Make a profile current."""
    profile = switch_profile(args.name)
    print(f'now using profile "{profile.name}" ({profile.endpoint})')
    return 0


def profile_delete(args: argparse.Namespace) -> int:
    """Delete a profile; warn when it was the current one."""
    was_current = delete_profile(args.name)
    print(f'profile "{args.name}" deleted')
    if was_current:
        print(
            "warning: it was the current profile; pick another with `fluvio profile switch NAME`",
            file=sys.stderr,
        )
    return 0


def profile_add(args: argparse.Namespace) -> int:
    """Add (or replace) a profile for a cluster at ``endpoint`` and make it current."""
    if not args.name.strip():
        raise InvalidConfigError("profile add: the name must not be empty")
    profile = Profile(
        endpoint=args.endpoint,
        data_dir=args.data_dir or "",
        name=args.name,
        token=args.token or "",
    )
    save_profile(profile)
    print(f'profile "{profile.name}" added ({profile.endpoint}); it is now current')
    return 0
