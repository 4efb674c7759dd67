"""A new topic's tier: the cluster's default filled in, the URL and retentions checked.

A topic created without ``tier`` gets ``{tier_root}/{topic}`` when the SC has a tier
root (a local cluster's is ``{data_dir}/tier``, shared by its SPUs), and stays untiered
otherwise. Pure except for asking fsspec whether it knows the URL's protocol.
"""

from __future__ import annotations

import fsspec

from spark_stream.errors import InvalidConfigError
from spark_stream.models import Topic
from spark_stream.tier import topic_tier_url

__all__ = ["with_tier"]


def with_tier(topic: Topic, tier_root: str | None) -> Topic:
    """``topic`` with its tier resolved (see the module docstring).

    Raises:
        InvalidConfigError: a tier URL whose protocol fsspec does not know, a local
            retention or a table without a tier, or a local retention longer than the
            tier's retention.
    """
    spec = topic.spec
    if spec.tier is None and tier_root is not None:
        spec = spec.model_copy(update={"tier": topic_tier_url(tier_root, topic.name)})
    if spec.tier is None:
        if spec.table is not None:
            raise InvalidConfigError(
                f"topic {topic.name!r}: a table ({spec.table.value}) is kept over the tier "
                "(--tier URL); this cluster has no default tier"
            )
        if spec.local_retention_secs is not None:
            raise InvalidConfigError(
                f"topic {topic.name!r}: a local retention needs a tier (--tier URL); "
                "this cluster has no default tier"
            )
        return topic
    protocol, _ = fsspec.core.split_protocol(spec.tier)
    if protocol is not None and protocol not in fsspec.available_protocols():
        # Known protocols pass even when their package is missing here: the SPUs write.
        raise InvalidConfigError(
            f"topic {topic.name!r}: tier {spec.tier!r}: fsspec knows no protocol {protocol!r}"
        )
    local, total = spec.local_retention_secs, spec.retention_secs
    if local is not None and total is not None and local > total:
        raise InvalidConfigError(
            f"topic {topic.name!r}: local retention {local}s is longer than the tier's "
            f"retention {total}s (the tier keeps history at least as long as the SPUs)"
        )
    return topic.with_spec(spec) if spec is not topic.spec else topic
