"""How the blocking client runs the asyncio one: a loop thread, blocking iterators, facades.

Theory of operation. A ``LoopThread`` is one daemon thread running an event loop; ``run``
submits a coroutine to it and waits for the result in the calling thread. A facade
(``Facade[C]``) is the blocking face of one asyncio object of type ``C`` living on that
loop. Its methods are derived from the async class, never restated::

    class SyncAdmin(Facade[AdminClient]):
        create_topic = blocking(AdminClient.create_topic)
        watch_metadata = blocking_stream(AdminClient.watch_metadata)

``blocking`` runs the coroutine on the loop and returns its result, ``blocking_facade``
hands the result to a facade of its own, ``blocking_stream`` turns an async iterator into
a blocking ``SyncStream`` (``blocking_stream_via``: read as batches, each exploded in the
calling thread, so the thread is crossed once per batch rather than per record). The
type checker infers each method's parameters and result from the async method
(``ParamSpec``), and ``functools.wraps`` carries its docstring and ``__wrapped__`` (so
``help`` and ``inspect.signature`` show the async method's). A method that does more
than forward (it works in the calling thread, takes a timeout, or closes) is written out;
when its parameters are an async method's it borrows them with ``same_signature``.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import functools
import inspect
import threading
from collections import deque
from collections.abc import AsyncIterator, Callable, Coroutine, Iterator
from typing import Any, Concatenate, Generic, ParamSpec, TypeVar, cast

from spark_stream.errors import ClientClosedError, FluvioError, RequestTimeoutError

__all__ = [
    "LoopThread",
    "SyncStream",
    "Facade",
    "blocking",
    "blocking_facade",
    "blocking_stream",
    "blocking_stream_via",
    "same_signature",
]

C = TypeVar("C")  # the asyncio object a facade fronts
# A facade of a subclass fronts its base's methods too (``blocking(Base.method)``).
C_co = TypeVar("C_co", covariant=True)
S = TypeVar("S")  # a facade
P = ParamSpec("P")
R = TypeVar("R")
W = TypeVar("W")
T = TypeVar("T")
B = TypeVar("B")


class LoopThread:
    """An event loop on a daemon thread, and a way to run coroutines on it and wait."""

    def __init__(self, name: str = "fluvio-client") -> None:
        self.loop = asyncio.new_event_loop()
        self._stopping = False
        self._thread = threading.Thread(target=self._main, name=name, daemon=True)
        self._thread.start()

    def _main(self) -> None:
        asyncio.set_event_loop(self.loop)
        self.loop.run_forever()

    def run(self, coro: Coroutine[Any, Any, T], timeout: float | None = None) -> T:
        """Run ``coro`` on the loop and wait for its result (its exception, typed).

        Raises:
            RuntimeError: called from the loop thread itself (it would deadlock).
            ClientClosedError: the loop is stopped, or stopped during the call.
            RequestTimeoutError: not done within ``timeout`` (the coroutine is cancelled).
        """
        if threading.current_thread() is self._thread:
            coro.close()
            raise RuntimeError("blocking Fluvio call made on the client's own loop thread")
        if not self._thread.is_alive() or self.loop.is_closed():
            coro.close()
            raise ClientClosedError("the client is closed")
        future = asyncio.run_coroutine_threadsafe(coro, self.loop)
        try:
            return future.result(timeout)
        except concurrent.futures.TimeoutError:
            future.cancel()
            raise RequestTimeoutError(f"operation not done within {timeout}s") from None
        except concurrent.futures.CancelledError:
            if self._stopping:
                raise ClientClosedError("the client was closed during the call") from None
            raise

    @property
    def alive(self) -> bool:
        """True while the loop thread runs."""
        return self._thread.is_alive()

    def stop(self) -> None:
        """Stop the loop, join the thread and close the loop. Idempotent.

        Work still running on the loop is cancelled first, so a thread blocked in ``run``
        (a consumer iterating a stream, say) gets ``ClientClosedError`` instead of
        waiting forever on a loop that no longer runs.
        """
        self._stopping = True
        if self._thread.is_alive():
            with contextlib.suppress(Exception):
                asyncio.run_coroutine_threadsafe(_cancel_all(), self.loop).result(5)
            with contextlib.suppress(Exception):
                shutdown = self.loop.shutdown_asyncgens()
                asyncio.run_coroutine_threadsafe(shutdown, self.loop).result(5)
            self.loop.call_soon_threadsafe(self.loop.stop)
            self._thread.join()
        if not self.loop.is_closed():
            self.loop.close()


async def _cancel_all() -> None:
    """Cancel every other task on the running loop and wait for them to finish."""
    tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)


class SyncStream(Iterator[T], Generic[T]):
    """A blocking iterator over an async iterator living on a ``LoopThread``.

    Args:
        runner: the loop thread.
        source: the async iterator (an async generator, closed by ``close``).
        explode: turns each item into several (Arrow batch -> records), done here.
    """

    def __init__(
        self,
        runner: LoopThread,
        source: AsyncIterator[Any],
        explode: Callable[[Any], list[T]] | None = None,
    ) -> None:
        self._runner = runner
        self._source = source
        self._explode = explode
        self._buffer: deque[T] = deque()
        self._done = False

    def __next__(self) -> T:
        while not self._buffer:
            if self._done:
                raise StopIteration
            try:
                item = self._runner.run(_anext(self._source))
            except StopAsyncIteration:
                self._done = True
                raise StopIteration from None
            except BaseException:
                self.close()
                raise
            if self._explode is None:
                return cast(T, item)
            self._buffer.extend(self._explode(item))
        return self._buffer.popleft()

    def close(self) -> None:
        """Stop the stream (cancels it on the leader). Idempotent."""
        self._buffer.clear()
        if self._done:
            return
        self._done = True
        aclose = getattr(self._source, "aclose", None)
        if aclose is not None and self._runner.alive:
            with contextlib.suppress(FluvioError, RuntimeError):
                self._runner.run(aclose(), timeout=10.0)

    def __enter__(self) -> SyncStream[T]:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


async def _anext(source: AsyncIterator[T]) -> T:
    return await source.__anext__()


class Facade(Generic[C_co]):
    """The blocking face of ``core``, an asyncio object that lives on ``runner``'s loop.

    Args:
        core: the asyncio object (a producer, a consumer, the admin client...).
        runner: the loop thread ``core`` lives on.
    """

    #: Bound on each forwarded call; None, as the core bounds its own requests already.
    _call_timeout: float | None = None

    def __init__(self, core: C_co, runner: LoopThread) -> None:
        self._core = core
        self._runner = runner

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        # ``functools.wraps`` named each derived method after the async class: rename it.
        for name, member in vars(cls).items():
            if inspect.isfunction(member) and hasattr(member, "__wrapped__"):
                member.__qualname__ = f"{cls.__qualname__}.{name}"


def blocking(
    method: Callable[Concatenate[C, P], Coroutine[Any, Any, R]],
) -> Callable[Concatenate[Facade[C], P], R]:
    """A facade method that runs the coroutine method ``method`` of its core and waits.

    Args:
        method: the async method, taken from the class (``AdminClient.create_topic``).

    Returns:
        A function with the parameters, result, exceptions and docstring of ``method``.
    """

    @functools.wraps(method)
    def call(self: Facade[C], /, *args: P.args, **kwargs: P.kwargs) -> R:
        return self._runner.run(method(self._core, *args, **kwargs), self._call_timeout)

    return call


def blocking_facade(
    method: Callable[Concatenate[C, P], Coroutine[Any, Any, R]],
    facade: Callable[[R, LoopThread], W],
) -> Callable[Concatenate[Facade[C], P], W]:
    """Like ``blocking``, for a method whose result gets a facade of its own.

    Args:
        method: the async method (``FluvioAsync.topic_producer``).
        facade: builds the blocking face of the result on the same loop (``TopicProducer``).
    """

    @functools.wraps(method)
    def call(self: Facade[C], /, *args: P.args, **kwargs: P.kwargs) -> W:
        core = self._runner.run(method(self._core, *args, **kwargs), self._call_timeout)
        return facade(core, self._runner)

    return _returning(call, getattr(facade, "__name__", inspect.Signature.empty))


def blocking_stream(
    method: Callable[Concatenate[C, P], AsyncIterator[T]],
) -> Callable[Concatenate[Facade[C], P], SyncStream[T]]:
    """A facade method returning the async iterator method ``method`` as a ``SyncStream``.

    Each item crosses from the loop thread on its own; see ``blocking_stream_via``.
    """

    @functools.wraps(method)
    def call(self: Facade[C], /, *args: P.args, **kwargs: P.kwargs) -> SyncStream[T]:
        return SyncStream(self._runner, method(self._core, *args, **kwargs))

    return _returning(call, "SyncStream")


def blocking_stream_via(
    method: Callable[Concatenate[C, P], AsyncIterator[T]],
    batches: Callable[Concatenate[C, P], AsyncIterator[B]],
    explode: Callable[[B], list[T]],
) -> Callable[Concatenate[Facade[C], P], SyncStream[T]]:
    """Like ``blocking_stream(method)``, but reading ``batches`` and exploding them here.

    The loop thread is crossed once per batch instead of once per item (records of an
    Arrow batch), which is most of the cost of iterating from another thread.

    Args:
        method: the async iterator method whose items, parameters and docstring these are.
        batches: the async method with the same parameters yielding whole batches.
        explode: one batch to its items, in ``method``'s order.
    """

    @functools.wraps(method)
    def call(self: Facade[C], /, *args: P.args, **kwargs: P.kwargs) -> SyncStream[T]:
        return SyncStream(self._runner, batches(self._core, *args, **kwargs), explode)

    return _returning(call, "SyncStream")


def same_signature(
    method: Callable[Concatenate[Any, P], Coroutine[Any, Any, R]],
) -> Callable[[Callable[Concatenate[S, ...], R]], Callable[Concatenate[S, P], R]]:
    """Give a written-out facade method the parameters and docstring of ``method``.

    For a body that is not ``blocking``'s (it works in the calling thread) but takes the
    async method's arguments: it receives them as ``*args, **kwargs`` and must return
    what ``method`` returns.
    """

    def borrow(body: Callable[Concatenate[S, ...], R]) -> Callable[Concatenate[S, P], R]:
        return cast(Callable[Concatenate[S, P], R], functools.wraps(method)(body))

    return borrow


def _returning(call: Callable[P, R], annotation: object) -> Callable[P, R]:
    """``call`` (wrapping an async method) with a signature that says what it returns.

    ``inspect.signature`` would otherwise show the async method's return annotation
    (``AsyncIterator[...]``, the async core) in ``help``; the checker's types are not
    affected.
    """
    vars(call)["__signature__"] = inspect.signature(call).replace(return_annotation=annotation)
    return call
