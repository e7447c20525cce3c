"""The blocking twins are written out, complete and current: ``SyncNous`` has every public
coroutine of ``Nous`` and ``Client`` every one of ``AsyncClient``, with the same parameters and
return types (a list for an async iterator), and the generated modules match their sources."""

from __future__ import annotations

import inspect
import subprocess
import sys
from pathlib import Path

import pytest

import nous
from nous import AsyncClient, Client, Nous, SyncNous

ROOT = Path(__file__).resolve().parent.parent


def _coroutines(cls: type) -> dict[str, inspect.Signature]:
    return {
        name: inspect.signature(fn)
        for name, fn in vars(cls).items()
        if not name.startswith("_") and (inspect.iscoroutinefunction(fn) or inspect.isasyncgenfunction(fn))
    }


def _blocking(cls: type) -> dict[str, inspect.Signature]:
    return {
        name: inspect.signature(fn)
        for name, fn in vars(cls).items()
        if not name.startswith("_") and inspect.isfunction(fn)
    }


@pytest.mark.parametrize(
    ("async_cls", "sync_cls", "skipped"),
    [(Nous, SyncNous, {"open", "close", "run_pipeline"}), (AsyncClient, Client, {"close"})],
)
def test_every_coroutine_has_a_blocking_twin_with_its_signature(
    async_cls: type, sync_cls: type, skipped: set[str]
) -> None:
    coroutines, blocking = _coroutines(async_cls), _blocking(sync_cls)
    assert set(coroutines) - skipped <= set(blocking), set(coroutines) - skipped - set(blocking)
    for name in set(coroutines) - skipped:
        theirs, ours = coroutines[name], blocking[name]
        assert list(ours.parameters.values()) == list(theirs.parameters.values()), name
        if inspect.isasyncgenfunction(getattr(async_cls, name)):
            item = str(theirs.return_annotation).removeprefix("AsyncIterator[").removesuffix("]")
            assert ours.return_annotation == f"list[{item}]", name
        else:
            assert ours.return_annotation == theirs.return_annotation, name


def test_no_getattr_proxy() -> None:
    for cls in (SyncNous, Client):
        assert "__getattr__" not in vars(cls)


@pytest.mark.parametrize("generator", ["gen_client.py", "gen_blocking.py"])
def test_generated_modules_are_current(generator: str) -> None:
    """AsyncClient's REST methods are written from the table of operations, and the blocking
    classes from the async ones: a change to either without regenerating fails here."""
    done = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / generator), "--check"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_all_names_import() -> None:
    namespace: dict[str, object] = {}
    exec("from nous import *", namespace)
    assert set(nous.__all__) <= set(namespace)
    assert len(set(nous.__all__)) == len(nous.__all__)
    missing = [name for name in nous.__all__ if getattr(nous, name, None) is None]
    assert not missing
