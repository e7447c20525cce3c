"""docs/integrations.md's Python examples run as written: each block is saved as a script and run
in its own process against a fresh store (NOUS_HOME in a temporary folder, no network)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.test_readme import python_blocks

DOC = Path(__file__).resolve().parents[1] / "docs" / "integrations.md"
SRC = Path(__file__).resolve().parents[1] / "src"
# The proxy's example talks to a running `nous serve` (tests/test_openai_proxy.py runs it); the
# others need nothing but the store they are given.
PROXY = "OPENAI_BASE_URL"
ALL_BLOCKS = python_blocks(DOC.read_text(encoding="utf-8"))
BLOCKS = [(line, code) for line, code in ALL_BLOCKS if PROXY not in code]
PROXY_BLOCKS = [(line, code) for line, code in ALL_BLOCKS if PROXY in code]


def test_the_page_has_an_example_per_framework() -> None:
    code = "".join(c for _, c in BLOCKS)
    assert "nous.integrations.langgraph" in code and "nous.integrations.openai_agents" in code
    assert len(PROXY_BLOCKS) == 1 and "from openai import OpenAI" in PROXY_BLOCKS[0][1]


@pytest.mark.parametrize("line,code", BLOCKS, ids=[f"integrations.md:{n}" for n, _ in BLOCKS])
def test_integrations_example_runs(line: int, code: str, tmp_path: Path) -> None:
    script = tmp_path / "example.py"
    script.write_text(code, encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("NOUS_", "OPENAI_"))}
    env.update(
        NOUS_HOME=str(tmp_path / "home"),
        PYTHONPATH=os.pathsep.join([str(SRC), env.get("PYTHONPATH", "")]),
        HF_HUB_OFFLINE="1",
        OPENAI_AGENTS_DISABLE_TRACING="1",  # belt and braces: the example disables it in RunConfig
    )
    done = subprocess.run(
        [sys.executable, str(script)], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, f"integrations.md:{line} failed:\n{done.stderr[-3000:]}"
    assert (tmp_path / "home" / "nous.db").exists()  # it used the store it was given
    print(done.stdout)
