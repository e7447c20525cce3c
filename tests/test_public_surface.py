"""The public surface is typed and complete: every Nous type in a public method's signature is
importable from ``nous``, and no public method is named after a builtin."""

from __future__ import annotations

import builtins
import inspect
import typing

import nous
from nous import Nous, SyncNous


def _classes(hint: object) -> set[type]:
    found: set[type] = set()
    if isinstance(hint, type):
        found.add(hint)
    for arg in typing.get_args(hint):
        found |= _classes(arg)
    return found


def _public_methods(cls: type) -> list[tuple[str, object]]:
    return [(n, m) for n, m in inspect.getmembers(cls) if not n.startswith("_") and callable(m)]


def test_every_type_in_a_public_signature_is_exported() -> None:
    missing: dict[str, set[str]] = {}
    for cls in (Nous, SyncNous):
        for name, method in _public_methods(cls):
            try:
                hints = typing.get_type_hints(method)
            except TypeError:
                continue
            for hint in hints.values():
                for found in _classes(hint):
                    if (
                        found.__module__.startswith("nous.")
                        and getattr(nous, found.__name__, None) is not found
                    ):
                        missing.setdefault(found.__name__, set()).add(f"{cls.__name__}.{name}")
    assert not missing, f"not importable from nous: {missing}"


# ``open`` is the lifecycle verb of a resource (as for files and connections), paired with ``close``.
LIFECYCLE = {"open"}


def test_no_public_method_is_named_after_a_builtin() -> None:
    shadowing = {
        n for cls in (Nous, SyncNous) for n, _ in _public_methods(cls) if hasattr(builtins, n)
    } - LIFECYCLE
    assert not shadowing


def test_every_recall_body_field_is_a_parameter_of_nous_recall() -> None:
    """POST /v1/recall passes its body to ``Nous.recall`` field by field (``arguments``): a field
    added to the body must be a parameter of the method, under its own name or the one renamed."""
    from nous.server.essentials import RecallRequest

    body = RecallRequest(query="q")
    parameters = set(inspect.signature(Nous.recall).parameters) - {"self"}
    assert set(body.arguments(types="kinds")) <= parameters, set(body.arguments(types="kinds")) - parameters
