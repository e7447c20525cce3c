"""Every `nous` command printed in the README and docs/*.md runs as printed from a clone.

Each command of a bash block is parsed as the CLI would parse it (root options, the command path,
its options and arguments), and a dataset folder it names must be where it says (``../shared``
beside the clone). The README's tour of the CLI (the two blocks after the quick start) then runs
for real, line by line in order, in a fresh store: every command exits 0, or with the code its
documentation gives (``check-action`` exits 3 on a block). A line may list several commands
(``nous facts · nous decisions``); ``ID`` and ``DECISION_ID`` are the ids the tour created before
(the fact, decision, censor or procedure the command takes), and ``[--option]`` is left out.
The ``--help`` examples are parsed by tests/test_cli_help.py; the banner's lines are run by
tests/test_serve_banner.py and tests/test_mcp_setup.py."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path
from typing import Any

import pytest
from typer._click import exceptions as click_errors
from typer.testing import CliRunner

from nous.cli.app import app
from tests.test_cli_help import parse

REPO = Path(__file__).resolve().parents[1]
DOCS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md")), REPO / "clients/typescript/README.md"]
# Commands that run until stopped, or for minutes over whole datasets: parsed, not run.
LONG_RUNNING = {("serve",), ("worker",), ("mcp",), ("chat",), ("bench",), ("demo",)}
# Exit codes a printed command may give besides 0, as its --help documents them.
DOCUMENTED_EXITS: dict[tuple[str, ...], set[int]] = {("check-action",): {3}}  # 3: the action is blocked
# Lines of a docs block that are a fragment of a script around them (their shell variables are
# set by lines before), by file and the text they start with.
FRAGMENTS = {
    ("deploy.md", 'nous --db "sqlite:///$NOUS_SQLITE_FILE"'): "the loop of the migration script above it",
    ("deploy.md", 'nous --db "$NOUS_POSTGRES_URL"'): "the loop of the migration script above it",
    ("deploy.md", 'nous --db "$url"'): "the loop of the migration script above it",
}
PLACEHOLDERS = {"ID", "DECISION_ID"}


def bash_blocks(path: Path) -> list[tuple[int, list[str]]]:
    """(first line number, lines) of every ```bash block of ``path``."""
    lines = path.read_text(encoding="utf-8").splitlines()
    blocks, i = [], 0
    while i < len(lines):
        if lines[i].strip() in ("```bash", "```sh"):
            end = next(j for j in range(i + 1, len(lines)) if lines[j].strip() == "```")
            blocks.append((i + 2, _joined(lines[i + 1 : end])))
            i = end
        i += 1
    return blocks


def _joined(lines: list[str]) -> list[str]:
    """``lines`` with each line continued by a trailing backslash joined to the next (the blank
    lines left in its place keep the numbering)."""
    out, held = [], ""
    for line in lines:
        if line.rstrip().endswith("\\"):
            held += line.rstrip()[:-1] + " "
            out.append("")
        else:
            out.append(held + line)
            held = ""
    return out


def commands_of(line: str) -> list[list[str]]:
    """The `nous` invocations of one printed line: split at ``·`` (several commands listed on one
    line), at shell operators and comments, with ``[--optional]`` tokens left out."""
    found = []
    for part in line.split(" · "):
        part = re.sub(r"\s\[[^\]'\"]*\]", "", part)  # [--optional] or [--this|--that]
        lexer = shlex.shlex(part, posix=True, punctuation_chars=True)
        lexer.whitespace_split, lexer.commenters = True, "#"
        tokens = list(lexer)
        for i, token in enumerate(tokens):
            before = tokens[i - 1] if i else ";"
            starts = set(before) <= set("();&|$") or re.fullmatch(r"\w+=\S*", before) is not None
            if starts and (token == "nous" or token.endswith("/nous")):
                call = []
                for t in tokens[i + 1 :]:
                    if set(t) <= set("();&|<>"):
                        break
                    call.append(t)
                found.append(call)
    return found


def printed() -> list[tuple[str, int, str]]:
    """(file, line number, line) of every printed line that runs `nous`."""
    found = []
    for path in DOCS:
        for start, lines in bash_blocks(path):
            for n, line in enumerate(lines):
                if commands_of(line):
                    found.append((path.name, start + n, line.strip()))
    return found


PRINTED = printed()


