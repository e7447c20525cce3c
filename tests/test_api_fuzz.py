"""Schemathesis over the OpenAPI spec of a real `nous serve` on loopback: generated requests for
every operation, valid and invalid (NOUS_FUZZ_EXAMPLES each, 40 by default: over 1,000 in all);
no 5xx, every answer in a documented status, content type and schema, invalid data rejected.

One check is left out: that every schema-valid request is accepted. The engine validates more
than a schema can say (a censor's pattern must be a valid, bounded regular expression; a
category must be known; a session must exist) and answers those with a 4xx problem."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any

import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis.errors import Unsatisfiable
from schemathesis import GenerationMode
from schemathesis.core.result import Ok
from schemathesis.specs.openapi.checks import positive_data_acceptance

from nous import Settings
from tests.test_server import LiveServer, _keys

EXAMPLES = int(os.environ.get("NOUS_FUZZ_EXAMPLES", "40"))


def test_every_operation_answers_within_its_contract(tmp_path: Path) -> None:
    run = Settings(home=tmp_path, database_url=f"sqlite:///{tmp_path / 'nous.db'}", events_worker="off")
    keys = asyncio.run(_keys(run))
    server = LiveServer(run)
    headers = {"Authorization": f"Bearer {keys['a']}"}
    cases = 0
    try:
        schema = schemathesis.openapi.from_url(f"{server.url}/openapi.json")
        found = list(schema.get_all_operations())
        assert all(isinstance(r, Ok) for r in found), found  # the spec itself is valid
        operations = [(r.ok(), mode) for r in found if isinstance(r, Ok) for mode in GenerationMode]
        for operation, mode in operations:

            @given(case=operation.as_strategy(mode))
            @settings(
                max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck), database=None
            )
            def check(case: Any) -> None:
                nonlocal cases
                cases += 1
                case.call_and_validate(headers=headers, excluded_checks=[positive_data_acceptance])

            try:
                check()
            except Unsatisfiable:  # an operation without parameters has no invalid form
                assert mode == GenerationMode.NEGATIVE, operation.label
    finally:
        server.close()
    assert cases >= 1000, cases
