"""docs/databricks/fluvio_quickstart.py runs on local Spark against the session cluster.

The cells run as ``notebook_cells`` says: magics and ``dbutils`` cells are skipped, and
the test gives what the skipped cells define (the widgets' values: the session cluster's
SC, a fresh topic, a temporary Delta output); ``display`` keeps the rows it is shown.
"""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import DataFrame, SparkSession

from spark_stream.local.cluster import LocalCluster
from tests.docs.notebook_cells import DATABRICKS, MAGIC, PYTHON, read_cells

NOTEBOOK = Path(__file__).resolve().parents[2] / "docs" / "databricks" / "fluvio_quickstart.py"

_SAMPLE = """# Databricks notebook source
# MAGIC %md
# MAGIC # Title

# COMMAND ----------

# MAGIC %pip install x.whl

# COMMAND ----------

dbutils.widgets.text("a", "1")
a = dbutils.widgets.get("a")

# COMMAND ----------

print(spark.range(int(a)).count())
"""


def test_read_cells_sorts_magics_databricks_and_python() -> None:
    cells = read_cells(_SAMPLE)
    assert [(c.kind, c.magic) for c in cells] == [
        (MAGIC, "%md"),
        (MAGIC, "%pip"),
        (DATABRICKS, ""),
        (PYTHON, ""),
    ]
    assert cells[2].defines == {"a"}
    assert cells[3].source == "print(spark.range(int(a)).count())"


def test_read_cells_refuses_a_plain_python_file() -> None:
    with pytest.raises(ValueError, match="not a Databricks source notebook"):
        read_cells("import os\n")


def test_the_notebook_installs_the_wheel_without_the_spark_extra() -> None:
    cells = read_cells(NOTEBOOK.read_text())
    (pip,) = [c for c in cells if c.magic == "%pip"]
    assert ".whl" in pip.source and "[spark]" not in pip.source


@pytest.mark.integration
@pytest.mark.spark
def test_the_notebook_reads_and_writes_a_topic(
    spark: SparkSession,
    fluvio_cluster: LocalCluster,
    tmp_path: Path,
    request: pytest.FixtureRequest,
) -> None:
    cells = read_cells(NOTEBOOK.read_text())
    given = {
        "endpoint": fluvio_cluster.endpoint,
        "topic": f"notebook-{uuid.uuid4().hex[:8]}",
        "output": str(tmp_path / "delta"),
    }
    skipped: set[str] = set()
    for cell in cells:
        if cell.kind == DATABRICKS:
            skipped |= cell.defines
    assert skipped == set(given)  # the stand-ins are exactly what the skipped cells define

    shown: list[list[Any]] = []

    def display(df: DataFrame) -> None:
        shown.append([tuple(row) for row in df.collect()])

    namespace: dict[str, Any] = {"spark": spark, "display": display, **given}
    ran = [c for c in cells if c.kind == PYTHON]
    assert len(ran) >= 5
    for cell in ran:
        exec(compile(cell.source, f"{NOTEBOOK.name} cell", "exec"), namespace)

    records, counts = shown
    assert sorted(value for _, _, _, value in records) == sorted(f"event {i}" for i in range(12))
    assert {partition for partition, _, _, _ in records} <= {0, 1}
    assert counts == [("user-0", 4), ("user-1", 4), ("user-2", 4)]
    assert namespace["query"].exception() is None
    # The notebook registers the Python source; with the jar (``[jvm]``) the JVM connector
    # serves all the same, as the notebook says.
    df = (
        spark.read.format("fluvio")
        .option("topic", given["topic"])
        .option("endpoint", given["endpoint"])
    )
    table = df.load()._jdf.queryExecution().analyzed().table().getClass().getName()
    if request.node.callspec.params["spark"] == "jvm":
        assert table == "io.sparkstream.fluvio.datasource.FluvioTable"
    else:
        assert table.startswith("org.apache.spark.sql.execution.datasources.v2.python."), table
