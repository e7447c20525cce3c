"""Ordered, versioned SQL migrations shipped as package files.

Each backend keeps ``NNNN_name.sql`` files for what only it has; ``storage/sql/migrations`` holds
the ones every backend shares, written with ``{time}``-style names for the column types that
differ (each backend package's ``COLUMN_TYPES``). Applied versions are recorded in a
``schema_migrations`` table. Every statement is written to be idempotent, so a
migration interrupted half-way, or run against a database created by hand,
applies cleanly.
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib import import_module, resources


@dataclass(frozen=True, slots=True)
class Migration:
    version: int
    name: str
    sql: str


def load_migrations(package: str) -> list[Migration]:
    """The migrations of the backend in ``package``: its own and the shared ones, by version."""
    types: dict[str, str] = import_module(package).COLUMN_TYPES
    found: list[Migration] = []
    for source in (package, "nous.storage.sql"):
        for entry in resources.files(source).joinpath("migrations").iterdir():
            if not entry.name.endswith(".sql"):
                continue
            version, _, name = entry.name.removesuffix(".sql").partition("_")
            sql = entry.read_text(encoding="utf-8")
            for token, column_type in types.items():
                sql = sql.replace(f"{{{token}}}", column_type)
            found.append(Migration(int(version), name, sql))
    found.sort(key=lambda m: m.version)
    versions = [m.version for m in found]
    if len(set(versions)) != len(versions):
        raise RuntimeError(f"duplicate migration versions in {package}: {versions}")
    return found
