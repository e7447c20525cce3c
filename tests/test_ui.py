"""The web inspector under /ui/ against a real `nous serve` app on loopback, both backends: sign-in
(cookie and bearer), listing and search, a memory's page and the forms that change it (each a
history row, each behind a CSRF token), the context preview (which writes nothing), the same key
scope as REST, and no page that loads anything from another host."""

from __future__ import annotations

import asyncio
import fnmatch
import re
import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from nous import Nous, Settings
from nous.server import create_key, revoke_key
from tests.test_server import LiveServer, live
from tests.test_summaries import _decide_then_report

CSRF = re.compile(r'name="csrf" value="([0-9a-f]+)"')
EXTERNAL = re.compile(r"""(?:src|href|action)\s*=\s*["']?\s*(?:https?:)?//""", re.IGNORECASE)


async def _keys(settings: Settings) -> dict[str, str]:
    async with Nous(settings) as nous:
        keys = {}
        for name, kw in {
            "a": {"agent_id": "agent-a"},
            "alice": {"agent_id": "agent-a", "user_id": "alice"},
            "b": {"agent_id": "agent-b"},
            "admin": {"agent_id": None, "admin": True},
        }.items():
            keys[name] = (await create_key(nous.store, **kw))[1]  # type: ignore[arg-type]
        return keys


@pytest.fixture
def served(database_url: str, settings: Settings) -> Iterator[tuple[LiveServer, dict[str, str]]]:
    with live(settings.model_copy(update={"database_url": database_url}), _keys) as pair:
        yield pair


def _client(server: LiveServer, key: str | None = None) -> httpx.Client:
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    return httpx.Client(base_url=server.url, headers=headers, timeout=60)


def _fact(client: httpx.Client, content: str, **extra: Any) -> str:
    answer = client.post("/v1/memories", json={"type": "fact", "content": content, **extra})
    assert answer.status_code == 201, answer.text
    return str(answer.json()["id"])


def _history(client: httpx.Client, memory_id: str) -> list[dict[str, Any]]:
    answer = client.get(f"/v1/memories/{memory_id}/history")
    assert answer.status_code == 200, answer.text
    return list(answer.json())


def _csrf(page: httpx.Response) -> str:
    assert page.status_code == 200, page.text
    found = CSRF.search(page.text)
    assert found, page.text
    return found.group(1)


def test_sign_in_sets_a_strict_http_only_cookie_and_no_credential_goes_to_the_form(
    served: tuple[LiveServer, dict[str, str]],
) -> None:
    server, keys = served
    with _client(server) as browser:
        assert browser.get("/").headers["location"] == "/ui/"
        bare = browser.get("/ui/")
        assert bare.status_code == 303 and bare.headers["location"] == "/ui/login"
        form = browser.get("/ui/login")
        assert form.status_code == 200 and 'name="key"' in form.text and 'action="/ui/login"' in form.text
        for wrong in ("not-a-key", keys["admin"]):
            refused = browser.post("/ui/login", data={"key": wrong})
            assert refused.status_code == 401 and "set-cookie" not in refused.headers
            assert browser.get("/ui/").status_code == 303
        signed = browser.post("/ui/login", data={"key": keys["a"]}, headers={"Origin": server.url})
        assert signed.status_code == 303 and signed.headers["location"] == "/ui/"
        cookie = signed.headers["set-cookie"].lower()
        assert "httponly" in cookie and "samesite=strict" in cookie
        home = browser.get("/ui/")
        assert home.status_code == 200 and "agent-a" in home.text
        out = browser.post("/ui/logout")
        assert out.status_code == 303 and out.headers["location"] == "/ui/login"
        assert browser.get("/ui/").status_code == 303
        browser.cookies.set("nous_ui", "nous_000000000000_" + "x" * 43, path="/ui")  # a forged cookie
        assert browser.get("/ui/memories").status_code == 303
        browser.cookies.clear()
        assert browser.post("/ui/login", data={"key": keys["alice"]}).status_code == 303
        assert browser.get("/ui/").status_code == 200
        asyncio.run(_revoke(server.settings, keys["alice"]))
        assert browser.get("/ui/").status_code == 303  # a revoked key's cookie no longer signs in


async def _revoke(settings: Settings, key: str) -> None:
    async with Nous(settings) as nous:
        assert await revoke_key(nous.store, key.split("_")[1])


