"""The two dependencies every REST handler takes: ``Who``, the request's caller (from its API key),
and ``Agent``, the caller's agent's ``Nous``. ``create_app`` puts the functions that resolve them
on ``app.state`` (``caller_of``, ``nous_for``), so handlers are plain module-level functions that
the table of operations (``nous.server.operations``) can name."""

from typing import Annotated

from fastapi import Depends, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from nous.api import Nous
from nous.server.scope import Caller

bearer = HTTPBearer(
    auto_error=False,
    scheme_name="apiKey",
    description="An agent's API key (`nous keys create --agent NAME`): `Authorization: Bearer nous_...`",
)


async def _caller(
    request: Request, credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(bearer)]
) -> Caller:
    caller: Caller = await request.app.state.caller_of(request)
    return caller


Who = Annotated[Caller, Depends(_caller)]


async def _agent(request: Request, caller: Who) -> Nous:
    # async: the first request of an agent may start its event worker on the server's loop
    nous: Nous = request.app.state.nous_for(caller)
    return nous


Agent = Annotated[Nous, Depends(_agent)]


def root(request: Request) -> Nous:
    """The server's own engine (its store; its agent is the default one)."""
    nous: Nous = request.app.state.root()
    return nous
