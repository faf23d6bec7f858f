"""The client library's types: each request method says the reply it returns (the sync
client's), and `aio.pyi` says the same, awaited, for the asyncio client."""

import inspect
import typing

from ctxkeep.clients import aio_types
from ctxkeep.clients.calls import Calls

#: A value for each parameter type the request methods take.
SAMPLES = {str: "x", int: 0, bool: False, list: [], int | None: None, bool | None: None,
           list[int] | None: None, typing.Any: None}


class Recorder(Calls):
    """Returns, for each request, the reply type the method asked for."""

    def request(self, request, expect):
        return expect


def test_each_request_method_is_typed_with_the_reply_it_asks_for():
    recorder = Recorder()
    for name, method in inspect.getmembers(Calls, inspect.isfunction):
        if name == "request":
            continue
        hints = typing.get_type_hints(method)
        params = [p for p in inspect.signature(method).parameters.values()
                  if p.name != "self" and p.default is p.empty and p.kind is p.POSITIONAL_OR_KEYWORD]
        asked = getattr(recorder, name)(*(SAMPLES[hints[p.name]] for p in params))
        assert hints["return"] is asked, name


def test_the_asyncio_clients_stub_is_written_from_the_code():
    """After a change to calls.py or aio.py: python -m ctxkeep.clients.aio_types clients/aio.pyi"""
    assert (aio_types.HERE / "aio.pyi").read_text(encoding="utf-8") == aio_types.render()


def test_the_stub_awaits_every_request_method_and_keeps_the_clients_own():
    stub = aio_types.render()
    for name, _ in inspect.getmembers(Calls, inspect.isfunction):
        if name != "request":
            assert f"    async def {name}(self" in stub, name
    assert "    def events(self) -> AsyncIterator[tuple[str, Event]]:" in stub  # an async generator
    assert "    async def subscribe(self, *prefixes: str) -> DaemonStatusEvent:" in stub
