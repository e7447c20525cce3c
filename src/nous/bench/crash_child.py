"""The writer that ``nous bench crash`` kills: it ingests a conversation, then learns, confirms and
forgets facts in a loop, printing each write as soon as the store acknowledged it:

    ACK <memory id> <content hash>      a new memory
    CONFIRM <memory id>                 a confirmation counted
    FORGOT <memory id>                  a soft delete
    OPEN                                the store is open (the ingest starts)
    INGESTED <turns>                    the conversation is stored

    python -m nous.bench.crash_child DATABASE_URL HOME SEED

With ``serve PORT`` after them it is instead a `nous serve` (no keys, agent ``crash-http``, short
Idempotency-Key leases) on 127.0.0.1:PORT, which the harness writes to over HTTP and kills.
"""

from __future__ import annotations

import asyncio
import json
import random
import sys
from pathlib import Path

from nous.api import Nous
from nous.config import Settings
from nous.models import WriteStatus
from nous.storage.codec import content_hash

AGENT = "crash"
HTTP_AGENT = "crash-http"
LEASE_SECONDS = 2.0


def conversation(seed: int) -> str:
    """The same small two-session conversation for every run of one harness."""
    sessions = []
    for s in range(2):
        messages = [
            {
                "id": f"s{s}m{i}",
                "role": "user" if i % 2 == 0 else "assistant",
                "content": f"Crash test {seed}, session {s}, message {i}: we discussed backups and retention.",
            }
            for i in range(20)
        ]
        sessions.append({"id": f"s{s}", "started_at": f"2026-03-0{s + 1}T10:00:00Z", "messages": messages})
    return json.dumps({"id": f"crash-{seed}", "sessions": sessions})


async def main(url: str, home: str, seed: int) -> None:
    settings = Settings(
        home=Path(home),
        database_url=url,
        events_worker="in-process",
        event_poll_seconds=0.05,
        event_lease_seconds=LEASE_SECONDS,  # short, so the harness can wait out a killed worker's leases
    )
    rng = random.Random(seed)
    async with Nous(settings, agent_id=AGENT) as nous:
        print("OPEN", flush=True)
        report = await nous.ingest(conversation(0))
        print(f"INGESTED {report.turns}", flush=True)
        mine: list[str] = []
        i = 0
        while True:
            i += 1
            roll = rng.random()
            if roll < 0.7 or not mine:
                text = f"Run {seed} fact {i}: the {rng.choice(['north', 'south', 'east', 'west'])} replica holds shard {rng.randint(1, 10_000)}"
                result = await nous.learn(text)
                if result.status != WriteStatus.DUPLICATE:
                    print(f"ACK {result.memory.id} {content_hash(result.memory)}", flush=True)
                    mine.append(result.memory.id)
            elif roll < 0.85:
                target = rng.choice(mine)
                await nous.heart.facts.confirm(target)
                print(f"CONFIRM {target}", flush=True)
            else:
                target = mine.pop(rng.randrange(len(mine)))
                await nous.forget(target)
                print(f"FORGOT {target}", flush=True)


def serve(url: str, home: str, port: int) -> None:
    """The server the harness kills: one agent, no keys, Idempotency-Key leases that run out fast."""
    import uvicorn

    from nous.server import create_app

    settings = Settings(
        home=Path(home),
        database_url=url,
        agent_id=HTTP_AGENT,
        events_worker="off",
        idempotency_lease_seconds=LEASE_SECONDS,
    )
    uvicorn.run(create_app(settings, auth=False), host="127.0.0.1", port=port, log_level="warning")


if __name__ == "__main__":
    if sys.argv[4:5] == ["serve"]:
        serve(sys.argv[1], sys.argv[2], int(sys.argv[5]))
    else:
        asyncio.run(main(sys.argv[1], sys.argv[2], int(sys.argv[3])))
