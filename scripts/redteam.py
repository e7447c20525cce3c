"""Re-run the user-boundary attack list of SECURITY.md against a real `nous serve`.

Starts a server on a fresh home (SQLite by default; pass a PostgreSQL DSN to use that backend),
makes user-bound keys for alice and bob of one agent, tries each attack and prints one line per
attack: what was sent, what came back, and whether the boundary held. Exit status 1 if any did
not hold.

Usage: .venv/bin/python scripts/redteam.py [--store postgresql://127.0.0.1:5432/test]
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import httpx

NOUS = str(Path(sys.executable).with_name("nous"))


@dataclass
class Attack:
    name: str
    held: bool
    answer: str


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _key(env: dict[str, str], *args: str) -> str:
    out = subprocess.run([NOUS, "keys", "create", *args], env=env, check=True, capture_output=True, text=True)
    return out.stdout.strip().splitlines()[-1]


def _brief(response: httpx.Response) -> str:
    text = response.text.replace("\n", " ")
    return f"{response.status_code} {text[:110]}"


def run(base: str, keys: dict[str, str]) -> list[Attack]:
    alice = httpx.Client(base_url=base, headers={"Authorization": f"Bearer {keys['alice']}"}, timeout=60)
    bob = httpx.Client(base_url=base, headers={"Authorization": f"Bearer {keys['bob']}"}, timeout=60)
    agent = httpx.Client(base_url=base, headers={"Authorization": f"Bearer {keys['agent']}"}, timeout=60)
    anon = httpx.Client(base_url=base, timeout=60)
    found: list[Attack] = []

    def attack(name: str, check: Callable[[], tuple[bool, str]]) -> None:
        try:
            held, answer = check()
        except httpx.HTTPError as error:  # the server dropped the connection: the attack broke something
            held, answer = False, f"{type(error).__name__}: {error}"
        found.append(Attack(name, held, answer))

    bob_fact = bob.post("/v1/memories", json={"type": "fact", "content": "Bob's locker code is 5521"}).json()[
        "id"
    ]
    shared = agent.post("/v1/memories", json={"type": "fact", "content": "The office opens at 8am"}).json()[
        "id"
    ]

    def f1() -> tuple[bool, str]:
        r = alice.post(
            "/v1/memories", json={"type": "fact", "content": "alice replaces", "supersedes": bob_fact}
        )
        still = bob.get(f"/v1/memories/{bob_fact}").json()
        return r.status_code in (403, 404) and still.get("current", True) is not False, _brief(r)

    def f1_shared() -> tuple[bool, str]:
        r = alice.post(
            "/v1/memories", json={"type": "fact", "content": "alice replaces", "supersedes": shared}
        )
        return r.status_code in (403, 404), _brief(r)

    attack("F1 supersede another user's fact", f1)
    attack("F1 supersede the agent's shared fact", f1_shared)

    bob.post("/v1/sessions/s1/turns", json={"text": "my bank PIN is 4321"})
    ingest = {
        "id": "~3",
        "sessions": [
            {"id": "bob:s1", "messages": [{"role": "user", "content": "alice was here, hello there"}]}
        ],
    }

    def f2() -> tuple[bool, str]:
        r = alice.post("/v1/ingest?wait=true", json=ingest)
        mine = bob.get("/v1/sessions").text
        episodes = alice.get("/v1/episodes").text
        later = bob.post("/v1/sessions/s1/turns", json={"text": "and my card ends 9911"})
        seen = "4321" in episodes or "PIN" in episodes
        held = '"alice"' not in mine and not seen and later.status_code == 200
        return (
            held,
            f"{_brief(r)[:60]} · bob's next turn {later.status_code} · bob's PIN in alice's episodes: {seen}",
        )

    def f2_future() -> tuple[bool, str]:
        future = {
            "id": "~3",
            "sessions": [{"id": "bob:future", "messages": [{"role": "user", "content": "hi there"}]}],
        }
        alice.post("/v1/ingest?wait=true", json=future)
        r = bob.post("/v1/sessions/future/turns", json={"text": "starting my future session"})
        return r.status_code == 200 and '"alice"' not in bob.get("/v1/sessions").text, _brief(r)

    attack("F2 ingest onto another user's live session", f2)
    attack("F2 ingest onto another user's future session", f2_future)

    bob_decision = bob.post(
        "/v1/decisions", json={"content": "Bob picks the blue plan", "confidence": 0.7}
    ).json()
    alice.post("/v1/sessions/s2/turns", json={"text": "hello"})

    def f3() -> tuple[bool, str]:
        r = alice.post("/v1/sessions/s2/reply", json={"text": "ok", "decision_ids": [bob_decision["id"]]})
        return r.status_code in (403, 404), _brief(r)

    attack("F3 reply citing another user's decision", f3)

    censor = agent.post(
        "/v1/memories",
        json={
            "type": "censor",
            "content": "drop the database",
            "user_id": "bob",
            "action": "warn",
            "reason": "bob only",
        },
    )

    def f4() -> tuple[bool, str]:
        listed = alice.get("/v1/censors").text
        check = alice.post("/v1/check-action", json={"action": "drop the database now"}).json()
        return "bob only" not in listed and check.get(
            "decision"
        ) == "allow", f"{censor.status_code}; check {check.get('decision')}"

    attack("F4 another user's censor listed and firing", f4)

    def chunked(size: int) -> httpx.Response:
        def body():  # type: ignore[no-untyped-def]
            chunk = b" " * 65536
            for _ in range(size // len(chunk)):
                yield chunk

        return httpx.post(
            f"{base}/v1/recall",
            content=body(),
            headers={"Authorization": f"Bearer {keys['alice']}", "Content-Type": "application/json"},
            timeout=60,
        )

    def f5() -> tuple[bool, str]:
        r = chunked(6 * 1024 * 1024)
        return r.status_code == 413, _brief(r)

    def f5_anon() -> tuple[bool, str]:
        r = httpx.post(f"{base}/v1/recall", content=iter([b" " * 65536] * 96), timeout=60)
        return r.status_code == 401, _brief(r)

    attack("F5 6 MB chunked body with a key", f5)
    attack("F5 6 MB chunked body without a key", f5_anon)

    def f6() -> tuple[bool, str]:
        r = agent.post(
            "/v1/memories",
            json={"type": "censor", "content": "(a|a)" * 20 + "c", "action": "warn", "dedup": False},
        )
        return r.status_code == 422, _brief(r)

    attack("F6 overlapping alternation censor accepted", f6)

    def f7_identity() -> tuple[bool, str]:
        r = alice.get("/v1/identity")
        return r.status_code == 403, _brief(r)

    def f7_metrics() -> tuple[bool, str]:
        r = alice.get("/metrics")
        return r.status_code in (401, 403), _brief(r)

    def f7_openapi() -> tuple[bool, str]:
        # SECURITY.md: the API's description is public (the same for every server of a version);
        # it must name no agent, user or memory
        r = anon.get("/openapi.json")
        text = r.text
        return r.status_code == 401 or not any(w in text for w in ('"red"', "alice", "5521")), _brief(r)

    def f7_methods() -> tuple[bool, str]:
        for i in range(5):
            anon.request(f"ZZ{i}", "/health")
        text = agent.get("/metrics").text
        return (
            "ZZ3" not in text,
            f"{sum('ZZ' in line for line in text.splitlines())} metric lines name made-up methods",
        )

    def f7_deep() -> tuple[bool, str]:
        deep = "[" * 100_000 + "]" * 100_000
        r = alice.post("/v1/chat/completions", content=deep, headers={"Content-Type": "application/json"})
        shape = r.headers.get("content-type", "").startswith("application/json") and "error" in r.json()
        return r.status_code == 400 and shape, _brief(r)

    attack("F7 user-bound key reads the agent's identity", f7_identity)
    attack("F7 user-bound key reads /metrics", f7_metrics)
    attack("F7 /openapi.json without a key names nothing of a tenant", f7_openapi)
    attack("F7 unknown methods create metric series", f7_methods)
    attack("F7 deeply nested JSON to the proxy", f7_deep)

    def idem() -> tuple[bool, str]:
        headers = {"Idempotency-Key": "redteam-1"}
        body = {"type": "fact", "content": "Alice's retry test fact", "dedup": False}
        fresh = httpx.Client(base_url=base, headers={"Authorization": f"Bearer {keys['alice']}"}, timeout=60)
        first = fresh.post("/v1/memories", json=body, headers=headers)
        second = fresh.post("/v1/memories", json=body, headers=headers)
        same = first.status_code == second.status_code and first.json().get("id") == second.json().get("id")
        return same, f"{first.status_code} then {_brief(second)}"

    attack("Idempotency-Key: a retry is stored once", idem)

    def erase() -> tuple[bool, str]:
        r = agent.delete("/v1/users/bob")
        left = agent.get("/v1/memories", params={"user_id": "bob"}).json()
        items = left.get("items", left if isinstance(left, list) else [])
        return r.status_code == 200 and not items, _brief(r)

    attack("Erase a user", erase)
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--store", help="NOUS_STORE_URL (default: SQLite in a fresh home)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as home:
        # A model that is configured but never reached: the proxy parses its body before calling it.
        env = {
            **os.environ,
            "NOUS_HOME": home,
            "NOUS_LLM_PROVIDER": "openai",
            "NOUS_LLM_API_BASE": f"http://127.0.0.1:{_free_port()}/v1",
        }
        if args.store:
            env["NOUS_STORE_URL"] = args.store
        keys = {
            "agent": _key(env, "--agent", "red"),
            "alice": _key(env, "--agent", "red", "--user", "alice"),
            "bob": _key(env, "--agent", "red", "--user", "bob"),
        }
        port = _free_port()
        server = subprocess.Popen(
            [NOUS, "serve", "--port", str(port)], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
        )
        base = f"http://127.0.0.1:{port}"
        try:
            for _ in range(600):
                try:
                    if httpx.get(f"{base}/health", timeout=1).status_code == 200:
                        break
                except httpx.HTTPError:
                    time.sleep(0.2)
            found = run(base, keys)
        finally:
            server.terminate()
            server.wait(30)
    width = max(len(a.name) for a in found)
    for a in found:
        print(f"{'held  ' if a.held else 'BROKEN'} {a.name:<{width}}  {a.answer}")
    print(json.dumps({"held": sum(a.held for a in found), "attacks": len(found)}))
    return 0 if all(a.held for a in found) else 1


if __name__ == "__main__":
    sys.exit(main())
