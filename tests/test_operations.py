"""The table of operations is the REST API: every documented route comes from one of its rows,
and every row is a documented route, with the row's method, path, status and tag."""

from __future__ import annotations

from pathlib import Path

from fastapi.routing import APIRoute

from nous import Settings
from nous.server import create_app
from nous.server.operations import OPERATIONS


def test_every_documented_route_is_a_row_of_the_table(tmp_path: Path) -> None:
    app = create_app(Settings(home=tmp_path, database_url=f"sqlite:///{tmp_path}/nous.db"))
    routes = {
        (method, route.path): route
        for route in app.routes
        if isinstance(route, APIRoute) and route.include_in_schema
        for method in route.methods or ()
    }
    rows = {(op.method, op.path): op for op in OPERATIONS}
    assert len(rows) == len(OPERATIONS), "two rows declare one method and path"
    assert set(routes) == set(rows)
    for key, op in rows.items():
        route = routes[key]
        assert getattr(route.endpoint, "__wrapped__", route.endpoint) is op.handler, key  # scoped or not
        assert route.status_code == op.status and route.tags == [op.tag], key
    paths = app.openapi()["paths"]
    assert sum(len(methods) for methods in paths.values()) == len(OPERATIONS)


def test_operation_ids_are_the_handlers_names() -> None:
    names = [op.name for op in OPERATIONS]
    assert len(set(names)) == len(names)
    assert all(name.isidentifier() and name == name.lower() for name in names)
