"""The CLI's help and version: every command has a runnable example, paragraphs read as written
at any width, ``--version`` prints the package's version."""

from __future__ import annotations

import functools
import re
import shlex
from collections.abc import Iterator

import pytest
import typer

# typer (0.29+) carries its own copy of click: parsing errors are these, not click's.
from typer._click import exceptions as click_errors
from typer._click.core import Command
from typer.core import TyperGroup
from typer.testing import CliRunner

import nous
from nous.cli.app import app, reflow

ROOT = typer.main.get_command(app)
# Options of the root command that take a value (they may come before the command's path).
ROOT_VALUE_OPTIONS = {"--db", "--home", "--agent"}


def walk(command: Command, path: tuple[str, ...] = ("nous",)) -> Iterator[tuple[tuple[str, ...], Command]]:
    """Every command and group of the app with its path, the root included."""
    yield path, command
    if isinstance(command, TyperGroup):
        for name, sub in command.commands.items():
            yield from walk(sub, (*path, name))


COMMANDS = list(walk(ROOT))


def test_the_walk_sees_the_whole_tree() -> None:
    paths = {" ".join(p) for p, _ in COMMANDS}
    assert {"nous learn", "nous censors add", "nous bench retrieval", "nous keys revoke"} <= paths
    assert len(paths) > 50


def help_text(args: list[str], width: int) -> str:
    return _rendered_help(tuple(args), width)


@functools.cache
def _rendered_help(args: tuple[str, ...], width: int) -> str:
    """``--help`` at ``width`` columns, rendered once per run: the rendering depends on nothing
    else, and the tests below read the same page several times."""
    result = CliRunner().invoke(app, [*args, "--help"], env={"COLUMNS": str(width)}, terminal_width=width)
    assert result.exit_code == 0, (args, result.output)
    return result.output


def example_lines(command: Command) -> list[str]:
    return [line.strip() for line in (command.help or "").splitlines() if line.strip().startswith("Example:")]