def test_memories_are_listed_and_searched_with_scores_and_signals(
    served: tuple[LiveServer, dict[str, str]],
) -> None:
    server, keys = served
    with _client(server, keys["a"]) as a:
        _fact(a, "The staging cluster runs in eu-west-1")
        _fact(a, "Alice prefers morning meetings", subject="Alice")
        listed = a.get("/ui/memories")
        assert listed.status_code == 200
        assert "The staging cluster runs in eu-west-1" in listed.text
        assert "Alice prefers morning meetings" in listed.text
        kinds = a.get("/ui/memories", params={"kind": "decision"})
        assert kinds.status_code == 200 and "staging cluster" not in kinds.text
        found = a.get("/ui/memories", params={"q": "where does staging run?"})
        assert found.status_code == 200
        assert "The staging cluster runs in eu-west-1" in found.text
        scores = [float(s) for s in re.findall(r'class="score" title="score ([0-9.]+)"', found.text)]
        assert scores and all(0 <= s <= 1 for s in scores)
        assert '<dl class="signals">' in found.text and "width:" in found.text
        assert a.get("/ui/memories", params={"kind": "nonsense"}).status_code == 422
        first = a.get("/ui/memories", params={"limit": 1})
        following = re.search(r'<a href="([^"]+)" rel="next">', first.text)
        assert following, first.text
        second = a.get(following.group(1).replace("&amp;", "&"))
        assert second.status_code == 200 and 'rel="next"' not in second.text
        pages = first.text + second.text
        assert "staging cluster" in pages and "morning meetings" in pages
        assert ("staging cluster" in first.text) != ("staging cluster" in second.text)


def test_without_auth_the_pages_serve_the_default_agent(database_url: str, settings: Settings) -> None:
    run = settings.model_copy(update={"database_url": database_url})
    with live(run, _keys, auth=False) as (server, _), _client(server) as anyone:
        memory_id = _fact(anyone, "The backup runs nightly")
        home = anyone.get("/ui/")
        assert home.status_code == 200 and "The backup runs nightly" in home.text
        token = _csrf(anyone.get(f"/ui/memories/{memory_id}"))
        assert anyone.post(f"/ui/memories/{memory_id}/forget").status_code == 403
        assert anyone.post(f"/ui/memories/{memory_id}/forget", data={"csrf": token}).status_code == 303
        assert anyone.get(f"/v1/memories/{memory_id}").json()["active"] is False


def test_a_memory_page_shows_its_history_and_each_form_writes_one_row(
    served: tuple[LiveServer, dict[str, str]],
) -> None:
    server, keys = served
    with _client(server, keys["a"]) as a, _client(server) as browser:
        memory_id = _fact(a, "Deploys happen on Tuesdays", tags=["ops"])
        page = a.get(f"/ui/memories/{memory_id}")
        assert "Deploys happen on Tuesdays" in page.text and "create" in page.text
        token = _csrf(page)
        rows = len(_history(a, memory_id))

        edited = a.post(
            f"/ui/memories/{memory_id}/edit",
            data={"csrf": token, "content": "Deploys happen on Wednesdays", "tags": "ops, release"},
        )
        assert edited.status_code == 303, edited.text
        assert a.get(f"/v1/memories/{memory_id}").json()["content"] == "Deploys happen on Wednesdays"
        assert len(_history(a, memory_id)) == rows + 1
        tags_only = a.post(f"/ui/memories/{memory_id}/edit", data={"csrf": token, "tags": "ops"})
        assert tags_only.status_code == 303 and len(_history(a, memory_id)) == rows + 2
        kept = a.get(f"/v1/memories/{memory_id}").json()
        assert kept["content"] == "Deploys happen on Wednesdays" and kept["tags"] == ["ops"]
        unchanged = a.post(f"/ui/memories/{memory_id}/edit", data={"csrf": token, "content": kept["content"]})
        assert unchanged.status_code == 303 and len(_history(a, memory_id)) == rows + 2  # nothing differs
        empty = a.post(f"/ui/memories/{memory_id}/edit", data={"csrf": token, "content": "  "})
        assert empty.status_code == 422 and len(_history(a, memory_id)) == rows + 2
        rows += 1
        shown = a.get(f"/ui/memories/{memory_id}").text
        assert "Deploys happen on Tuesdays" in shown and "Deploys happen on Wednesdays" in shown  # old -> new

        assert a.post(f"/ui/memories/{memory_id}/forget", data={"csrf": token}).status_code == 303
        assert a.get(f"/v1/memories/{memory_id}").json()["active"] is False
        assert len(_history(a, memory_id)) == rows + 2
        assert a.post(f"/ui/memories/{memory_id}/restore", data={"csrf": token}).status_code == 303
        assert a.get(f"/v1/memories/{memory_id}").json()["active"] is True
        assert len(_history(a, memory_id)) == rows + 3

        # no token, or a token made for another credential: 403 and nothing written
        assert a.post(f"/ui/memories/{memory_id}/forget").status_code == 403
        for forged in ("0" * 64, "é" * 64, ""):
            assert a.post(f"/ui/memories/{memory_id}/forget", data={"csrf": forged}).status_code == 403
        assert browser.post("/ui/login", data={"key": keys["a"]}).status_code == 303
        cookie_token = _csrf(browser.get(f"/ui/memories/{memory_id}"))
        assert cookie_token != token
        assert a.post(f"/ui/memories/{memory_id}/forget", data={"csrf": cookie_token}).status_code == 403
        assert browser.post(f"/ui/memories/{memory_id}/forget", data={"csrf": token}).status_code == 403
        assert len(_history(a, memory_id)) == rows + 3
        assert a.get(f"/v1/memories/{memory_id}").json()["active"] is True
        # signed in by cookie, the page's own token works
        assert (
            browser.post(f"/ui/memories/{memory_id}/forget", data={"csrf": cookie_token}).status_code == 303
        )
        assert len(_history(a, memory_id)) == rows + 4


