"""Stopping background tasks without swallowing the caller's own cancellation."""

from __future__ import annotations

import asyncio
import logging

__all__ = ["cancel_and_wait"]

logger = logging.getLogger(__name__)


async def cancel_and_wait(task: asyncio.Task[object] | None) -> None:
    """Cancel ``task`` and wait until it finished; its own failure is logged, not raised.

    ``asyncio.wait`` (unlike awaiting the task under ``suppress(CancelledError)``) lets a
    cancellation of the *caller* propagate, so a stop that is itself cancelled ends.
    """
    if task is None:
        return
    task.cancel()
    await asyncio.wait({task})
    if not task.cancelled() and (exc := task.exception()) is not None:
        logger.debug("task %s ended with %r", task.get_name(), exc)