def _fragment(file: str, line: str) -> bool:
    return any(file == f and line.startswith(start) for f, start in FRAGMENTS)


def test_the_docs_print_commands() -> None:
    assert len(PRINTED) > 30
    assert {f for f, _, _ in PRINTED} >= {"README.md", "deploy.md", "integrations.md"}


@pytest.mark.parametrize("file,number,line", PRINTED, ids=[f"{f}:{n}" for f, n, _ in PRINTED])
def test_every_printed_command_parses_and_names_what_is_there(file: str, number: int, line: str) -> None:
    for call in commands_of(line):
        args = [("x" if t in PLACEHOLDERS else t) for t in call]
        if _fragment(file, line):
            args = [re.sub(r"\$\w+|\$\{\w+\}", "x", t) for t in args]
        try:
            parse(args)
        except click_errors.UsageError as exc:
            pytest.fail(f"{file}:{number} `nous {' '.join(call)}` does not parse: {exc.format_message()}")
        for token in call:
            if token.startswith("../shared/"):
                assert (REPO / token).exists(), (
                    f"{file}:{number} names {token}, which is not beside the clone"
                )


def test_a_wrong_line_fails_the_parse() -> None:
    (call,) = commands_of("nous recall 'x' --no-such-option   # a comment")
    with pytest.raises(click_errors.UsageError):
        parse(call)
    assert commands_of("nous facts · nous history ID · nous forget ID [--hard]") == [
        ["facts"],
        ["history", "ID"],
        ["forget", "ID"],
    ]


# -- the README's tour, run --------------------------------------------------------------------
CHAT = {
    "messages": [
        {"role": "user", "content": "We moved the staging cluster to eu-west-1 last week."},
        {"role": "assistant", "content": "Noted: staging runs in eu-west-1."},
    ]
}


def tour() -> list[tuple[int, str]]:
    """The README's CLI tour: the bash blocks between the quick start and the Python API."""
    readme = REPO / "README.md"
    text = readme.read_text(encoding="utf-8")
    api = text[: text.index("## Python API")].count("\n")
    blocks = [(start, lines) for start, lines in bash_blocks(readme)[1:] if start < api]
    return [(start + n, line) for start, lines in blocks for n, line in enumerate(lines) if commands_of(line)]


class Tour:
    """A fresh store and the ids the tour's commands create, for the placeholders that follow."""

    def __init__(self, home: Path) -> None:
        self.env = {"NOUS_HOME": str(home), "COLUMNS": "200", "NOUS_EVENTS_WORKER": "off"}
        self.runner = CliRunner()
        self.ids: dict[str, str] = {}

    def run(self, args: list[str]) -> Any:
        return self.runner.invoke(app, args, env=self.env)

    def newest(self, listing: list[str]) -> str:
        answer = self.run([*listing, "--json"])
        assert answer.exit_code == 0, answer.output
        items = json.loads(answer.output)
        items = items.get("items", items) if isinstance(items, dict) else items
        assert items, f"nothing listed by nous {' '.join(listing)}"
        return str(items[0]["id"])

    def placeholder(self, call: list[str]) -> str:
        """The id ``ID`` / ``DECISION_ID`` stands for in ``call``: the newest memory of the kind
        the command takes, the same one for the commands of one line that follow (a censor
        edited, then retired, then reported is one censor)."""
        listing = {"censors": "censors", "procedures": "procedures", "review": "decisions"}.get(
            call[0], "facts"
        )
        if listing not in self.ids:
            self.ids[listing] = self.newest([listing])
        return self.ids[listing]


def test_the_readme_tour_runs_as_printed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "chat.json").write_text(json.dumps(CHAT), encoding="utf-8")  # `nous ingest chat.json`
    walk = Tour(tmp_path / "home")
    ran = 0
    for number, line in tour():
        walk.ids.clear()  # a placeholder names what the line's own commands act on
        for call in commands_of(line):
            if tuple(call[:1]) in LONG_RUNNING:
                continue
            args = [walk.placeholder(call) if t in PLACEHOLDERS else t for t in call]
            answer = walk.run(args)
            allowed = {0} | DOCUMENTED_EXITS.get(tuple(call[:1]), set())
            assert answer.exit_code in allowed, (
                f"README.md:{number} `nous {' '.join(args)}`:\n{answer.output}"
            )
            ran += 1
    assert ran >= 35, ran