def test_the_context_preview_shows_its_sections_and_writes_nothing(
    served: tuple[LiveServer, dict[str, str]],
) -> None:
    server, keys = served
    with _client(server, keys["a"]) as a:
        _fact(a, "The ledger moved to PostgreSQL for ACID guarantees")
        before = a.get("/v1/stats").json(), a.get("/v1/sessions").json()
        page = a.get("/ui/context", params={"text": "Why did we move the ledger to PostgreSQL?"})
        assert page.status_code == 200, page.text
        sections = re.findall(r'id="section-([a-z_]+)"', page.text)
        assert sections, page.text
        assert "The ledger moved to PostgreSQL for ACID guarantees" in page.text
        assert re.search(r"Frame <b class=\"frame\">\w+</b> \(confidence [0-9.]+\)", page.text)
        assert re.search(r"\d+ / \d+ tokens", page.text) and '<pre class="context">' in page.text
        forced = a.get("/ui/context", params={"text": "Fix the failing test", "frame": "debug"})
        assert 'class="frame">debug<' in forced.text
        assert (
            a.post("/v1/sessions/s1/turns", json={"text": "Let us talk about the ledger"}).status_code == 200
        )
        before = a.get("/v1/stats").json(), a.get("/v1/sessions").json()
        in_session = a.get("/ui/context", params={"text": "Why did we move it?", "session": "s1"})
        assert in_session.status_code == 200 and 'id="section-' in in_session.text
        assert (a.get("/v1/stats").json(), a.get("/v1/sessions").json()) == before


def test_the_ui_keeps_the_key_scope_of_rest(served: tuple[LiveServer, dict[str, str]]) -> None:
    server, keys = served
    with (
        _client(server, keys["a"]) as a,
        _client(server, keys["b"]) as b,
        _client(server, keys["alice"]) as alice,
    ):
        secret = _fact(a, "The Zorblax vault code is 7419", user_id="bob")
        shared = _fact(a, "The office closes at six")
        own = _fact(alice, "Alice keeps her notes in Markdown")
        # another agent: 404 as for a missing id, and nothing in lists or searches
        assert b.get(f"/ui/memories/{secret}").status_code == 404
        missing = b.get("/ui/memories/00000000-0000-0000-0000-000000000000")
        assert missing.status_code == 404 and 'href="/ui/memories"' in missing.text  # with its navigation
        token = _csrf(b.get(f"/ui/memories/{_fact(b, 'Porto has good coffee')}"))
        assert b.post(f"/ui/memories/{secret}/forget", data={"csrf": token}).status_code == 404
        for path in ("/ui/memories", "/ui/memories?q=vault+code", "/ui/", "/ui/decisions", "/ui/sessions"):
            assert "Zorblax" not in b.get(path).text
        # a user-bound key: its user's memories and the shared ones, not another user's
        assert alice.get(f"/ui/memories/{secret}").status_code == 404
        assert alice.get(f"/ui/memories/{own}").status_code == 200
        assert "The office closes at six" in alice.get(f"/ui/memories/{shared}").text
        listed, searched = alice.get("/ui/memories").text, alice.get("/ui/memories?q=vault+code").text
        assert "Zorblax" not in listed + searched
        assert "Alice keeps her notes in Markdown" in listed and "The office closes at six" in listed
        assert alice.get("/ui/memories", params={"user": "bob"}).status_code == 403
        token = _csrf(alice.get(f"/ui/memories/{own}"))
        assert alice.post(f"/ui/memories/{shared}/forget", data={"csrf": token}).status_code == 403
        assert alice.get("/ui/health").status_code == 403
        assert a.get(f"/v1/memories/{shared}").json()["active"] is True
        # the agent's key sees its user's memory
        assert "The Zorblax vault code is 7419" in a.get(f"/ui/memories/{secret}").text


