"""``fluvio consumer-group``: ``describe --state`` (with the coordinator's counters in
``-O json``), ``--members`` with each member's STATE (``--verbose``: its partitions),
``-O json|yaml`` on every subcommand, and a clear ``error:`` for every bad input.

The CLI's ``main`` runs in a thread against an in-process SC (memory KV) with raw members.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
import yaml

from spark_stream.cli import group_cmds, main
from spark_stream.client import FluvioAsync
from tests.sc.groups.member import RawMember, settle
from tests.sc.groups.test_coordinator import TOPIC, run, running_sc

pytestmark = pytest.mark.integration


def test_describe_state_members_and_every_output_format(
    capsys: pytest.CaptureFixture[str],
) -> None:
    async def cli(*argv: str, fmt: str = "json") -> Any:
        capsys.readouterr()
        code = await asyncio.to_thread(main, ["--endpoint", endpoint, *argv, "-O", fmt])
        out = capsys.readouterr().out
        assert code == 0, out
        return json.loads(out) if fmt == "json" else yaml.safe_load(out)

    async def body() -> None:
        nonlocal endpoint
        async with running_sc(partitions=4, spus=1) as (app, _):
            endpoint = f"127.0.0.1:{app.public_port}"
            a = RawMember(app.public_port, "g", [TOPIC], client_id="a")
            b = RawMember(app.public_port, "g", [TOPIC], client_id="b", instance_id="worker-b")
            await a.join()
            await b.join()
            await settle([a, b], total=4)
            # A commit under a stale grant epoch is fenced and counted.
            tp = sorted(a.assigned())[0]
            [result] = await a.commit({tp: (1, a.grant_epoch(tp) + 100)})
            assert result["errorCode"] != 0

            [state] = await cli("consumer-group", "describe", "g", "--state")
            assert list(state) == [*group_cmds.STATE_COLUMNS, "metrics"]
            assert state["coordinator"] == endpoint
            assert state["assignment-strategy"] == "sticky-balanced"
            assert state["state"] == "Stable" and state["#members"] == 2
            assert state["generation"] >= 2
            metrics = state["metrics"]
            assert metrics["members"] == 2 and metrics["fencedCommits"] == 1
            assert metrics["rebalances"] >= 2  # a's grant, then the move to b
            assert metrics["reassignments"] == 2 and metrics["reassignMsMax"] >= 0
            assert metrics["gateWaitTimeouts"] == 0  # no SPU leads: nothing to wait for
            assert await cli("consumer-group", "describe", "g", "--state", fmt="yaml") == [state]

            rows = await cli("consumer-group", "describe", "g", "--members", "--verbose")
            assert [list(r) for r in rows] == [[*group_cmds.MEMBER_COLUMNS, "assignment"]] * 2
            by_client = {r["client-id"]: r for r in rows}
            assert by_client["b"]["group-instance-id"] == "worker-b"
            assert {r["state"] for r in rows} == {"Stable"}
            assert {r["#partitions"] for r in rows} == {2}
            parts = sorted(p for _, p in a.assigned())
            assert by_client["a"]["assignment"] == f"{TOPIC}({parts[0]},{parts[1]})"

            # b pauses (a static member's leave): kept in the plan, shown Away.
            await b.leave(member_epoch=-2)
            rows = await cli("consumer-group", "describe", "g", "--members")
            assert {r["client-id"]: r["state"] for r in rows} == {"a": "Stable", "b": "Away"}
            assert "assignment" not in rows[0]

            [listed] = await cli("consumer-group", "list", fmt="yaml")
            assert listed["state"] == "Stable" and listed["members"] == 2
            rows = await cli("consumer-group", "describe", "g", fmt="yaml")
            assert len(rows) == 4 and list(rows[0]) == list(group_cmds.DESCRIBE_COLUMNS)
            # An empty group: reset and delete, in both formats.
            c = RawMember(app.public_port, "h", [TOPIC])
            await c.join()
            await c.commit({tp: (2, c.grant_epoch(tp)) for tp in c.assigned()})
            await c.leave()
            plan = await cli("consumer-group", "reset", "h", "--all-topics", "--to-earliest")
            assert sorted((r["partition"], r["old"], r["new"]) for r in plan) == [
                (p, 2, 0) for p in range(4)
            ]
            done = await cli("consumer-group", "delete", "h", "--topic", TOPIC, fmt="yaml")
            assert done == {"group": "h", "topic": TOPIC, "offsets-deleted": 4}
            done = await cli("consumer-group", "delete", "h")
            assert done == {"group": "h", "topic": None, "group-deleted": True}
            for m in (a, b, c):
                await m.close()

    endpoint = ""
    run(body)


def test_bad_input_prints_error_and_exits_non_zero(capsys: pytest.CaptureFixture[str]) -> None:
    async def fails(*argv: str, code: int = 1) -> str:
        capsys.readouterr()
        try:
            got = await asyncio.to_thread(main, ["--endpoint", endpoint, *argv])
        except SystemExit as exc:  # argparse's own refusals
            got = int(exc.code or 0)
        err = capsys.readouterr().err
        assert got == code, err
        return err

    async def body() -> None:
        nonlocal endpoint
        async with running_sc(partitions=2) as (app, _):
            endpoint = f"127.0.0.1:{app.public_port}"
            member = RawMember(app.public_port, "busy", [TOPIC])
            await member.join()
            group = ["consumer-group"]
            err = await fails(*group, "describe", "nope", "--state")
            assert err.startswith("error: ") and "nope" in err
            err = await fails(*group, "describe", "Bad_Name")
            assert err.startswith("error: group: ")
            err = await fails(*group, "delete", "nope", "-O", "json")
            assert err.startswith("error: ") and "nope" in err
            err = await fails(*group, "describe", "busy", "--verbose")
            assert err.startswith("error: describe: --verbose")
            err = await fails(*group, "describe", "busy", "--state", "--members", code=2)
            assert "error: argument --members: not allowed with argument --state" in err
            reset = [*group, "reset", "busy"]
            err = await fails(*reset, "--to-earliest", "--to-latest", "--all-topics", code=2)
            assert "error: argument --to-latest: not allowed with argument --to-earliest" in err
            err = await fails(*reset, "--topic", TOPIC, "--all-topics", "--to-earliest", code=2)
            assert "error: argument --all-topics: not allowed with argument --topic" in err
            err = await fails(*reset, "--to-earliest")
            assert err.startswith("error: reset: give --topic T or --all-topics")
            err = await fails(*reset, "--all-topics")
            assert err.startswith("error: reset: give one of")
            err = await fails(*reset, "--all-topics", "--to-datetime", "yesterday")
            assert err.startswith("error: --to-datetime: 'yesterday' is not an ISO date-time")
            err = await fails(*reset, "--all-topics", "--to-earliest", "--execute")
            assert err.startswith("error: ") and "member" in err  # GroupNotEmpty
            err = await fails(*group, "delete", "busy")
            assert err.startswith("error: ") and "member" in err
            await member.close()

    endpoint = ""
    run(body)


def test_reset_of_a_progress_group_warns(capsys: pytest.CaptureFixture[str]) -> None:
    """A Spark progress group's offsets only mirror a query's checkpoint: a reset is
    allowed (the query rewrites them) but warned about; a group of members' is not."""

    async def reset(group: str) -> str:
        capsys.readouterr()
        argv = ["--endpoint", endpoint, "consumer-group", "reset", group, "--all-topics"]
        code = await asyncio.to_thread(main, [*argv, "--to-earliest", "--execute"])
        captured = capsys.readouterr()
        assert code == 0, captured.err
        return captured.err

    async def body() -> None:
        nonlocal endpoint
        async with running_sc(partitions=2) as (app, _):
            endpoint = f"127.0.0.1:{app.public_port}"
            client = await FluvioAsync.connect(endpoint)
            try:
                await client.admin().commit_progress("query-progress", {(TOPIC, 0): 0})
            finally:
                await client.close()
            member = RawMember(app.public_port, "members", [TOPIC])
            await member.join()
            await member.leave()

            err = await reset("query-progress")
            assert err.startswith("warning: 'query-progress' is a Spark progress group")
            assert await reset("members") == ""

    endpoint = ""
    run(body)