def invocations(example: str) -> list[list[str]]:
    """The ``nous ...`` invocations of an example line, each up to the next shell operator
    (``KEY=$(nous keys create ... | tail -1)`` holds one, ``a && b`` two)."""
    lexer = shlex.shlex(example.removeprefix("Example:"), posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    tokens = list(lexer)
    found: list[list[str]] = []
    for i, token in enumerate(tokens):
        if token == "nous":
            rest = []
            for t in tokens[i + 1 :]:
                if set(t) <= set("();&|<>"):
                    break
                rest.append(t)
            found.append(rest)
    return found


def parse(args: list[str]) -> tuple[tuple[str, ...], Command]:
    """Parse an invocation as the CLI would, without running it: root options, then the command
    path through the groups, then the command's own options and arguments (types, choices,
    required arguments). A mistake raises the CLI's usage error."""
    rest = list(args)
    while rest and rest[0] in ROOT_VALUE_OPTIONS:
        rest = rest[2:]
    path: tuple[str, ...] = ("nous",)
    command: Command = ROOT
    while isinstance(command, TyperGroup) and rest and rest[0] in command.commands:
        path, command = (*path, rest[0]), command.commands[rest[0]]
        rest = rest[1:]
    if isinstance(command, TyperGroup):  # a group run without a subcommand: its own options
        command.make_context(path[-1], rest)
        return path, command
    command.make_context(path[-1], rest)
    return path, command


@pytest.mark.parametrize("path,command", COMMANDS, ids=[" ".join(p) for p, _ in COMMANDS])
def test_every_command_has_a_runnable_example(path: tuple[str, ...], command: Command) -> None:
    examples = example_lines(command)
    assert examples, f"`{' '.join(path)} --help` shows no example"
    ran_here = []
    for line in examples:
        calls = invocations(line)
        assert calls, f"{line!r} invokes no `nous` command"
        for call in calls:
            try:
                parsed, _ = parse(call)
            except click_errors.UsageError as exc:
                pytest.fail(f"{line!r} does not parse: {exc.format_message()}")
            ran_here.append(parsed[: len(path)] == path)  # a group: any of its commands
    assert any(ran_here), f"no example of `{' '.join(path)}` runs that command: {examples}"
    # and the example is what --help actually shows
    shown = " ".join(help_text(list(path[1:]), 200).split())
    assert " ".join(examples[0].split()) in shown


def test_parse_catches_a_wrong_example() -> None:
    with pytest.raises(click_errors.UsageError):
        parse(["recall", "x", "--no-such-option"])
    with pytest.raises(click_errors.UsageError):
        parse(["forget"])  # missing its id


def paragraphs_of(rendered: str) -> list[str]:
    """The description paragraphs of a rendered --help (between the usage line and the first
    panel), each joined into one line of words."""
    body = rendered.split("╭")[0]
    lines = [line.strip() for line in body.splitlines()]
    lines = lines[lines.index(next(x for x in lines if x.startswith("Usage:"))) + 1 :]
    out: list[str] = []
    current: list[str] = []
    for line in [*lines, ""]:
        if line:
            current.append(line)
        elif current:
            out.append(" ".join(" ".join(current).split()))
            current = []
    return out


@pytest.mark.parametrize("path,command", COMMANDS, ids=[" ".join(p) for p, _ in COMMANDS])
def test_paragraphs_read_as_written_at_any_width(path: tuple[str, ...], command: Command) -> None:
    args = list(path[1:])
    written = [" ".join(p.split()) for p in reflow(command.help or "").split("\n\n")]
    for width in (60, 200):
        rendered = help_text(args, width)
        # every paragraph as written, whole, in order: wrapped only by the renderer at spaces
        assert paragraphs_of(rendered) == written, width
        body = rendered.split("╭")[0]
        assert max(len(line.rstrip()) for line in body.splitlines()) <= width
    # at 200 columns each line of the help that fits is one line, not broken where the docstring's
    # source line ended
    wide_lines = [" ".join(line.split()) for line in help_text(args, 200).split("╭")[0].splitlines()]
    for line in reflow(command.help or "").splitlines():
        if line.strip() and len(line) < 190:
            assert " ".join(line.split()) in wide_lines, line


def test_reflow_joins_wrapped_lines_and_keeps_examples_and_marked_blocks() -> None:
    text = """First line
    continues here.

    A paragraph that was
    wrapped in the source.
    Example: nous recall "x"

    \b
    kept
      exactly
    """
    assert reflow(text) == (
        'First line continues here.\n\nA paragraph that was wrapped in the source.\nExample: nous recall "x"'
        "\n\nkept\n  exactly"
    )


@pytest.mark.parametrize("flag", ["--version", "-V"])
def test_version(flag: str) -> None:
    result = CliRunner().invoke(app, [flag])
    assert result.exit_code == 0, result.output
    assert result.stdout.strip() == f"nous {nous.__version__}"
    assert re.fullmatch(r"\d+\.\d+\.\d+.*", nous.__version__)


# Commands that list or report nothing a script would parse, each with why it has no --json.
NO_JSON = {
    "nous": "the root: its commands have it",
    "nous bench": "a group: its benchmarks write their figures with --json FILE",
    "nous export": "writes JSON Lines already (stdout or --out)",
    "nous worker": "runs until stopped; reports nothing",
    "nous serve": "runs a server",
    "nous mcp": "speaks MCP on stdio",
    "nous chat": "an interactive conversation",
    "nous keys create": "prints the key alone on its last line, for $(...)",
    "nous keys revoke": "says revoked or already revoked; the exit code tells scripts",
}


@pytest.mark.parametrize("path,command", COMMANDS, ids=[" ".join(p) for p, _ in COMMANDS])
def test_every_listing_has_json(path: tuple[str, ...], command: Command) -> None:
    name = " ".join(path)
    options = {o for p in command.params for o in getattr(p, "opts", [])}
    if name in NO_JSON:
        assert NO_JSON[name]
        return
    assert "--json" in options, f"`{name}` has no --json"