def test_every_page_and_the_stylesheet_stay_on_this_host(served: tuple[LiveServer, dict[str, str]]) -> None:
    server, keys = served
    with _client(server, keys["a"]) as a, _client(server) as anonymous:
        memory_id = _fact(a, "Check https://example.com before deploying")
        decision = a.post(
            "/v1/decisions",
            json={"content": "Use Postgres", "reasons": [{"type": "analysis", "text": "ACID"}]},
        )
        assert decision.status_code == 201
        a.post("/v1/sessions/s1/turns", json={"text": "Hello there"})
        pages = {
            "/ui/login": anonymous.get("/ui/login"),
            "/ui/": a.get("/ui/"),
            "/ui/memories": a.get("/ui/memories"),
            "/ui/memories?q=deploying": a.get("/ui/memories", params={"q": "deploying"}),
            "/ui/memories/ID": a.get(f"/ui/memories/{memory_id}"),
            "/ui/context": a.get("/ui/context", params={"text": "What should I check before deploying?"}),
            "/ui/decisions": a.get("/ui/decisions"),
            "/ui/sessions": a.get("/ui/sessions"),
            "/ui/sessions/s1": a.get("/ui/sessions/s1"),
            "/ui/censors": a.get("/ui/censors"),
            "/ui/health": a.get("/ui/health"),
        }
        for path, page in pages.items():
            assert page.status_code == 200, (path, page.text)
            assert page.headers["content-type"].startswith("text/html"), path
            assert not EXTERNAL.search(page.text), (path, EXTERNAL.search(page.text))
            assert '<link rel="stylesheet" href="/ui/static/ui.css">' in page.text, path
        assert "Use Postgres" in pages["/ui/decisions"].text and "ACID" in pages["/ui/decisions"].text
        assert "s1" in pages["/ui/sessions"].text
        assert "fact" in pages["/ui/health"].text
        css = anonymous.get("/ui/static/ui.css")
        assert css.status_code == 200 and "prefers-color-scheme: dark" in css.text
        assert not re.search(r"url\(|@import|https?://", css.text)


async def _proposal(settings: Settings) -> dict[str, str]:
    """A key for the settings' agent, and a decision of it with a proposed outcome awaiting review."""
    async with Nous(settings) as nous:
        decision_id = await _decide_then_report(
            nous, "The Kafka move for billing events worked great, replays saved us."
        )
        return {"agent": (await create_key(nous.store, agent_id=nous.agent_id))[1], "decision": decision_id}


def test_a_proposed_outcome_is_accepted_from_the_decisions_page(
    database_url: str, settings: Settings
) -> None:
    run = settings.model_copy(update={"database_url": database_url})
    with live(run, _proposal) as (server, made), _client(server, made["agent"]) as agent:
        decision_id = made["decision"]
        page = agent.get("/ui/decisions")
        assert "Move billing events from RabbitMQ to Kafka" in page.text and "Brier score" in page.text
        assert f'action="/ui/proposals/{decision_id}/accept"' in page.text
        assert agent.post(f"/ui/proposals/{decision_id}/accept").status_code == 403
        assert agent.get(f"/v1/decisions/{decision_id}").json()["outcome"] == "pending"
        settled = agent.post(f"/ui/proposals/{decision_id}/accept", data={"csrf": _csrf(page)})
        assert settled.status_code == 303 and settled.headers["location"] == "/ui/decisions"
        assert agent.get(f"/v1/decisions/{decision_id}").json()["outcome"] == "success"
        assert f'action="/ui/proposals/{decision_id}/accept"' not in agent.get("/ui/decisions").text


