"""The blocking facades: each async method has a blocking twin with its signature and doc."""

from __future__ import annotations

import inspect

import pytest

from spark_stream.client import (
    AsyncConsumer,
    AsyncPartitionConsumer,
    AsyncTopicProducer,
    Consumer,
    Fluvio,
    FluvioAsync,
    PartitionConsumer,
    SyncAdmin,
    TopicProducer,
)
from spark_stream.client.admin import AdminClient

FACADES: list[tuple[type, type]] = [
    (Fluvio, FluvioAsync),
    (SyncAdmin, AdminClient),
    (TopicProducer, AsyncTopicProducer),
    (PartitionConsumer, AsyncPartitionConsumer),
    (Consumer, AsyncConsumer),
]

#: Async methods without a blocking twin (a step of ``stream``, never needed blocking).
NO_TWIN = {(PartitionConsumer, "resolve")}

#: Blocking methods that take a ``timeout`` of their own, as a blocking caller needs one.
OWN_PARAMETERS = {(TopicProducer, "flush"), (TopicProducer, "close")}


def async_methods(cls: type) -> list[str]:
    """The public coroutine and async generator methods of ``cls``."""
    return [
        name
        for name, member in inspect.getmembers(cls)
        if not name.startswith("_")
        and (inspect.iscoroutinefunction(member) or inspect.isasyncgenfunction(member))
    ]


@pytest.mark.parametrize(("facade", "core"), FACADES, ids=lambda c: c.__name__)
def test_every_async_method_has_a_blocking_twin(facade: type, core: type) -> None:
    names = async_methods(core)
    assert names, f"{core.__name__} has no async methods: the test reads the wrong class"
    for name in names:
        if (facade, name) in NO_TWIN:
            assert not hasattr(facade, name)
            continue
        twin = getattr(facade, name, None)
        assert twin is not None, f"{facade.__name__}.{name} is missing"
        assert not inspect.iscoroutinefunction(twin) and not inspect.isasyncgenfunction(twin)
        assert twin.__doc__, f"{facade.__name__}.{name} has no docstring"
        if (facade, name) in OWN_PARAMETERS:
            continue
        ours = inspect.signature(twin).parameters
        theirs = inspect.signature(getattr(core, name)).parameters
        assert ours == theirs, f"{facade.__name__}.{name} takes other arguments than the core"


@pytest.mark.parametrize(
    ("public", "thread_safe"), [("send", "append_record"), ("send_batch", "plan_batch")]
)
def test_the_producer_forwards_its_arguments_to_a_twin_that_takes_them(
    public: str, thread_safe: str
) -> None:
    # TopicProducer's send and send_batch pass their arguments on as they are: the twin
    # takes the same names, defaults and types, and every way of passing one (append_record
    # also takes send's keyword-only arguments by position: the hot path skips keywords).
    ours = inspect.signature(getattr(AsyncTopicProducer, thread_safe)).parameters
    theirs = inspect.signature(getattr(AsyncTopicProducer, public)).parameters
    assert list(ours) == list(theirs)
    keyword = (inspect.Parameter.KEYWORD_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    for name, param in theirs.items():
        twin = ours[name]
        assert (twin.default, twin.annotation) == (param.default, param.annotation), name
        assert twin.kind == param.kind or (
            param.kind is inspect.Parameter.KEYWORD_ONLY and twin.kind in keyword
        ), name


def test_the_spelled_out_send_takes_exactly_the_async_arguments() -> None:
    # TopicProducer.send spells its parameters out (a hot path: no *args forwarding);
    # its own signature, not the one functools.wraps points at, must equal the async one.
    ours = inspect.signature(TopicProducer.send, follow_wrapped=False).parameters
    theirs = inspect.signature(AsyncTopicProducer.send).parameters
    assert list(ours) == list(theirs)
    for name, param in ours.items():
        other = theirs[name]
        assert (param.kind, param.default, param.annotation) == (
            other.kind,
            other.default,
            other.annotation,
        ), name
