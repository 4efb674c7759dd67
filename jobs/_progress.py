"""Progress of a running Spark job, printed from a background thread.

Python has no SparkListener, so ``JobProgress`` polls the status tracker of the job group
it sets on the calling thread and prints one line whenever the completed-task count of
its stages changes (and a last line when the job ends).
"""

from __future__ import annotations

import sys
import threading
import time
import uuid
from collections.abc import Callable
from typing import TextIO

from pyspark.sql import SparkSession

__all__ = ["JobProgress"]


class JobProgress:
    """``with JobProgress(spark, "backfill"):`` around the action whose tasks to report.

    Args:
        spark: the session running the action.
        label: printed at the start of each line.
        interval: seconds between polls.
        out: where lines go (stderr by default).
        extra: optional callable whose text is appended to each line (e.g. offsets).
    """

    def __init__(
        self,
        spark: SparkSession,
        label: str,
        *,
        interval: float = 1.0,
        out: TextIO | None = None,
        extra: Callable[[], str] | None = None,
    ) -> None:
        self.spark = spark
        self.label = label
        self.interval = interval
        self.out = out or sys.stderr
        self.extra = extra
        self.group = f"{label}-{uuid.uuid4().hex[:8]}"
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"progress-{label}", daemon=True)
        self._last = ""
        self._started = 0.0

    def __enter__(self) -> JobProgress:
        self.spark.sparkContext.setJobGroup(self.group, self.label)
        self._started = time.monotonic()
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._stop.set()
        self._thread.join(timeout=10)
        self._report(final=True)
        # pyspark annotates value as str, yet its docstring says None removes the property.
        self.spark.sparkContext.setLocalProperty("spark.jobGroup.id", None)  # type: ignore[arg-type]

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            self._report(final=False)

    def _tasks(self) -> tuple[int, int]:
        tracker = self.spark.sparkContext.statusTracker()
        done = total = 0
        for job_id in tracker.getJobIdsForGroup(self.group):
            job = tracker.getJobInfo(job_id)
            if job is None:
                continue
            for stage_id in job.stageIds:
                stage = tracker.getStageInfo(stage_id)
                if stage is not None:
                    done += stage.numCompletedTasks
                    total += stage.numTasks
        return done, total

    def _report(self, *, final: bool) -> None:
        try:
            done, total = self._tasks()
        except Exception:  # the context may be stopping
            return
        extra = f", {self.extra()}" if self.extra is not None else ""
        line = f"[{self.label}] tasks {done}/{total}{extra}"
        if line != self._last or final:
            elapsed = time.monotonic() - self._started
            print(f"{line} ({elapsed:.1f}s)", file=self.out, flush=True)
            self._last = line
