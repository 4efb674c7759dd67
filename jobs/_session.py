"""The SparkSession a job runs in: spark-submit's, or a local one with Delta enabled.

Under ``spark-submit`` the session (master, jars, settings) comes from the submit
command, so a job only attaches to it; run as ``python -m jobs.<name>`` it starts a local
session (``local[2]``) with the Delta jars from ``datasource.session``.
"""

from __future__ import annotations

import os

from pyspark.sql import SparkSession

from datasource.session import local_session

__all__ = ["job_session", "under_spark_submit"]


def under_spark_submit() -> bool:
    """True when spark-submit launched this Python process (it hands over a JVM gateway)."""
    return "PYSPARK_GATEWAY_PORT" in os.environ


def job_session(app_name: str, *, delta: bool = True) -> SparkSession:
    """The job's session: the active/submitted one, else a new local one."""
    active = SparkSession.getActiveSession()
    if active is not None:
        return active
    if under_spark_submit():
        return SparkSession.builder.appName(app_name).getOrCreate()
    session = local_session(app_name, delta=delta)
    session.sparkContext.setLogLevel("ERROR")
    return session
