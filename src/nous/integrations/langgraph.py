"""LangGraph's long-term memory slot backed by Nous: ``NousStore`` is a LangGraph ``BaseStore``.

How an item maps onto Nous (``docs/integrations.md``):

- an item is a Nous fact written through the write path (dedup, updates, history);
- its namespace is the fact's user scope, ``user_of(namespace)`` (by default the labels joined
  with ".", one-to-one since LangGraph forbids "." in a label), and its metadata's
  ``langgraph_namespace`` (the labels joined with "."), so ``nous.memories(where=...)`` finds a
  namespace's items;
- its key is the fact's subject, so ``get`` is one exact lookup;
- its value is kept whole as the metadata's ``langgraph_value``, so ``get`` returns exactly what
  was put (within the metadata limits of docs/rest.md: 64 KB, the value nested 5 levels deep);
  the fact's content (what recall embeds and keyword-indexes) is the value's text: the ``index``
  fields, else a "content", "text" or "memory" string, else the JSON;
- ``put`` of a known key updates that fact (a history row); ``put`` of a new key that the write
  path finds a duplicate of a fact stores the key as a pointer (superseded by that fact), and one
  the write path finds an update of a fact supersedes it: either way the older key reads the
  current fact. ``put(value=None)`` and ``delete`` forget the key's fact (soft, audited);
- ``search(query=...)`` is ``recall`` (scores 0..1, below ``min_score`` left out), without a query
  the items newest first; ``filter`` matches value fields exactly or with $eq/$ne/$gt/$gte/$lt/$lte.
"""

from __future__ import annotations

import json
import operator
from collections.abc import AsyncIterator, Callable, Iterable, Mapping, Sequence
from typing import Any, Literal, assert_never

from langgraph.store.base import (
    BaseStore,
    GetOp,
    Item,
    ListNamespacesOp,
    MatchCondition,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
    validate_op_namespace,
)
from langgraph.store.base.embed import get_text_at_path

from nous.errors import InvalidInputError
from nous.integrations._engine import Memory, unwrap
from nous.models import Memory as NousMemory
from nous.models import WriteStatus

NAMESPACE_KEY = "langgraph_namespace"  # metadata keys of an item
VALUE_KEY = "langgraph_value"
# Tags that items written before metadata existed carry instead (read, never written).
ITEM_TAG = "langgraph"
NAMESPACE_TAG = "langgraph:namespace="
VALUE_TAG = "langgraph:value="
SOURCE = "langgraph"
TEXT_FIELDS = ("content", "text", "memory")
PAGE = 500  # memories listed per call when scanning (search without a query, list_namespaces)
MAX_RECALL = 1000  # recall's largest limit (nous.retrieval.query.MAX_LIMIT)
MAX_HOPS = 20  # superseded_by links followed from a key's fact to the current one

_COMPARE: dict[str, Callable[[Any, Any], bool]] = {
    "$eq": operator.eq,
    "$ne": operator.ne,
    "$gt": operator.gt,
    "$gte": operator.ge,
    "$lt": operator.lt,
    "$lte": operator.le,
}


def joined_labels(namespace: tuple[str, ...]) -> str:
    """The default user scope of a namespace: its labels joined with "."."""
    return ".".join(namespace)


