"""Helpers for the in-process CLI tests (the ``cli`` fixture is in conftest.py)."""

from __future__ import annotations

import json
from typing import Any

from typer.testing import CliRunner, Result

from nous.cli.app import app


def ok(cli: CliRunner, *args: str) -> Result:
    result = cli.invoke(app, list(args))
    assert result.exit_code == 0, (args, result.output, result.exception)
    return result


def data(cli: CliRunner, *args: str) -> Any:
    return json.loads(ok(cli, *args, "--json").stdout)


def one_line_error(result: Result, code: int, words: str) -> None:
    assert result.exit_code == code, (result.output, result.exception)
    assert result.stdout == ""
    assert result.stderr.strip().count("\n") == 0 and words in result.stderr
