"""The README's Python code blocks run as shown: each block is saved as a script and run in its
own process against a fresh store (NOUS_HOME in a temporary folder, no network).

A block that cannot run on its own says so on its first line, ``# readme: not runnable: WHY``
(for instance a fragment that needs a running server); such a block is still compiled, and the
reason must be given. No block is left out silently."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"
SRC = Path(__file__).resolve().parents[1] / "src"
NOT_RUNNABLE = re.compile(r"#\s*readme:\s*not runnable:\s*(?P<why>.*)")


def python_blocks(text: str) -> list[tuple[int, str]]:
    """(line number, code) of every ```python block."""
    return fenced_blocks(text, "python")


def fenced_blocks(text: str, language: str) -> list[tuple[int, str]]:
    """(line number, code) of every block fenced as ```LANGUAGE."""
    blocks, lines = [], text.splitlines()
    i = 0
    while i < len(lines):
        if lines[i].strip() == f"```{language}":
            start = i + 1
            end = next(j for j in range(start, len(lines)) if lines[j].strip() == "```")
            blocks.append((start + 1, "\n".join(lines[start:end]) + "\n"))
            i = end
        i += 1
    return blocks


BLOCKS = python_blocks(README.read_text(encoding="utf-8"))


def test_the_readme_has_python_blocks() -> None:
    assert BLOCKS, "README.md has no ```python block"


@pytest.mark.parametrize("line,code", BLOCKS, ids=[f"README.md:{n}" for n, _ in BLOCKS])
def test_readme_python_block_runs(line: int, code: str, tmp_path: Path) -> None:
    compile(code, f"README.md:{line}", "exec")
    marked = NOT_RUNNABLE.match(code.splitlines()[0].strip())
    if marked:
        assert marked["why"].strip(), f"README.md:{line} is marked not runnable without a reason"
        return
    script = tmp_path / "block.py"
    script.write_text(code, encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith("NOUS_")}
    env.update(
        NOUS_HOME=str(tmp_path / "home"),
        PYTHONPATH=os.pathsep.join([str(SRC), env.get("PYTHONPATH", "")]),
        HF_HUB_OFFLINE="1",
    )
    done = subprocess.run(
        [sys.executable, str(script)], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, f"README.md:{line} failed:\n{done.stderr[-3000:]}"
    assert (tmp_path / "home" / "nous.db").exists()  # it used the store it was given, not ~/.nous


def test_a_marked_block_needs_a_reason() -> None:
    assert NOT_RUNNABLE.match("# readme: not runnable: needs a running `nous serve`")["why"]  # type: ignore[index]
    assert not NOT_RUNNABLE.match("from nous import Nous")


CONFLICT_MARKER = re.compile(r"^(<{7} |={7}$|>{7} )", re.MULTILINE)


def test_no_tracked_file_holds_a_merge_conflict_marker() -> None:
    """A merge left unresolved in a page or a module reads as garbage (README.md once kept both
    sides of one); every text file git tracks is checked."""
    root = README.parent
    listed = (
        subprocess.run(["git", "ls-files", "-z"], cwd=root, capture_output=True, check=True)
        .stdout.decode()
        .split("\0")
    )
    found = []
    for name in filter(None, listed):
        path = root / name
        if not path.is_file() or path.suffix not in {
            ".md",
            ".py",
            ".ts",
            ".json",
            ".toml",
            ".sh",
            ".html",
            ".css",
            ".yml",
            ".sql",
            ".txt",
        }:
            continue
        text = path.read_text(encoding="utf-8", errors="replace")
        found += [f"{name}:{text.count(chr(10), 0, m.start()) + 1}" for m in CONFLICT_MARKER.finditer(text)]
    assert not found, f"merge conflict markers: {found}"
