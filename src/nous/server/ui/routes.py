"""The inspector's routes under ``/ui/``: server-rendered pages to see, search and curate an agent's
memory and to preview the context a message would get.

Every page calls the same ``Nous`` methods as the REST routes, through the same per-agent view
(``nous_for``) and the same key scope: each id, session and user a page or form reads goes
through ``nous.server.scope``'s ``scoped_value`` / ``scoped_memory`` with the marker its REST
twin declares, so a key sees and changes exactly what it does over REST. A request signs in with ``Authorization: Bearer KEY`` or
with the cookie ``POST /ui/login`` sets (the key and a nonce of the sign-in, HttpOnly and
SameSite=Strict). Each form that changes memory carries a CSRF token: an HMAC keyed by the
credential (the bearer key, or the cookie), so a token is valid only with the credential it was
made for, a new sign-in has a new one, and no server process keeps a secret of its own (every
``nous serve`` worker checks the same tokens).
"""

import functools
import hashlib
import hmac
import json
import secrets
from collections.abc import Awaitable, Callable
from datetime import UTC, date, datetime, timedelta
from enum import StrEnum
from pathlib import Path
from typing import Any, ParamSpec, TypeVar
from urllib.parse import parse_qs, urlencode, urlsplit

from fastapi import FastAPI, Query, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from fastapi.staticfiles import StaticFiles
from jinja2 import Environment, FileSystemLoader, select_autoescape
from pydantic import BaseModel, ValidationError

from nous.api import Nous
from nous.errors import InvalidInputError, NotFoundError, NousError
from nous.language.topics import conversation_title
from nous.models import (
    CensorAction,
    EdgeRelation,
    HistoryEntry,
    LifecycleState,
    Memory,
    MemoryKind,
    SessionState,
    Turn,
)
from nous.models.events import EventStatus
from nous.models.heart import CENSOR_ACTION_EFFECTS
from nous.server.keys import key_from_header, verify_key
from nous.server.request_ids import client_message
from nous.server.routes import UpdateMemory
from nous.server.scope import (
    Caller,
    MemoryRef,
    SessionRef,
    ThreadRef,
    UserRef,
    linked,
    scoped_memory,
    scoped_value,
)

HERE = Path(__file__).parent
COOKIE = "nous_ui"
PAGE = 50
CSRF_PURPOSE = b"nous inspector form"
EPISODE_FACTS = 5  # facts shown under each episode of the sessions page
TOPIC_TURNS = 200  # a session's topic is read from its latest this-many turns
MAX_FORM_BYTES = 200_000
P = ParamSpec("P")
SEEN, OWNED = MemoryRef("visible"), MemoryRef("owned")  # the scope of a page's memory ids
E = TypeVar("E", bound=StrEnum)
# The list's "state" filter: current memories (the default, as recall), only those a newer one
# replaced, or both.
STATES = ("current", "superseded", "all")
# What each recall signal means to a reader, for the "why it ranked" line of a search result.
FOUND_BY = {"dense_rank": "meaning", "keyword_rank": "keywords"}
BOOSTS = {
    "graph": "linked to another hit",
    "continues": "its speaker goes on from another hit",
    "recap": "a recap of recent sessions",
    "frame_boost": "suits the conversation's frame",
    "censor_boost": "a censor for this kind of message",
    "fires": "its censor's pattern matches the query",
    "kind_match": "the kind of memory the question asks for",
    # the strength of its session among the hits: no session is given to a search (one given
    # would narrow recall to it, and then no session stands out)
    "session": "its conversation holds other matches",
    "recency": "recent",
    "time_window": "inside the time the question names",
}
PENALTIES = {
    "superseded": "replaced by a newer memory",
    "outside_window": "outside the time the question names",
}

templates = Environment(
    loader=FileSystemLoader(HERE / "templates"),
    autoescape=select_autoescape(["html"]),
    trim_blocks=True,
    lstrip_blocks=True,
)


class SignedIn(BaseModel):
    """A signed-in request: who it speaks for, and the CSRF token of its credential."""

    caller: Caller
    csrf: str
    cookie: bool


