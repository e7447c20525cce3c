"""docs/deploy.md's commands that need no server and no remote database run as printed, in bash:
the SQLite online backup, and the move of an agent from an SQLite file to PostgreSQL (a scratch
schema) with the counts compared. The others name hosts of the reader's (``db.internal``) or a
running server; the multi-process claims they rest on are tested in ``test_multiprocess.py``."""

from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from nous import Nous, Settings
from nous.embeddings.base import EmbeddingProvider
from tests.conftest import pg_url, require_postgres
from tests.test_readme import fenced_blocks

DOC = Path(__file__).resolve().parents[1] / "docs" / "deploy.md"
SRC = Path(__file__).resolve().parents[1] / "src"
BLOCKS = fenced_blocks(DOC.read_text(encoding="utf-8"), "bash")


def block(marker: str) -> str:
    """The one bash block of the page containing ``marker``."""
    found = [code for _, code in BLOCKS if marker in code]
    assert len(found) == 1, f"{len(found)} bash blocks of deploy.md contain {marker!r}"
    return found[0]


def run_block(code: str, tmp_path: Path, **env: str) -> list[str]:
    """Run ``code`` with bash in ``tmp_path``, ``nous`` being this interpreter's; its stdout lines."""
    for tool in ("sqlite3", "jq"):
        if shutil.which(tool) is None:
            pytest.skip(f"docs/deploy.md uses {tool}, which is not installed")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    shim = bin_dir / "nous"
    shim.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m nous "$@"\n')
    shim.chmod(0o755)
    clean = {k: v for k, v in os.environ.items() if not k.startswith("NOUS_")}
    clean.update(
        PATH=f"{bin_dir}{os.pathsep}{clean.get('PATH', '')}",
        PYTHONPATH=os.pathsep.join([str(SRC), clean.get("PYTHONPATH", "")]),
        HF_HUB_OFFLINE="1",
        NOUS_HOME=str(tmp_path / "home"),
        **env,
    )
    done = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", code],
        cwd=tmp_path,
        env=clean,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, f"deploy.md block failed:\n{done.stderr[-3000:]}"
    return done.stdout.splitlines()


async def seed(url: str, agent_id: str, provider: EmbeddingProvider) -> None:
    """Two facts (one forgotten), a procedure and a linked decision."""
    async with Nous(
        Settings(database_url=url, events_worker="off"), agent_id=agent_id, embedding_provider=provider
    ) as nous:
        await nous.learn("The staging cluster runs in eu-west-1", subject="staging")
        gone = await nous.learn("The old VPN is at vpn.example.org", subject="vpn")
        await nous.forget(gone.memory.id)
        await nous.add_procedure("deploy", "Run the tests, tag, push")
        episode = await nous.start_episode("Region choice")
        await nous.record_decision("Keep staging in eu-west-1", confidence=0.8, episode_id=episode.id)


async def test_the_sqlite_backup_runs_as_printed(tmp_path: Path, provider: EmbeddingProvider) -> None:
    home = tmp_path / "user"
    await seed(f"sqlite:///{home / '.nous' / 'nous.db'}", "default", provider)
    run_block(block('".backup nous-backup.db"'), tmp_path, HOME=str(home))
    count = "SELECT count(*) FROM memories"
    with (
        sqlite3.connect(home / ".nous" / "nous.db") as original,
        sqlite3.connect(tmp_path / "nous-backup.db") as copy,
    ):
        assert copy.execute(count).fetchone() == original.execute(count).fetchone() == (5,)


async def test_the_move_to_postgres_runs_as_printed_and_the_counts_match(
    tmp_path: Path, provider: EmbeddingProvider, pg_schema: str
) -> None:
    require_postgres()
    source = tmp_path / "old.db"
    await seed(f"sqlite:///{source}", "support-bot", provider)
    lines = run_block(
        block('export -o "$AGENT.jsonl"'),
        tmp_path,
        NOUS_SQLITE_FILE=str(source),
        NOUS_POSTGRES_URL=pg_url(pg_schema),
        AGENT="support-bot",
    )
    agents, before, after = lines[0], lines[-2], lines[-1]
    assert agents == "support-bot"
    assert before == after == '[{"decision":1,"episode":1,"fact":1,"procedure":1},1,1,0]'
    exported = (tmp_path / "support-bot.jsonl").read_text().splitlines()
    assert all('"embedding"' in line for line in exported if line.startswith('{"memory"'))
