"""One of several processes sharing a store (run by tests/test_multiprocess.py).

``python -m tests.multiprocess_child URL INDEX WORDS_JSON BARRIER_DIR COUNT`` writes its facts,
waits until every process has written, then looks for the others' facts by keyword and by
meaning and tries to store one shared fact at the same moment as the others. It prints one JSON
line: the ids it was acknowledged, what it found of the others, and its shared-fact outcome.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from pathlib import Path

from nous import Nous, Settings

SHARED = "The quarterly board review moved to the Lisbon office"


def _wait(barrier: Path, name: str, count: int) -> None:
    (barrier / f"{name}.{sys.argv[2]}").touch()
    deadline = time.monotonic() + 300
    while len(list(barrier.glob(f"{name}.*"))) < count:
        if any(barrier.glob("failed.*")):  # a sibling died: nobody else will arrive
            raise SystemExit(f"barrier {name}: another process failed")
        if time.monotonic() > deadline:
            raise SystemExit(f"barrier {name} timed out")
        time.sleep(0.02)


async def main(url: str, index: int, words: dict[str, list[str]], barrier: Path, count: int) -> None:
    settings = Settings(home=barrier / f"home{index}", database_url=url, events_worker="off")
    async with Nous(settings, agent_id="shared-agent") as nous:
        mine = words[str(index)]
        acknowledged = {}
        for word in mine:
            result = await nous.learn(f"The codename {word} belongs to the team of process {index}")
            acknowledged[word] = result.memory.id
        _wait(barrier, "written", count)
        found_keyword: dict[str, bool] = {}
        found_dense: dict[str, bool] = {}
        for other, their in words.items():
            if other == str(index):
                continue
            for word in their:
                hits = await nous.recall(word, limit=5, preset="keyword-only")
                found_keyword[word] = any(word in h.content for h in hits)
                hits = await nous.recall(f"codename {word}", limit=5, preset="dense-only")
                found_dense[word] = any(word in h.content for h in hits)
        _wait(barrier, "searched", count)
        shared = await nous.learn(SHARED)
        print(
            json.dumps(
                {
                    "acknowledged": acknowledged,
                    "found_keyword": found_keyword,
                    "found_dense": found_dense,
                    "shared": {"status": shared.status.value, "id": shared.memory.id},
                }
            ),
            flush=True,
        )


if __name__ == "__main__":
    url, index, words, barrier, count = sys.argv[1:6]
    try:
        asyncio.run(main(url, int(index), json.loads(words), Path(barrier), int(count)))
    except BaseException:
        (Path(barrier) / f"failed.{index}").touch()
        raise
