"""What a model sees of the MCP tools, through the SDK's client: every parameter described, every
closed value set declared as an enum equal to the store's own, every bound and default in the
schema, every tool annotated; server instructions that teach the turn loop; a bad value
answered by a tool error naming the allowed values, with nothing written; and every tool a row of
``mcp_tools.TOOLS``, registered through the dispatcher, its ids scoped."""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable
from enum import StrEnum
from typing import Any, get_args

import pytest
from mcp import Client

from nous import Nous, Settings
from nous.embeddings.base import EmbeddingProvider
from nous.models import MemoryKind
from nous.models.brain import DecisionCategory, ReasonType, Stakes
from nous.models.heart import CensorAction, FactCategory
from nous.server import mcp_schema
from nous.server.mcp import create_mcp_server
from nous.server.mcp_tools import TOOLS
from nous.server.scope import marked_parameters

# (tool, path to the property) -> the model enum whose values it must list
ENUMS: dict[tuple[str, str], type[StrEnum]] = {
    ("remember", "category"): FactCategory,
    ("recall", "types[]"): MemoryKind,
    ("recall_recent", "types[]"): MemoryKind,
    ("check_similar", "type"): MemoryKind,
    ("record_decision", "category"): DecisionCategory,
    ("record_decision", "stakes"): Stakes,
    ("record_decision", "reasons[].type"): ReasonType,
    ("create_censor", "action"): CensorAction,
}

# A parameter name that says it holds a memory's, a session's or a user's id (memory_id,
# decision_ids, session_id, user_id): it must declare its scope.
NAMES_AN_ID = re.compile(r"_ids?$")


def _properties(schema: dict[str, Any], defs: dict[str, Any], prefix: str = "") -> dict[str, dict[str, Any]]:
    """Every property of ``schema`` by its path (``reasons[].type``), nested objects and array
    items included, with ``$ref``s resolved."""
    found: dict[str, dict[str, Any]] = {}
    for name, prop in schema.get("properties", {}).items():
        path = f"{prefix}{name}"
        found[path] = prop
        for option in [prop, *prop.get("anyOf", [])]:
            items = option.get("items")
            if items is None:
                continue
            found[f"{path}[]"] = items
            target = defs[items["$ref"].rsplit("/", 1)[1]] if "$ref" in items else items
            found |= _properties(target, defs, f"{path}[].")
    return found


def _enum(prop: dict[str, Any]) -> list[str] | None:
    for option in [prop, *prop.get("anyOf", [])]:
        if "enum" in option:
            return list(option["enum"])
    return None


def test_the_literal_value_sets_are_the_models_enums() -> None:
    pairs = [
        (mcp_schema.FactCategoryName, FactCategory),
        (mcp_schema.MemoryKindName, MemoryKind),
        (mcp_schema.DecisionCategoryName, DecisionCategory),
        (mcp_schema.StakesName, Stakes),
        (mcp_schema.ReasonTypeName, ReasonType),
        (mcp_schema.CensorActionName, CensorAction),
    ]
    for literal, enum in pairs:
        assert list(get_args(literal)) == [e.value for e in enum], enum


async def test_every_parameter_is_described_bounded_and_every_tool_annotated(
    settings: Settings, provider: EmbeddingProvider
) -> None:
    async with Client(create_mcp_server(lambda: Nous(settings, embedding_provider=provider))) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        instructions = client.instructions or ""
    assert set(tools) >= {"context", "reply", "end_session"}
    seen_enums = set()
    for name, tool in tools.items():
        assert tool.description and len(tool.description) > 40 and tool.title, name
        # Descriptions name MCP tools only (never a Python method a model cannot call).
        for quoted in re.findall(r"`([a-z_]+)`", tool.description):
            assert quoted in tools, (name, quoted)
        assert not re.search(r"pre_turn|post_turn|learn\(|nous\.", tool.description), name
        schema = tool.input_schema
        required = set(schema.get("required", []))
        for path, prop in _properties(schema, schema.get("$defs", {})).items():
            if path.endswith("[]"):
                continue  # an array's items are described by the array
            assert prop.get("description"), (name, path)
            top = "." not in path
            if top and path not in required:
                assert "default" in prop, (name, path)  # the default is shown
            if (name, path) in ENUMS:
                assert _enum(prop) == [e.value for e in ENUMS[(name, path)]], (name, path)
                seen_enums.add((name, path))
            if path in ("limit",):
                assert prop["minimum"] == 1 and prop["maximum"] == 100, name
            if path in ("min_score", "confidence"):
                option = next(o for o in [prop, *prop.get("anyOf", [])] if "maximum" in o)
                assert option["minimum"] == 0 and option["maximum"] == 1, (name, path)
        for (tool_name, path), _enum_type in ENUMS.items():
            if tool_name == name and path.endswith("[]"):
                items = _properties(schema, schema.get("$defs", {}))[path]
                assert _enum(items) == [e.value for e in ENUMS[(name, path)]], (name, path)
                seen_enums.add((name, path))
        hints = tool.annotations
        assert hints is not None, name
        assert None not in (hints.read_only_hint, hints.destructive_hint, hints.idempotent_hint), name
        assert hints.open_world_hint is False, name
    assert seen_enums == set(ENUMS)
    assert tools["recall"].annotations and tools["recall"].annotations.read_only_hint
    assert tools["forget"].annotations and tools["forget"].annotations.destructive_hint
    assert tools["context"].annotations and not tools["context"].annotations.read_only_hint
    for step in ("`context`", "`reply`", "`end_session`", "`remember`", "`recall`", "`check_action`"):
        assert step in instructions


