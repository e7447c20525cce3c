"""Ordered, versioned SQL migrations shipped as package files.

Each backend keeps ``NNNN_name.sql`` files; applied versions are recorded in a
``schema_migrations`` table. Every statement is written to be idempotent, so a
migration interrupted half-way, or run against a database created by hand,
applies cleanly.
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib import resources


@dataclass(frozen=True, slots=True)
class Migration:
    version: int
    name: str
    sql: str


def load_migrations(package: str) -> list[Migration]:
    """The migrations shipped in ``package``/migrations, by version."""
    found: list[Migration] = []
    for entry in resources.files(package).joinpath("migrations").iterdir():
        if not entry.name.endswith(".sql"):
            continue
        stem = entry.name.removesuffix(".sql")
        version, _, name = stem.partition("_")
        found.append(Migration(int(version), name, entry.read_text(encoding="utf-8")))
    found.sort(key=lambda m: m.version)
    versions = [m.version for m in found]
    if len(set(versions)) != len(versions):
        raise RuntimeError(f"duplicate migration versions in {package}: {versions}")
    return found
