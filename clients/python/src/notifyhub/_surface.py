"""How one definition of an operation serves both clients.

A resource (``nh.jobs``) is written once, ``Jobs(Resource[TransportT])``, with its operations as functions that
build a call from the caller's arguments:

    @operation("GET", "/api/v1/notifications/jobs/{job_id}")
    def get(route: Route, job_id: str) -> Call[Job]: ...

``operation`` makes the function a descriptor: on the sync client's resource ``nh.jobs.get(job_id)`` returns the
``Job``, on the async one's it returns a coroutine of it, both typed so (the ``__get__`` overloads). The route is
declared once, beside the arguments, for the call and for the OpenAPI comparison in NotifyHub's tests.
"""

from __future__ import annotations

import inspect
from collections.abc import AsyncIterator, Callable, Coroutine, Iterator
from typing import Any, Concatenate, Generic, ParamSpec, TypeVar, overload

from ._calls import Call, Paging, Route
from ._decode import D
from ._flows import Flow
from ._retry import RetryPolicy
from ._transports import AsyncTransport, SyncTransport

P = ParamSpec("P")
T = TypeVar("T")
TransportT = TypeVar("TransportT", bound="SyncTransport | AsyncTransport")


class Resource(Generic[TransportT]):
    def __init__(self, transport: TransportT) -> None:
        self._transport: TransportT = transport


class _Definition:
    """What the three kinds of operation share: how their bound form presents itself. ``help(nh.jobs.get)`` shows
    the defining function's name, docstring and parameters, its first one (the route, or the retry policy) left
    out."""

    def __init__(self, build: Callable[..., Any]) -> None:
        signature = inspect.signature(build)
        self._names = build.__name__, build.__qualname__
        self._doc = build.__doc__
        # The defining function returns what the call is built from, not what the bound method returns: not shown.
        parameters = list(signature.parameters.values())[1:]
        self._signature = signature.replace(parameters=parameters, return_annotation=inspect.Signature.empty)

    def _present(self, invoke: Callable[..., Any]) -> Callable[..., Any]:
        invoke.__name__, invoke.__qualname__ = self._names
        invoke.__doc__ = self._doc
        invoke.__signature__ = self._signature  # type: ignore[attr-defined]
        return invoke


class Operation(_Definition, Generic[P, T]):
    """One request of the API, answered with one result."""

    def __init__(self, route: Route, build: Callable[Concatenate[Route, P], Call[T]]) -> None:
        super().__init__(build)
        self.route = route
        self._build = build

    def call(self, *args: P.args, **kwargs: P.kwargs) -> Call[T]:
        return self._build(self.route, *args, **kwargs)

    @overload
    def __get__(self, resource: None, owner: type[Any]) -> Operation[P, T]: ...
    @overload
    def __get__(self, resource: Resource[SyncTransport], owner: type[Any]) -> Callable[P, T]: ...
    @overload
    def __get__(self, resource: Resource[AsyncTransport], owner: type[Any]) -> Callable[P, Coroutine[Any, Any, T]]: ...
    def __get__(self, resource: Resource[Any] | None, owner: type[Any]) -> Any:
        if resource is None:
            return self
        transport = resource._transport
        return self._present(lambda *args, **kwargs: transport.call(self.call(*args, **kwargs)))


class Listing(_Definition, Generic[P, D]):
    """A list the API answers page by page, iterated item by item; each page is fetched when it is reached."""

    def __init__(self, route: Route, build: Callable[Concatenate[Route, P], Paging[D]]) -> None:
        super().__init__(build)
        self.route = route
        self._build = build

    @overload
    def __get__(self, resource: None, owner: type[Any]) -> Listing[P, D]: ...
    @overload
    def __get__(self, resource: Resource[SyncTransport], owner: type[Any]) -> Callable[P, Iterator[D]]: ...
    @overload
    def __get__(self, resource: Resource[AsyncTransport], owner: type[Any]) -> Callable[P, AsyncIterator[D]]: ...
    def __get__(self, resource: Resource[Any] | None, owner: type[Any]) -> Any:
        if resource is None:
            return self
        transport = resource._transport
        return self._present(lambda *args, **kwargs: transport.iterate(self._build(self.route, *args, **kwargs)))


class Procedure(_Definition, Generic[P, T]):
    """Several calls and waits, as a flow (``_flows.py``), answered with one result."""

    def __init__(self, build: Callable[Concatenate[RetryPolicy, P], Flow[T]]) -> None:
        super().__init__(build)
        self._build = build

    @overload
    def __get__(self, resource: None, owner: type[Any]) -> Procedure[P, T]: ...
    @overload
    def __get__(self, resource: Resource[SyncTransport], owner: type[Any]) -> Callable[P, T]: ...
    @overload
    def __get__(self, resource: Resource[AsyncTransport], owner: type[Any]) -> Callable[P, Coroutine[Any, Any, T]]: ...
    def __get__(self, resource: Resource[Any] | None, owner: type[Any]) -> Any:
        if resource is None:
            return self
        transport = resource._transport
        return self._present(lambda *args, **kwargs: transport.run(self._build(transport.retry, *args, **kwargs)))


def operation(method: str, path: str) -> Callable[[Callable[Concatenate[Route, P], Call[T]]], Operation[P, T]]:
    return lambda build: Operation(Route(method, path), build)


def listing(method: str, path: str) -> Callable[[Callable[Concatenate[Route, P], Paging[D]]], Listing[P, D]]:
    return lambda build: Listing(Route(method, path), build)


def procedure(build: Callable[Concatenate[RetryPolicy, P], Flow[T]]) -> Procedure[P, T]:
    return Procedure(build)
