"""Rebuilding topics and partitions a lost store forgot, from what the SPUs report.

``plan`` is the pure part (which records the store forgot, the newest of each, what to
write); ``rebuilder`` writes a plan when an SPU connects (``sc.private_api``).
"""

from sc.rebuild.plan import EpochRaise, RebuildPlan, TopicGrowth, forgotten, newest, plan_rebuild
from sc.rebuild.rebuilder import Rebuilder

__all__ = [
    "EpochRaise",
    "RebuildPlan",
    "Rebuilder",
    "TopicGrowth",
    "forgotten",
    "newest",
    "plan_rebuild",
]