@pytest.mark.parametrize(
    ("tool", "arguments", "allowed"),
    [
        (
            "remember",
            {"content": "Alice is allergic to nuts", "category": "health"},
            "'other' (got 'health')",
        ),
        ("recall", {"query": "anything", "limit": 1000}, "less than or equal to 100"),
        ("recall", {"query": "anything", "types": ["note"]}, "'episode'"),
        ("recall", {"query": "anything", "min_score": 2}, "less than or equal to 1"),
        ("check_similar", {"content": "x", "type": "memo"}, "'procedure'"),
        ("record_decision", {"description": "Ship it", "stakes": "huge"}, "'critical'"),
        ("record_decision", {"description": "Ship it", "category": "vibes"}, "'architecture'"),
        (
            "record_decision",
            {"description": "Ship it", "reasons": [{"type": "gut", "text": "x"}]},
            "'empirical'",
        ),
        ("record_decision", {"description": "Ship it", "reasons": ["empirical: it worked"]}, "reasons"),
        ("record_decision", {"description": "Ship it", "confidence": 1.5}, "less than or equal to 1"),
        ("create_censor", {"pattern": "rm -rf", "reason": "no", "action": "deny"}, "'absolute' (got 'deny')"),
    ],
)
async def test_a_bad_value_is_a_tool_error_naming_what_is_allowed(
    settings: Settings, provider: EmbeddingProvider, tool: str, arguments: dict[str, Any], allowed: str
) -> None:
    async with Client(create_mcp_server(lambda: Nous(settings, embedding_provider=provider))) as client:
        result = await client.call_tool(tool, arguments)
        text = " ".join(getattr(c, "text", "") for c in result.content)
        assert result.is_error and allowed in text, text
        assert text.startswith(f"invalid arguments for {tool}: ") and "pydantic.dev" not in text, text
        still = await client.call_tool("recall", {"query": "anything"})
        assert not still.is_error  # the server answers on
    async with Nous(settings, embedding_provider=provider) as nous:
        assert await nous.memories(["fact", "decision", "censor"]) == []  # nothing half-written


def _unscoped(fn: Callable[..., Any]) -> list[str]:
    """The parameters of ``fn`` named as ids that declare no scope."""
    marked = marked_parameters(fn)
    return [
        name for name in inspect.signature(fn).parameters if NAMES_AN_ID.search(name) and name not in marked
    ]


class _Unmarked:
    """A signature of ``fn``'s with the metadata (and so the scope marker) of ``name`` dropped."""

    def __init__(self, fn: Callable[..., Any], name: str) -> None:
        signature = inspect.signature(fn)
        self.__signature__ = signature.replace(
            parameters=[
                p.replace(annotation=p.annotation.__origin__) if p.name == name else p
                for p in signature.parameters.values()
            ]
        )

    def __call__(self, *args: Any, **kwargs: Any) -> None: ...


async def test_every_tool_is_a_row_of_the_table_registered_through_the_dispatcher() -> None:
    server = create_mcp_server()  # never started: only its tools are read
    listed = await server.list_tools()
    assert [t.name for t in listed] == [spec.name for spec in TOOLS]  # nothing registered elsewhere
    registered = {tool.name: tool.fn for tool in server._tool_manager.list_tools()}
    dropped = 0
    for spec, tool in zip(TOOLS, listed, strict=True):
        # The scope wrapper (nous.server.mcp.scoped) around the row's own body.
        assert getattr(registered[spec.name], "__wrapped__", None) is spec.fn, spec.name
        assert (tool.title, tool.description, tool.annotations) == (
            spec.title,
            spec.description,
            spec.annotations,
        ), spec.name
        assert not _unscoped(spec.fn), (spec.name, _unscoped(spec.fn))
        for name in marked_parameters(spec.fn):  # the check sees each marker go missing
            if NAMES_AN_ID.search(name):
                assert _unscoped(_Unmarked(spec.fn, name)) == [name], (spec.name, name)
                dropped += 1
    assert dropped  # the markers above were each dropped once
