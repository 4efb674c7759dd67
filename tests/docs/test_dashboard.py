"""The Grafana dashboard (``docs/grafana/fluvio-cluster.json``) asks only for metrics
the SC and SPU export: every panel's PromQL is checked against the families their
registries build (no servers: the apps are built with metrics on, not started)."""

from __future__ import annotations

import json
import re
from pathlib import Path

from prometheus_client.core import Metric

from sc.app import ScApp
from sc.kv import MemoryKvStore
from sc.settings import ScSettings
from spark_stream.config import load_settings
from spu.app import SpuApp
from spu.settings import SpuSettings

DASHBOARD = Path(__file__).resolve().parents[2] / "docs" / "grafana" / "fluvio-cluster.json"
_NAME = re.compile(r"\bfluvio_[a-z0-9_]+")
_SUFFIXES = {"histogram": ("_bucket", "_count", "_sum"), "counter": ("_total",), "gauge": ("",)}


def _series(families: list[Metric]) -> set[str]:
    """The series names a scrape of ``families`` can hold."""
    return {f.name + suffix for f in families for suffix in _SUFFIXES[f.type]}


def exported(tmp_path: Path) -> set[str]:
    """Every series name the SC and SPU serve."""
    spu = SpuApp(load_settings(SpuSettings, metrics_port=0, data_dir=str(tmp_path)))
    sc = ScApp(load_settings(ScSettings, metrics_port=0), kv=MemoryKvStore())
    names: set[str] = set()
    for metrics in (spu.metrics, sc.metrics):
        assert metrics is not None
        names |= _series([*metrics.registry.collect(), *metrics.snapshot()])
    return names


def promql(dashboard: dict[str, object]) -> list[tuple[str, str]]:
    """``(panel title, expression)`` of every target of every panel."""
    panels = dashboard["panels"]
    assert isinstance(panels, list)
    return [(p["title"], t["expr"]) for p in panels for t in p["targets"]]


def test_every_panel_queries_metrics_the_processes_export(tmp_path: Path) -> None:
    dashboard = json.loads(DASHBOARD.read_text())
    names = exported(tmp_path)
    queries = promql(dashboard)
    assert len(dashboard["panels"]) >= 10 and all(p["targets"] for p in dashboard["panels"])
    unknown = [
        (title, name)
        for title, expr in queries
        for name in _NAME.findall(expr)
        if name not in names
    ]
    assert not unknown, f"panels query metrics nobody exports: {unknown}"
    used = {name for _, expr in queries for name in _NAME.findall(expr)}
    for wanted in (
        "fluvio_spu_produced_records_total",
        "fluvio_spu_request_seconds_bucket",
        "fluvio_spu_partition_hw",
        "fluvio_spu_under_replicated_partitions",
        "fluvio_spu_connections",
        "fluvio_sc_reconcile_seconds_bucket",
        "fluvio_sc_kv_op_seconds_bucket",
    ):
        assert wanted in used, f"the dashboard does not show {wanted}"


def test_the_check_catches_a_misspelt_metric(tmp_path: Path) -> None:
    names = exported(tmp_path)
    assert "fluvio_spu_partition_leo" in names
    assert "fluvio_spu_produced_records_total" in names
    assert "fluvio_spu_produced_record_total" not in names  # what a typo would query
    assert "fluvio_sc_kv_op_seconds_count" in names