def test_pages_refuse_framing_and_forms_from_another_site(served: tuple[LiveServer, dict[str, str]]) -> None:
    server, keys = served
    with _client(server, keys["a"]) as a:
        memory_id = _fact(a, "The release train leaves on Thursdays")
        page = a.get(f"/ui/memories/{memory_id}")
        assert "frame-ancestors 'none'" in page.headers["content-security-policy"]
        assert page.headers["x-frame-options"] == "DENY" and page.headers["cache-control"] == "no-store"
        forged = a.post(
            f"/ui/memories/{memory_id}/forget",
            data={"csrf": _csrf(page)},
            headers={"Origin": "https://attacker.example"},
        )
        assert forged.status_code == 403
        assert a.get(f"/v1/memories/{memory_id}").json()["active"] is True
        with _client(server) as browser:
            refused = browser.post(
                "/ui/login", data={"key": keys["a"]}, headers={"Origin": "https://x.example"}
            )
            assert refused.status_code == 403 and "set-cookie" not in refused.headers


def test_the_templates_and_stylesheet_are_package_data() -> None:
    """Every file the pages need is matched by pyproject's package-data, so an install has them."""
    root = Path(__file__).resolve().parents[1]
    globs = tomllib.loads((root / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]["nous"]
    package = root / "src" / "nous"
    shipped = [p for d in ("templates", "static") for p in (package / "server" / "ui" / d).iterdir()]
    assert shipped
    for path in shipped:
        relative = path.relative_to(package).as_posix()
        assert any(fnmatch.fnmatch(relative, g) for g in globs), relative


def test_the_list_filters_and_search_explains_each_rank(served: tuple[LiveServer, dict[str, str]]) -> None:
    server, keys = served
    with _client(server, keys["a"]) as a:
        tea = _fact(a, "Ravi likes green tea", subject="Ravi", category="preference")
        lisbon = _fact(a, "Ravi works in Lisbon", subject="Ravi", category="person")
        old = _fact(a, "Mei started the migration", subject="Mei", occurred_at="2020-01-05T10:00:00Z")
        by_subject = a.get("/ui/memories", params={"subject": "Ravi"}).text
        assert "green tea" in by_subject and "Lisbon" in by_subject and "Mei started" not in by_subject
        by_category = a.get("/ui/memories", params={"category": "preference"}).text
        assert "green tea" in by_category and "Lisbon" not in by_category
        before_2021 = a.get("/ui/memories", params={"until": "2020-12-31"}).text
        assert "Mei started" in before_2021 and "green tea" not in before_2021
        since = a.get("/ui/memories", params={"since": "2020-01-06"}).text
        assert "Mei started" not in since and "green tea" in since
        assert (
            "Mei started" in a.get("/ui/memories", params={"since": "2020-01-05", "until": "2020-01-05"}).text
        )
        assert "green tea" in a.get("/ui/memories", params={"lifecycle": "active"}).text
        assert "green tea" not in a.get("/ui/memories", params={"lifecycle": "dormant"}).text
        assert a.post(f"/v1/memories/{tea}/supersede", json={"by": lisbon}).status_code == 200
        assert "green tea" not in a.get("/ui/memories").text  # current only, by default
        replaced = a.get("/ui/memories", params={"state": "superseded"}).text
        assert "green tea" in replaced and "Lisbon" not in replaced and "superseded" in replaced
        both = a.get("/ui/memories", params={"state": "all"}).text
        assert "green tea" in both and "Lisbon" in both and old
        searched = a.get("/ui/memories", params={"q": "where does Ravi work?"}).text
        assert re.search(r"Why: found by (meaning|keywords) \(#\d+\)", searched), searched
        # bad filters answer an HTML page that says what is wrong, not a JSON problem
        for params, says in (
            ({"since": "yesterday"}, "YYYY-MM-DD"),
            ({"lifecycle": "sleepy"}, "lifecycle must be one of"),
            ({"state": "gone"}, "state must be one of"),
            ({"limit": "0"}, "limit"),
            ({"cursor": "x"}, "cursor"),
        ):
            bad = a.get("/ui/memories", params=params)
            assert bad.status_code == 422 and bad.headers["content-type"].startswith("text/html"), params
            assert says in bad.text and 'href="/ui/memories"' in bad.text, (params, bad.text)
        unknown = a.get("/ui/no-such-page")
        assert unknown.status_code == 404 and unknown.headers["content-type"].startswith("text/html")
        assert a.get("/v1/no-such-route").headers["content-type"].startswith("application/problem+json")


def test_links_and_supersession_from_a_memory_page_each_write_a_history_row(
    served: tuple[LiveServer, dict[str, str]],
) -> None:
    server, keys = served
    with _client(server, keys["a"]) as a:
        old = _fact(a, "The standup is at 9:30")
        new = _fact(a, "Lunch is on Fridays")
        page = a.get(f"/ui/memories/{old}")
        token = _csrf(page)
        assert f'action="/ui/memories/{old}/link"' in page.text and "No links." in page.text
        rows = len(_history(a, old))
        linked = a.post(
            f"/ui/memories/{old}/link", data={"csrf": token, "target": new[:8], "relation": "supports"}
        )
        assert linked.status_code == 303, linked.text
        assert [
            (e["source_id"], e["target_id"], e["relation"]) for e in a.get(f"/v1/memories/{old}/links").json()
        ] == [(old, new, "supports")]
        assert len(_history(a, old)) == rows + 1 and _history(a, old)[-1]["action"] == "link"
        shown = a.get(f"/ui/memories/{old}").text
        assert (
            "supports" in shown and f'href="/ui/memories/{new}"' in shown and "Lunch is on Fridays" in shown
        )
        walked = a.get(f"/ui/memories/{new}").text  # the other end shows the link too: the graph walks
        assert "supports" in walked and f'href="/ui/memories/{old}"' in walked
        bad = a.post(f"/ui/memories/{old}/link", data={"csrf": token, "target": new, "relation": "loves"})
        assert bad.status_code == 422 and "relation must be one of" in bad.text
        assert a.post(f"/ui/memories/{old}/link", data={"csrf": token, "target": old}).status_code == 422
        assert len(_history(a, old)) == rows + 1

        assert a.post(f"/ui/memories/{old}/supersede", data={"by": new}).status_code == 403  # no token
        done = a.post(f"/ui/memories/{old}/supersede", data={"csrf": token, "by": new})
        assert done.status_code == 303, done.text
        stored = a.get(f"/v1/memories/{old}").json()
        assert stored["superseded_by"] == new and stored["valid_to"]
        assert _history(a, old)[-1]["action"] == "supersede" and len(_history(a, old)) == rows + 2
        shown = a.get(f"/ui/memories/{old}").text
        assert "superseded by" in shown and 'action="/ui/memories/' + old + '/supersede"' not in shown
        assert "— supersedes →" in a.get(f"/ui/memories/{new}").text


async def _sessions_and_censors(settings: Settings) -> dict[str, str]:
    """Keys, a live session with two turns and a working-memory note, a censor, resolved
    decisions, and a dead event (its handler failed on its only attempt)."""
    from datetime import timedelta

    from nous.events import EventWorker
    from nous.models.events import EventKind

    keys = await _keys(settings)
    async with Nous(settings.model_copy(update={"agent_id": "agent-a"})) as nous:
        await nous.pre_turn("s-live", "We should pin numpy to 2.1 because 2.2 broke the float16 tests")
        await nous.post_turn("s-live", "Noted: numpy stays on 2.1.")
        await nous.learn("CI pins numpy to 2.1 until float16 is fixed", session_id="s-live")
        await nous.heart.working_memory.focus("s-live", "Pin numpy to 2.1", kind="task")
        censor = await nous.add_censor(
            r"force[- ]push.*main", action="warn", reason="it rewrote shared history"
        )
        for confidence, outcome in ((0.9, "success"), (0.8, "failure"), (0.3, "failure")):
            decided = await nous.record_decision(f"Adopt build tool at {confidence}", confidence=confidence)
            await nous.review_decision(decided.id, outcome)

        async def broken(event: Any, ctx: Any) -> list[Any]:
            raise RuntimeError("the summariser is down")

        await nous.learn("The deploy window is Tuesday 14:00 UTC")
        worker = EventWorker(
            nous.pipeline_context(),
            handlers={kind: [broken] for kind in EventKind},
            max_attempts=1,
            retry_base=timedelta(milliseconds=1),
        )
        await worker.drain()
        (dead, *_) = await nous.events(status="dead")
        return keys | {"censor": censor.memory.id, "dead": dead.id}


def test_sessions_censors_calibration_and_health_pages(database_url: str, settings: Settings) -> None:
    run = settings.model_copy(update={"database_url": database_url})
    with live(run, _sessions_and_censors) as (server, made), _client(server, made["a"]) as a:
        listed = a.get("/ui/sessions").text
        assert 'href="/ui/sessions/s-live"' in listed and "live" in listed
        # its topic is named by the key phrases of its turns, not shown as the message itself
        assert '<td class="prose">Float16 tests</td>' in listed, listed
        session = a.get("/ui/sessions/s-live")
        assert session.status_code == 200, session.text
        text = session.text
        assert "<h1>Session <code>s-live</code></h1>" in text
        assert "We should pin numpy to 2.1" in text and "Noted: numpy stays on 2.1." in text  # the turns
        assert text.index("We should pin numpy") < text.index("Noted: numpy stays")  # in order
        assert "Pin numpy to 2.1" in text and "Working memory" in text  # live working memory
        assert "CI pins numpy to 2.1 until float16 is fixed" in text  # what it left behind
        assert a.get("/v1/sessions/s-live").json()["episode_id"], "the session opened an episode"
        assert "Facts from it" in listed and "CI pins numpy to 2.1" in listed  # under its episode
        assert a.get("/ui/sessions/no-such-session").status_code == 404
        with _client(server, made["b"]) as b:
            assert b.get("/ui/sessions/s-live").status_code == 404

        censors = a.get("/ui/censors")
        assert r"force[- ]push.*main" in censors.text and "it rewrote shared history" in censors.text
        token, censor = _csrf(censors), made["censor"]
        rows = len(_history(a, censor))
        edited = a.post(
            f"/ui/censors/{censor}/edit",
            data={
                "csrf": token,
                "action": "block",
                "trigger_pattern": r"force[- ]push",
                "escalation_threshold": "5",
            },
        )
        assert edited.status_code == 303, edited.text
        stored = a.get(f"/v1/memories/{censor}").json()
        assert stored["action"] == "block" and stored["escalation_threshold"] == 5
        assert len(_history(a, censor)) == rows + 1
        assert (
            a.post(
                f"/ui/censors/{censor}/edit", data={"csrf": token, "escalation_threshold": "x"}
            ).status_code
            == 422
        )
        reported = a.post(f"/ui/censors/{censor}/false-positive", data={"csrf": token, "note": "a docs page"})
        assert (
            reported.status_code == 303
            and a.get(f"/v1/memories/{censor}").json()["false_positive_count"] == 1
        )
        assert "1 false positive" in a.get("/ui/censors").text
        assert a.post(f"/ui/censors/{censor}/escalate", data={"csrf": token}).status_code == 404
        retired = a.post(f"/ui/censors/{censor}/retire", data={"csrf": token, "note": "obsolete"})
        assert retired.status_code == 303 and r"force[- ]push" not in a.get("/ui/censors").text

        decisions = a.get("/ui/decisions").text
        assert 'class="reliability"' in decisions
        assert re.search(r"0\.9–1\.0</th><td>1</td>", decisions) and re.search(
            r"0\.3–0\.4</th><td>1</td>", decisions
        )

        health = a.get("/ui/health")
        assert (
            health.status_code == 200 and "By lifecycle" in health.text and "Embedding backlog" in health.text
        )
        assert (
            "the summariser is down" in health.text
            and f'action="/ui/events/{made["dead"]}/retry"' in health.text
        )
        retried = a.post(f"/ui/events/{made['dead']}/retry", data={"csrf": _csrf(health)})
        assert retried.status_code == 303
        still_dead = a.get("/v1/events", params={"status": "dead"}).json()["items"]
        assert made["dead"] not in {e["id"] for e in still_dead}


def test_a_search_hits_session_signal_is_not_called_this_session() -> None:
    """A search is given no session: the session signal says its conversation holds other hits."""
    from nous.server.ui.routes import _why

    why = _why({"dense_rank": 1.0, "keyword_rank": 3.0, "session": 0.6, "rerank": 0.4})
    assert why == ["found by meaning (#1) and keywords (#3)", "its conversation holds other matches"]
    assert not any("this session" in reason for reason in why)