class NousStore(BaseStore):
    """A LangGraph ``BaseStore`` over a ``Nous`` (or ``AsyncClient``) for the async methods, or a
    ``SyncNous`` (or ``Client``) for both the blocking and the async ones.

    ``index_fields``: the value fields (LangGraph paths) whose text is a fact's content, unless a
    ``put`` names its own; ``dedup=False`` stores every new key as its own fact; ``min_score``
    overrides recall's minimum for ``search(query=...)``; ``user_of`` maps a namespace to the Nous
    user that owns its facts (namespaces sharing a user share duplicate detection).
    """

    supports_ttl = False

    def __init__(
        self,
        memory: Memory,
        *,
        index_fields: Sequence[str] | None = None,
        dedup: bool = True,
        min_score: float | None = None,
        user_of: Callable[[tuple[str, ...]], str | None] = joined_labels,
    ) -> None:
        self.engine, self._blocking = unwrap(memory)
        self.index_fields = list(index_fields) if index_fields else None
        self.dedup = dedup
        self.min_score = min_score
        self.user_of = user_of

    # -- BaseStore ---------------------------------------------------------------------------
    def batch(self, ops: Iterable[Op]) -> list[Result]:
        if self._blocking is None:
            raise TypeError(
                "a NousStore over an async Nous or AsyncClient has only the async methods "
                "(aget, aput, asearch, ...); give it a SyncNous or Client for the blocking ones"
            )
        results: list[Result] = self._blocking(self.abatch(list(ops)))
        return results

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        # One after another, in order: a put must be seen by a later get of the same batch.
        return [await self._run(op) for op in ops]

    async def _run(self, op: Op) -> Result:
        validate_op_namespace(op)
        match op:
            case GetOp():
                return await self._get(op.namespace, op.key)
            case SearchOp():
                return await self._search(op)
            case PutOp():
                await self._put(op)
                return None
            case ListNamespacesOp():
                return await self._list_namespaces(op)
            case _:
                assert_never(op)

    # -- items -------------------------------------------------------------------------------
    async def _own(self, namespace: tuple[str, ...], key: str) -> NousMemory | None:
        """The fact written for this key (current before superseded), or None."""
        found = await self.engine.memories(
            "fact", subject=key, user_id=self.user_of(namespace), include_superseded=True, limit=100
        )
        mine = [m for m in found if m.subject == key and namespace_of(m) == namespace]
        current = [m for m in mine if m.superseded_by is None]
        ranked = current or mine
        return ranked[0] if ranked else None

    async def _current(self, memory: NousMemory) -> NousMemory | None:
        """The fact that stands for ``memory`` now: itself, or the one that superseded it; None
        once forgotten."""
        for _ in range(MAX_HOPS):
            if memory.superseded_by is None:
                break
            memory = await self.engine.get(memory.superseded_by)
        return memory if memory.active and memory.superseded_by is None else None

    async def _get(self, namespace: tuple[str, ...], key: str) -> Item | None:
        own = await self._own(namespace, key)
        current = await self._current(own) if own is not None else None
        if current is None:
            return None
        return Item(
            namespace=namespace,
            key=key,
            value=value_of(current),
            created_at=current.created_at,
            updated_at=current.updated_at,
        )

    async def _put(self, op: PutOp) -> None:
        own = await self._own(op.namespace, op.key)
        if op.value is None:
            if own is not None:
                await self.engine.forget(own.id)
            return
        value = dict(op.value)
        text = self._text(value, op.index)
        current = await self._current(own) if own is not None else None
        if current is not None:
            tags = [t for t in current.tags if not is_ours(t)]
            metadata = {**current.metadata, **item_metadata(namespace_of(current) or op.namespace, value)}
            if current.content != text or current.tags != tags or current.metadata != metadata:
                await self.engine.update(current.id, content=text, tags=tags, metadata=metadata)
            return
        user = self.user_of(op.namespace)
        metadata = item_metadata(op.namespace, value)
        written = await self.engine.learn(
            text, subject=op.key, user_id=user, metadata=metadata, source=SOURCE, dedup=self.dedup
        )
        if written.status == WriteStatus.DUPLICATE:
            # The fact is already known: the key becomes a pointer to it, so it reads that fact
            # (its confirmation count and history record the repeat) and recall shows it once.
            pointer = await self.engine.learn(
                text, subject=op.key, user_id=user, metadata=metadata, source=SOURCE, dedup=False
            )
            await self.engine.supersede(pointer.memory.id, by=written.memory.id)

    def _text(self, value: dict[str, Any], index: Literal[False] | list[str] | None) -> str:
        """What the fact says: the indexed fields' text, else a text field, else the JSON."""
        fields = index if isinstance(index, list) else self.index_fields
        if fields and index is not False:
            texts = [t for f in fields for t in get_text_at_path(value, f) if t.strip()]
            if texts:
                return "\n".join(texts)
        for name in TEXT_FIELDS:
            text = value.get(name)
            if isinstance(text, str) and text.strip():
                return text
        return json.dumps(value, ensure_ascii=False)

    # -- search and listing ------------------------------------------------------------------
    async def _search(self, op: SearchOp) -> list[SearchItem]:
        want = op.offset + op.limit
        if not op.query:
            found: list[SearchItem] = []
            async for memory in self._items():
                if matches(memory, op.namespace_prefix, op.filter):
                    found.append(search_item(memory))
                    if len(found) >= want:
                        break
            return found[op.offset : want]
        size = min(MAX_RECALL, max(4 * want, 20))
        first = True
        while True:
            hits = await self.engine.recall(
                op.query, kinds="fact", limit=size, min_score=self.min_score, reinforce=first
            )
            ranked = [
                search_item(h.memory, h.score)
                for h in hits
                if matches(h.memory, op.namespace_prefix, op.filter)
            ]
            if len(ranked) >= want or len(hits) < size or size >= MAX_RECALL:
                return ranked[op.offset : want]
            size, first = min(MAX_RECALL, 4 * size), False

    async def _list_namespaces(self, op: ListNamespacesOp) -> list[tuple[str, ...]]:
        seen: set[tuple[str, ...]] = set()
        async for memory in self._items():
            namespace = namespace_of(memory)
            if namespace is None:
                continue
            if all(condition_holds(namespace, c) for c in op.match_conditions or ()):
                seen.add(namespace[: op.max_depth] if op.max_depth is not None else namespace)
        return sorted(seen)[op.offset : op.offset + op.limit]

    async def _items(self) -> AsyncIterator[NousMemory]:
        """Every current item of the agent, newest first."""
        offset = 0
        while True:
            page = await self.engine.memories("fact", limit=PAGE, offset=offset)
            for memory in page:
                if is_item(memory):
                    yield memory
            if len(page) < PAGE:
                return
            offset += PAGE