class Denied(Exception):
    """A page that answers an HTML error (status and message)."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


# Pages load only this server's stylesheet (inline style attributes draw the score bars), post
# forms only here, and are never framed (a framed form could be clicked unknowingly) nor cached
# (they hold memory content).
HEADERS = {
    "Content-Security-Policy": "default-src 'none'; style-src 'self' 'unsafe-inline'; img-src 'self'; "
    "form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
    "X-Frame-Options": "DENY",
    "X-Content-Type-Options": "nosniff",
    # same-origin, not no-referrer: under no-referrer a browser sends "Origin: null" with a form
    # post, and the origin check below would refuse the inspector's own forms.
    "Referrer-Policy": "same-origin",
    "Cache-Control": "no-store",
}


def render(name: str, code: int = 200, **values: Any) -> HTMLResponse:
    """The template ``name`` filled with ``values``, as an HTML answer."""
    return HTMLResponse(templates.get_template(name).render(**values), status_code=code, headers=HEADERS)


def shown(
    handler: Callable[P, Awaitable[Response]],
) -> Callable[P, Awaitable[Response]]:
    """A page whose errors are HTML pages: a store error keeps its status (an unknown or another
    agent's id is 404, as on REST), a bad field is 422, a missing or wrong CSRF token 403."""

    @functools.wraps(handler)
    async def wrapped(*args: P.args, **kwargs: P.kwargs) -> Response:
        request = kwargs.get("request")
        try:
            return await handler(*args, **kwargs)
        except Denied as exc:
            status, message = exc.status, str(exc)
        except ValidationError as exc:
            first = exc.errors()[0] if exc.errors() else {"loc": (), "msg": "invalid"}
            where = ".".join(str(p) for p in first.get("loc", ())) or "form"
            status, message = 422, f"{where}: {first['msg']}"
        except NousError as exc:
            status, message = (exc.http_status if exc.http_status < 500 else 503), client_message(exc)
        me = getattr(request.state, "me", None) if isinstance(request, Request) else None
        return render("error.html", status, status=status, message=message, me=me)

    return wrapped


def mount(app: FastAPI, *, auth: bool, root: Callable[[], Nous], nous_for: Callable[[Caller], Nous]) -> None:
    """Add the inspector's pages and stylesheet to ``app``. ``root`` is the server's own ``Nous``
    (its store checks keys), ``nous_for`` the per-agent view every REST route uses."""
    app.mount("/ui/static", StaticFiles(directory=HERE / "static"), name="ui-static")
    # Without keys (--no-auth, loopback only) there is no credential: the forms' token is keyed by
    # a random value of this process, so another site cannot know it.
    keyless = secrets.token_hex(32)

    def token(credential: str) -> str:
        # keyed by the credential itself (secret to the signed-in browser: the cookie is HttpOnly),
        # so every server process (`nous serve --workers N`) makes and checks the same token
        return hmac.new(credential.encode(), CSRF_PURPOSE, hashlib.sha256).hexdigest()

    async def signed_in(request: Request) -> SignedIn | None:
        """The request's caller from its bearer header or sign-in cookie; None if it has neither
        or the key is not an active agent's key."""
        if not auth:
            return SignedIn(caller=Caller(agent_id=root().agent_id), csrf=token(keyless), cookie=False)
        header = request.headers.get("authorization")
        cookie = request.cookies.get(COOKIE)
        if header:
            key = await key_from_header(root().store, header)
            credential = header.partition(" ")[2].strip()
        elif cookie:
            key_text, _, nonce = cookie.rpartition(".")
            key = await verify_key(root().store, key_text) if nonce else None
            credential = cookie
        else:
            return None
        if key is None or key.agent_id is None or key.admin:
            return None
        return SignedIn(
            caller=Caller(agent_id=key.agent_id, user_id=key.user_id),
            csrf=token(credential),
            cookie=not header,
        )

    async def need(request: Request) -> SignedIn:
        me = await signed_in(request)
        if me is None:
            raise _SignInNeeded
        request.state.me = me  # an error page still shows the caller's navigation
        return me

    async def form(request: Request) -> dict[str, str]:
        """The url-encoded form of a POST (first value of each field). A browser's POST from
        another site's page (its Origin names another host) is refused before it is read."""
        origin = request.headers.get("origin")
        if origin and urlsplit(origin).netloc != request.headers.get("host"):
            raise Denied(403, "a form posted from another site is refused")
        body = await request.body()
        if len(body) > MAX_FORM_BYTES:
            raise Denied(413, f"the form is over {MAX_FORM_BYTES} bytes")
        try:
            fields = parse_qs(body.decode("utf-8"), keep_blank_values=True, max_num_fields=100)
        except (UnicodeDecodeError, ValueError):
            raise Denied(422, "the form is not url-encoded UTF-8") from None
        return {name: values[0] for name, values in fields.items()}

    async def checked(request: Request) -> tuple[SignedIn, dict[str, str]]:
        """The caller and form of a POST that changes memory; 403 without its CSRF token."""
        me = await need(request)
        fields = await form(request)
        if not hmac.compare_digest(fields.get("csrf", "").encode(), me.csrf.encode()):  # any text
            raise Denied(403, "this form has no valid CSRF token: reload the page and send it again")
        return me, fields

    async def changing(request: Request, memory_id: str) -> tuple[SignedIn, dict[str, str], Nous, Memory]:
        """A form that changes one memory: the caller, the form, the caller's view and the memory,
        which the caller must own (as ``owned`` on REST: 404 for another agent's, 403 for a
        user-bound key and the agent's shared memory)."""
        me, fields = await checked(request)
        nous = nous_for(me.caller)
        return me, fields, nous, await scoped_memory(nous, me.caller, OWNED, memory_id)

    def page(name: str, me: SignedIn, **values: Any) -> HTMLResponse:
        return render(name, me=me, auth=auth, **values)

    @app.exception_handler(_SignInNeeded)
    async def to_login(request: Request, exc: _SignInNeeded) -> Response:
        answer = RedirectResponse("/ui/login", status_code=303)
        if request.cookies.get(COOKIE):  # a stale or revoked key: drop it
            answer.delete_cookie(COOKIE, path="/ui")
        return answer

    @app.get("/", include_in_schema=False)
    async def home() -> RedirectResponse:
        return RedirectResponse("/ui/", status_code=303)

    @app.get("/ui", include_in_schema=False)
    async def ui_bare() -> RedirectResponse:
        return RedirectResponse("/ui/", status_code=303)

    @app.get("/ui/login", include_in_schema=False)
    async def login_form(request: Request) -> HTMLResponse:
        return render("login.html", me=None, auth=auth, error=None)

    @app.post("/ui/login", include_in_schema=False)
    @shown
    async def login(request: Request) -> Response:
        """Check the key as REST does; a valid agent's key becomes the sign-in cookie."""
        fields = await form(request)
        key_text = fields.get("key", "").strip()
        key = await verify_key(root().store, key_text) if key_text else None
        if key is None or key.agent_id is None or key.admin:
            why = "an admin key manages keys; sign in with an agent's key" if key else "not a valid API key"
            return render("login.html", 401, me=None, auth=auth, error=why)
        answer = RedirectResponse("/ui/", status_code=303)
        answer.set_cookie(  # the key and a nonce of this sign-in: each sign-in has its own CSRF token
            COOKIE,
            f"{key_text}.{secrets.token_hex(16)}",
            httponly=True,
            samesite="strict",
            path="/ui",
            secure=request.url.scheme == "https",
        )
        return answer

    @app.post("/ui/logout", include_in_schema=False)
    async def logout() -> Response:
        answer = RedirectResponse("/ui/login", status_code=303)
        answer.delete_cookie(COOKIE, path="/ui", httponly=True, samesite="strict")
        return answer

    @app.get("/ui/", include_in_schema=False)
    @shown
    async def index(request: Request) -> Response:
        me = await need(request)
        nous = nous_for(me.caller)
        recent = await nous.memories(None, limit=10, user_id=me.caller.user_id)
        return page("index.html", me, recent=recent)

    @app.get("/ui/memories", include_in_schema=False)
    @shown
    async def memories(
        request: Request,
        q: str | None = Query(default=None, max_length=10_000),
        kind: str = Query(default="", max_length=50),  # a form's "any" sends it empty
        user: str | None = Query(default=None, max_length=200),
        subject: str | None = Query(default=None, max_length=200),
        category: str | None = Query(default=None, max_length=100),
        lifecycle: str = Query(default="", max_length=20),
        state: str = Query(default="current", max_length=20),
        since: str = Query(default="", max_length=10),
        until: str = Query(default="", max_length=10),
        cursor: int = Query(default=0, ge=0, le=1_000_000),
        limit: int = Query(default=PAGE, ge=1, le=200),
        inactive: bool = False,
    ) -> Response:
        """Search (``Nous.recall``) or list (``Nous.memories``, paged and filtered) the caller's
        memories. Search ranks by meaning within the kind; the list's other filters narrow it."""
        me = await need(request)
        nous = nous_for(me.caller)
        acting = await scoped_value(nous, me.caller, UserRef(), user or None)
        chosen = _choice(MemoryKind, kind, "kind")
        stage = _choice(LifecycleState, lifecycle, "lifecycle")
        if state not in STATES:
            raise Denied(422, f"state must be one of {', '.join(STATES)} (got {state!r})")
        kinds = None if chosen is None else [chosen]
        filters = {
            "q": q or "",
            "kind": chosen.value if chosen else "",
            "user": user or "",
            "subject": subject or "",
            "category": category or "",
            "lifecycle": stage.value if stage else "",
            "state": state,
            "since": since,
            "until": until,
            "inactive": inactive,
        }
        if q and q.strip():
            # an inspector's look is not a use: the memories shown are not reinforced
            hits = await nous.recall(
                q,
                limit=limit,
                kinds=kinds,
                user_id=acting,
                include_inactive=inactive,
                include_superseded=state != "current",
                reinforce=False,
            )
            why = {h.id: _why(h.signals) for h in hits}
            return page("memories.html", me, hits=hits, why=why, items=None, filters=filters, next_url=None)
        found = await nous.memories(
            kinds,
            limit=limit + 1,
            offset=cursor,
            user_id=acting,
            include_inactive=inactive,
            include_superseded=state == "all",
            superseded_only=state == "superseded",
            subject=subject or None,
            category=category or None,
            lifecycle=[stage] if stage else None,
            since=_day(since, "since"),
            until=_day(until, "until", end=True),
        )
        next_url = None
        if len(found) > limit:
            query = {k: v for k, v in filters.items() if v} | {"cursor": cursor + limit, "limit": limit}
            next_url = "/ui/memories?" + urlencode(query)
        return page("memories.html", me, hits=None, items=found[:limit], filters=filters, next_url=next_url)

    @app.get("/ui/memories/{memory_id}", include_in_schema=False)
    @shown
    async def memory(request: Request, memory_id: str) -> Response:
        """A memory, its fields and provenance, its history, and the forms that change it."""
        me = await need(request)
        nous = nous_for(me.caller)
        found = await scoped_memory(nous, me.caller, SEEN, memory_id)
        history = [(entry, _changes(entry)) for entry in await nous.history(found.id)]
        fields = found.model_dump(mode="json", exclude={"content", "provenance", "metadata", "embedding"})
        changeable = me.caller.user_id is None or found.user_id is not None
        edges = [
            (edge, other, "out" if edge.source_id == found.id else "in")
            for edge, other in await linked(nous, me.caller, found)
        ]
        turns = []
        for turn_id in found.provenance.turn_ids[:50]:
            try:
                turns.append(await scoped_memory(nous, me.caller, SEEN, turn_id))
            except NousError:  # a turn forgotten for good, or another user's
                continue
        session = found.session_id or found.provenance.session_id
        return page(
            "memory.html",
            me,
            memory=found,
            fields=fields,
            provenance=found.provenance.model_dump(mode="json", exclude={"turn_ids"}),
            metadata=found.metadata,
            turns=turns,
            session=me.caller.own_session_id(session),
            history=history,
            edges=edges,
            relations=[r.value for r in EdgeRelation],
            changeable=changeable,
        )

    @app.post("/ui/memories/{memory_id}/link", include_in_schema=False)
    @shown
    async def link(request: Request, memory_id: str) -> Response:
        """Link this memory to another (``target``, by id or 6+ character prefix): ``Nous.link``."""
        me, fields, nous, found = await changing(request, memory_id)
        target = await scoped_memory(nous, me.caller, SEEN, fields.get("target", ""))
        relation = _choice(EdgeRelation, fields.get("relation", ""), "relation") or EdgeRelation.RELATES_TO
        await nous.link(found.id, target.id, relation.value)
        return RedirectResponse(f"/ui/memories/{found.id}#links", status_code=303)

    @app.post("/ui/memories/{memory_id}/supersede", include_in_schema=False)
    @shown
    async def supersede(request: Request, memory_id: str) -> Response:
        """Mark this memory as replaced by another (``by``): ``Nous.supersede``."""
        me, fields, nous, found = await changing(request, memory_id)
        newer = await scoped_memory(nous, me.caller, SEEN, fields.get("by", ""))
        await nous.supersede(found.id, by=newer.id)
        return RedirectResponse(f"/ui/memories/{found.id}", status_code=303)

    @app.post("/ui/memories/{memory_id}/edit", include_in_schema=False)
    @shown
    async def edit(request: Request, memory_id: str) -> Response:
        """Change a memory's content and tags: ``Nous.update`` (writes a history row). A field
        the form leaves out is kept; only what differs is written."""
        _, fields, nous, found = await changing(request, memory_id)
        content = fields["content"].replace("\r\n", "\n") if "content" in fields else None
        if content is not None and not content.strip():
            raise InvalidInputError("content cannot be empty", field="content")
        tags = None
        if "tags" in fields:
            tags = [t.strip() for t in fields["tags"].split(",") if t.strip()]
        wanted = UpdateMemory(content=content, tags=tags)
        changes: dict[str, Any] = {}
        if wanted.content is not None and wanted.content != found.content:
            changes["content"] = wanted.content
        if wanted.tags is not None and wanted.tags != found.tags:
            changes["tags"] = wanted.tags
        if changes:
            await nous.update(found.id, **changes)
        return RedirectResponse(f"/ui/memories/{found.id}", status_code=303)

    @app.post("/ui/memories/{memory_id}/forget", include_in_schema=False)
    @shown
    async def forget(request: Request, memory_id: str) -> Response:
        """Forget a memory (soft, restorable): ``Nous.forget``."""
        _, _, nous, found = await changing(request, memory_id)
        await nous.forget(found.id)
        return RedirectResponse(f"/ui/memories/{found.id}", status_code=303)

    @app.post("/ui/memories/{memory_id}/restore", include_in_schema=False)
    @shown
    async def restore(request: Request, memory_id: str) -> Response:
        """Bring a forgotten memory back: ``Nous.restore``."""
        _, _, nous, found = await changing(request, memory_id)
        await nous.restore(found.id)
        return RedirectResponse(f"/ui/memories/{found.id}", status_code=303)

    @app.get("/ui/context", include_in_schema=False)
    @shown
    async def context(
        request: Request,
        text: str | None = Query(default=None, max_length=100_000),
        user: str | None = Query(default=None, max_length=200),
        frame: str | None = Query(default=None, max_length=100),
        session: str | None = Query(default=None, max_length=200),
    ) -> Response:
        """What the agent would be shown for ``text`` (in ``session``, when given: its topic,
        working memory and last turns count): ``Nous.preview_turn``, which writes nothing."""
        me = await need(request)
        built = None
        if text and text.strip():
            nous = nous_for(me.caller)
            built = await nous.preview_turn(
                text,
                user_id=await scoped_value(nous, me.caller, UserRef(), user or None),
                frame=frame or None,
                session_id=await scoped_value(nous, me.caller, SessionRef(), session or None),
            )
        asked = {"text": text or "", "user": user or "", "frame": frame or "", "session": session or ""}
        return page("context.html", me, context=built, asked=asked, frames=_frames())

    @app.get("/ui/decisions", include_in_schema=False)
    @shown
    async def decisions(request: Request) -> Response:
        """Decisions, and for the agent's key its pending outcome proposals and calibration."""
        me = await need(request)
        nous = nous_for(me.caller)
        found = await nous.memories(MemoryKind.DECISION, limit=PAGE, user_id=me.caller.user_id)
        proposals, calibration = None, None
        if me.caller.user_id is None:  # agent-wide views, as on REST
            proposals = await nous.outcome_proposals(limit=PAGE)
            calibration = await nous.calibration()
        return page("decisions.html", me, decisions=found, proposals=proposals, calibration=calibration)

    @app.post("/ui/proposals/{decision_id}/{verdict}", include_in_schema=False)
    @shown
    async def settle(request: Request, decision_id: str, verdict: str) -> Response:
        """Accept or reject a proposed outcome: ``Nous.accept_proposal`` / ``reject_proposal``."""
        me, _ = await checked(request)
        if verdict not in ("accept", "reject"):
            raise Denied(404, f"no action {verdict!r}")
        me.caller.require_agent_key("settling an outcome proposal")
        nous = nous_for(me.caller)
        found = await scoped_memory(nous, me.caller, SEEN, decision_id)
        if verdict == "accept":
            await nous.accept_proposal(found.id)
        else:
            await nous.reject_proposal(found.id)
        return RedirectResponse("/ui/decisions", status_code=303)

    @app.get("/ui/sessions", include_in_schema=False)
    @shown
    async def sessions(request: Request) -> Response:
        """Sessions (a user-bound key: its user's alone) and recent episodes with their summaries."""
        me = await need(request)
        nous = nous_for(me.caller)
        mine, topics = [], {}
        for stored in await nous.sessions(limit=PAGE):
            own = me.caller.own_session(stored)
            if own is not None:
                mine.append(own)
                topics[own.session_id] = await _session_topic(nous, stored, me.caller.user_id)
        episodes = await nous.memories(MemoryKind.EPISODE, limit=PAGE, user_id=me.caller.user_id)
        own_session = {e.id: me.caller.own_session_id(e.session_id) for e in episodes}
        facts = {  # what each episode's session taught: the facts stored in it (extracted or said)
            e.id: await nous.memories(
                MemoryKind.FACT, session_id=e.session_id, user_id=me.caller.user_id, limit=EPISODE_FACTS
            )
            if e.session_id
            else []
            for e in episodes
        }
        return page(
            "sessions.html",
            me,
            sessions=mine,
            topics=topics,
            episodes=episodes,
            own_session=own_session,
            facts=facts,
        )

    @app.get("/ui/sessions/{session_id}", include_in_schema=False)
    @shown
    async def session(request: Request, session_id: str) -> Response:
        """One session: its state, live working memory, turns in order, and what it left behind
        (its episode, and the facts, decisions and procedures stored in it)."""
        me = await need(request)
        nous = nous_for(me.caller)
        key = await scoped_value(nous, me.caller, SessionRef(), session_id)
        stored = await nous.memories(None, limit=500, session_id=key, user_id=me.caller.user_id)
        try:
            # the key names the caller's own session (a user-bound key's is under its user)
            state = me.caller.own_session(await nous.session(key))
        except NotFoundError:
            # memories imported or ingested with a session id have no turn-loop state: their
            # turns and what was kept are still shown
            if not stored:
                raise
            state = None
        working = await nous.heart.working_memory.get(key)
        turns = sorted((m for m in stored if m.kind == MemoryKind.TURN), key=lambda m: m.occurred_at)
        kept = [m for m in stored if m.kind != MemoryKind.TURN]
        episode = None
        if state is not None and state.episode_id:
            try:
                episode = await scoped_memory(nous, me.caller, SEEN, state.episode_id)
            except NousError:
                episode = None
        if episode is None:  # an ingested session's episode is stored with its session id
            episode = next((m for m in kept if m.kind == MemoryKind.EPISODE), None)
        kept = [m for m in kept if episode is None or m.id != episode.id]
        return page(
            "session.html",
            me,
            session_id=session_id,
            state=state,
            working=working,
            turns=turns,
            kept=kept,
            episode=episode,
        )

    @app.get("/ui/threads", include_in_schema=False)
    @shown
    async def threads(request: Request, q: str = Query(default="", max_length=1000)) -> Response:
        """Topic threads (a user-bound key: its user's and the agent's shared ones), newest
        activity first, or the best matching a topic."""
        me = await need(request)
        nous = nous_for(me.caller)
        user = await scoped_value(nous, me.caller, UserRef(), None)
        found = await nous.threads(user_id=user, limit=PAGE, query=q.strip() or None)
        return page("threads.html", me, threads=found, q=q)

    @app.get("/ui/threads/{thread_id}", include_in_schema=False)
    @shown
    async def thread(request: Request, thread_id: str) -> Response:
        """One topic thread: its members in time order, each linked to its memory's page."""
        me = await need(request)
        nous = nous_for(me.caller)
        found = await nous.thread(await scoped_value(nous, me.caller, ThreadRef(), thread_id))
        return page("thread.html", me, thread=found, own_session=me.caller.own_session_id)

    @app.get("/ui/censors", include_in_schema=False)
    @shown
    async def censors(request: Request) -> Response:
        """The censors in force (for a user's key, those that bind its user): pattern, action,
        activations against the escalation threshold, false positives, and forms to edit, report
        a false positive, or retire."""
        me = await need(request)
        nous = nous_for(me.caller)
        found = await nous.censors(limit=200, user_id=await scoped_value(nous, me.caller, UserRef(), None))
        return page(
            "censors.html",
            me,
            censors=found,
            actions={a.value: CENSOR_ACTION_EFFECTS[a] for a in CensorAction},
            changeable=me.caller.user_id is None,
        )

    @app.post("/ui/censors/{censor_id}/{action}", include_in_schema=False)
    @shown
    async def censor_action(request: Request, censor_id: str, action: str) -> Response:
        """Edit (pattern, action, reason, threshold, a reset of the count), report a false positive, or retire a
        censor: ``Nous.edit_censor`` / ``report_false_positive`` / ``retire_censor``."""
        me, fields = await checked(request)
        if action not in ("edit", "false-positive", "retire"):
            raise Denied(404, f"no action {action!r}")
        nous = nous_for(me.caller)
        found = await scoped_memory(nous, me.caller, OWNED, censor_id)
        note = fields.get("note", "").strip() or None
        if action == "edit":
            threshold = fields.get("escalation_threshold", "").strip()
            if threshold and not threshold.isdigit():
                raise InvalidInputError(
                    "escalation threshold must be a whole number", field="escalation_threshold"
                )
            await nous.edit_censor(
                found.id,
                trigger_pattern=fields.get("trigger_pattern") or None,
                action=fields.get("action") or None,
                reason=fields.get("reason") or None,
                escalation_threshold=int(threshold) if threshold else None,
                reset_activations=bool(fields.get("reset_activations")),
            )
        elif action == "false-positive":
            await nous.report_false_positive(found.id, note)
        else:
            await nous.retire_censor(found.id, note)
        return RedirectResponse(f"/ui/censors#censor-{found.id}", status_code=303)

    @app.get("/ui/health", include_in_schema=False)
    @shown
    async def health(request: Request) -> Response:
        """Counts by kind and lifecycle, the event queue by status with its dead events (to
        retry), the embedding backlog and LLM usage (the agent's key: agent-wide, as REST's stats)."""
        me = await need(request)
        me.caller.require_agent_key("the store's counts")
        nous = nous_for(me.caller)
        stats = await nous.stats()
        events = {k.value: v for k, v in (await nous.event_counts()).items()}
        dead = await nous.events(status=EventStatus.DEAD, limit=PAGE)
        return page(
            "health.html",
            me,
            stats=stats.model_dump(mode="json"),
            events=events,
            dead=dead,
            usage=await nous.llm_usage(),
        )

    @app.post("/ui/events/{event_id}/retry", include_in_schema=False)
    @shown
    async def retry(request: Request, event_id: str) -> Response:
        """Run a dead event again: ``Nous.retry_event`` (pending, due now, attempts reset)."""
        me, _ = await checked(request)
        me.caller.require_agent_key("the event queue")
        await nous_for(me.caller).retry_event(event_id)
        return RedirectResponse("/ui/health#dead", status_code=303)

    async def error_page(request: Request, status: int, message: str) -> Response | None:
        """An HTML error for a page's request (a bad query, an unknown path under /ui/), with the
        navigation when the request is signed in; None for any other path, whose errors stay
        problem details."""
        path = request.url.path
        if not path.startswith("/ui/") or path.startswith("/ui/static/"):
            return None
        me = getattr(request.state, "me", None)
        if me is None:
            try:
                me = await signed_in(request)
            except NousError:  # the store is down: the error page still answers
                me = None
        return render("error.html", status, status=status, message=message, me=me)

    app.state.ui_error_page = error_page


class _SignInNeeded(Exception):
    """No credential, or not a valid agent's key: the page answers 303 to the sign-in form."""


def _changes(entry: HistoryEntry) -> list[tuple[str, str, str]]:
    """A history row's changed fields as (field, old, new) text. A row that creates or removes
    a memory stores the whole memory on one side: of that, only the content is shown."""
    old, new = entry.old_value or {}, entry.new_value or {}
    if not old or not new:
        names = ["content"] if "content" in (old or new) else sorted(old or new)[:5]
    else:
        names = sorted(n for n in old.keys() | new.keys() if old.get(n) != new.get(n))
    return [(n, _text(old[n]) if n in old else "", _text(new[n]) if n in new else "") for n in names]


def _text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def _frames() -> list[str]:
    from nous.server.schemas import FrameName

    return [f.value for f in FrameName]


def _choice(enum: type[E], value: str, field: str) -> E | None:
    """A form's choice of ``enum`` (empty: none chosen); 422 naming the choices otherwise."""
    if not value:
        return None
    try:
        return enum(value)
    except ValueError:
        allowed = ", ".join(member.value for member in enum)
        raise Denied(422, f"{field} must be one of {allowed} (got {value!r})") from None


def _day(value: str, field: str, *, end: bool = False) -> datetime | None:
    """A date input's YYYY-MM-DD as the start of that day in UTC (``end``: of the next day, so
    "until" includes the day it names)."""
    if not value:
        return None
    try:
        day = date.fromisoformat(value)
    except ValueError:
        raise Denied(422, f"{field} must be a date as YYYY-MM-DD (got {value!r})") from None
    start = datetime(day.year, day.month, day.day, tzinfo=UTC)
    return start + timedelta(days=1) if end else start


async def _session_topic(nous: Nous, state: SessionState, user_id: str | None) -> str:
    """What a session is about: the key phrases of its turns (the user's words first), as an
    ingested episode is titled; its latest user text when nothing in them is telling."""
    turns = await nous.memories(
        MemoryKind.TURN, session_id=state.session_id, user_id=user_id, limit=TOPIC_TURNS
    )
    said = [
        (_speaker(t), _spoken(t)) for t in sorted(turns, key=lambda t: t.occurred_at) if isinstance(t, Turn)
    ]
    people = {_speaker(t) for t in turns if isinstance(t, Turn) and t.role == "user"}
    return conversation_title(said, people=people) or state.topic or ""


def _speaker(turn: Turn) -> str:
    return turn.speaker or turn.role


def _spoken(turn: Turn) -> str:
    """A turn's words without the "speaker: " an ingested turn starts with."""
    prefix = f"{_speaker(turn)}: "
    return turn.content[len(prefix) :] if turn.content.startswith(prefix) else turn.content


def _why(signals: dict[str, float]) -> list[str]:
    """Why a recall hit ranked, in words: which searches found it (and its place in each), the
    boosts it got and what counted against it."""
    found = [f"{label} (#{int(signals[name])})" for name, label in FOUND_BY.items() if name in signals]
    reasons = [("found by " + " and ".join(found)) if found else "found through a link or a recap"]
    reasons += [label for name, label in BOOSTS.items() if signals.get(name, 0) > 0]
    reasons += [f"lowered: {label}" for name, label in PENALTIES.items() if signals.get(name, 0)]
    return reasons
