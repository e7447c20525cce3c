"""Labelled JSONL files of a source checkout (``tests/data``), read line by line."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from nous.errors import InvalidInputError


def checkout_data_file(name: str) -> Path | None:
    """``tests/data/NAME`` of a source checkout (from the working directory or this package's
    place in the tree), if there is one."""
    for base in (Path.cwd(), *Path(__file__).resolve().parents):
        candidate = base / "tests" / "data" / name
        if candidate.is_file():
            return candidate
    return None


def jsonl_rows(path: Path) -> Iterator[tuple[int, Any]]:
    """Each non-blank line of ``path`` with its 1-based number, parsed; a line that is not JSON
    is an InvalidInputError naming the file and line."""
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            yield number, json.loads(line)
        except json.JSONDecodeError as exc:
            raise InvalidInputError(f"{path}:{number}: not JSON ({exc.msg})") from None