def is_ours(tag: str) -> bool:
    return tag == ITEM_TAG or tag.startswith((NAMESPACE_TAG, VALUE_TAG))


def item_metadata(namespace: tuple[str, ...], value: Mapping[str, Any]) -> dict[str, Any]:
    return {NAMESPACE_KEY: ".".join(namespace), VALUE_KEY: dict(value)}


def is_item(memory: NousMemory) -> bool:
    return NAMESPACE_KEY in memory.metadata or ITEM_TAG in memory.tags


def namespace_of(memory: NousMemory) -> tuple[str, ...] | None:
    labels = memory.metadata.get(NAMESPACE_KEY)
    if isinstance(labels, str):
        return tuple(labels.split("."))
    for tag in memory.tags:
        if tag.startswith(NAMESPACE_TAG):
            return tuple(tag.removeprefix(NAMESPACE_TAG).split("."))
    return None


def value_of(memory: NousMemory) -> dict[str, Any]:
    """The value as put; a fact written outside the store reads as ``{"content": its text}``."""
    value = memory.metadata.get(VALUE_KEY)
    if isinstance(value, dict):
        return value
    for tag in memory.tags:
        if tag.startswith(VALUE_TAG):
            value = json.loads(tag.removeprefix(VALUE_TAG))
            if isinstance(value, dict):
                return value
    return {"content": memory.content}


def search_item(memory: NousMemory, score: float | None = None) -> SearchItem:
    return SearchItem(
        namespace=namespace_of(memory) or (),
        key=memory.subject or memory.id,
        value=value_of(memory),
        created_at=memory.created_at,
        updated_at=memory.updated_at,
        score=score,
    )


def matches(memory: NousMemory, prefix: tuple[str, ...], wanted: dict[str, Any] | None) -> bool:
    """An item of this store under ``prefix`` whose value passes the filter."""
    namespace = namespace_of(memory)
    if not is_item(memory) or namespace is None or namespace[: len(prefix)] != prefix:
        return False
    value = value_of(memory)
    return all(compare(value.get(k), v) for k, v in (wanted or {}).items())


def compare(actual: Any, expected: Any) -> bool:
    """LangGraph's filter rule: a dict of $-operators compares, another dict matches field by
    field, anything else must be equal."""
    if isinstance(expected, dict):
        if any(k.startswith("$") for k in expected):
            return all(apply_operator(actual, name, v) for name, v in expected.items())
        return isinstance(actual, dict) and all(compare(actual.get(k), v) for k, v in expected.items())
    return bool(actual == expected)


def apply_operator(actual: Any, name: str, operand: Any) -> bool:
    compare_with = _COMPARE.get(name)
    if compare_with is None:
        raise InvalidInputError(f"unknown filter operator {name!r}; use one of {', '.join(_COMPARE)}")
    try:
        return bool(compare_with(actual, operand))
    except TypeError:  # None or a value of another type: not a match
        return False


def condition_holds(namespace: tuple[str, ...], condition: MatchCondition) -> bool:
    path = condition.path
    if len(namespace) < len(path):
        return False
    part = (
        namespace[: len(path)]
        if condition.match_type == "prefix"
        else namespace[len(namespace) - len(path) :]
    )
    return all(p in ("*", n) for p, n in zip(path, part, strict=True))
