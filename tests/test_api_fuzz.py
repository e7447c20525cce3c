"""Schemathesis over the OpenAPI spec of a real `nous serve` on loopback: generated requests for
every operation, valid and invalid (NOUS_FUZZ_EXAMPLES each, 40 by default: over 1,000 in all);
no 5xx, every answer in a documented status, content type and schema, invalid data rejected.

One check is left out: that every schema-valid request is accepted. The engine validates more
than a schema can say (a censor's pattern must be a valid, bounded regular expression; a
category must be known; a session must exist) and answers those with a 4xx problem.

A second test runs schemathesis' state machine over the spec's OpenAPI links (create a memory,
then read, update, forget, restore it, read its history, review it as a decision, use it as a
procedure, edit or retire it as a censor), about NOUS_FUZZ_STEPS calls (300 by default), with
the same checks and schemathesis' stateful ones (two left out, as it says), and asserts the
links were followed."""

from __future__ import annotations

import asyncio
import os
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

import schemathesis
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis.errors import Unsatisfiable
from hypothesis.stateful import Bundle, rule
from schemathesis import GenerationMode
from schemathesis.core.result import Ok
from schemathesis.core.transport import Response
from schemathesis.generation.case import Case
from schemathesis.generation.meta import TestPhase
from schemathesis.generation.stateful.state_machine import StepInput, StepOutput
from schemathesis.specs.openapi.checks import (
    ensure_resource_availability,
    positive_data_acceptance,
    use_after_free,
)

from nous import Settings
from tests.test_server import LiveServer, _keys

# POST /v1/import takes JSONL text: sent as schemathesis sends any text.
schemathesis.serializer.alias("application/x-ndjson", "text/plain")
EXAMPLES = int(os.environ.get("NOUS_FUZZ_EXAMPLES", "40"))
STEPS = int(os.environ.get("NOUS_FUZZ_STEPS", "300"))
SCENARIO_STEPS = 10  # calls at most per scenario (hypothesis' stateful_step_count)


def _with_fresh_key(headers: dict[str, str]) -> dict[str, str]:
    """``headers`` and a new ``Idempotency-Key``: a generated key ("0", "a") would recur across
    cases, and a recurring key replays an earlier answer or is refused for another body, so a
    case's answer would depend on the cases before it (hypothesis then calls the run flaky). The
    header's own contract is tested in tests/test_idempotency.py."""
    return {**headers, "Idempotency-Key": uuid.uuid4().hex}


def test_every_operation_answers_within_its_contract(tmp_path: Path) -> None:
    run = Settings(home=tmp_path, database_url=f"sqlite:///{tmp_path / 'nous.db'}", events_worker="off")
    keys = asyncio.run(_keys(run))
    server = LiveServer(run)
    headers = {"Authorization": f"Bearer {keys['a']}"}
    cases = 0
    try:
        schema = schemathesis.openapi.from_url(f"{server.url}/openapi.json")
        # The key is sent with every case (below), so no case is "invalid" for lacking it.
        schema.config.generation.update(with_security_parameters=False)
        schema.validate()  # the spec itself is valid OpenAPI (its links included)
        found = list(schema.get_all_operations())
        assert all(isinstance(r, Ok) for r in found), found  # and every operation in it
        operations = [(r.ok(), mode) for r in found if isinstance(r, Ok) for mode in GenerationMode]
        for operation, mode in operations:

            @given(case=operation.as_strategy(mode))
            @settings(
                max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck), database=None
            )
            def check(case: Any) -> None:
                nonlocal cases
                cases += 1
                # an invalid case keeps the key it was generated with: it may be the invalid part
                positive = mode == GenerationMode.POSITIVE  # noqa: B023 (called in this iteration)
                sent = _with_fresh_key(headers) if positive else headers
                case.call_and_validate(headers=sent, excluded_checks=[positive_data_acceptance])

            try:
                check()
            except Unsatisfiable:  # an operation without parameters has no invalid form
                assert mode == GenerationMode.NEGATIVE, operation.label
    finally:
        server.close()
    print(f"{cases} cases")
    assert cases >= 1000, cases


def test_linked_operations_follow_a_memory_through_its_life(tmp_path: Path) -> None:
    """Scenarios of up to SCENARIO_STEPS calls that create memories and follow the spec's links
    with the ids the answers return. ``use_after_free`` is left out too: DELETE forgets a memory
    (it stays readable, with its history, and can be restored). So is ``ensure_resource_availability``
    (a 404 right after a create) for POST /v1/memories/{memory_id}/links alone: its 404 is
    for the body's ``target_id``, made up, not for the memory the link gave.

    Creating a memory is a rule of this test, and the only one that opens a scenario: schemathesis
    opens them only from operations it judges likely to succeed, and it passes over
    POST /v1/memories because its optional ``user_id`` and ``session_id`` look like references to
    resources no operation creates. Left to itself it opened every scenario with a restore of a
    made-up id (a 404 for most of the budget; the stateless test covers made-up ids)."""
    run = Settings(home=tmp_path, database_url=f"sqlite:///{tmp_path / 'nous.db'}", events_worker="off")
    keys = asyncio.run(_keys(run))
    server = LiveServer(run)
    headers = {"Authorization": f"Bearer {keys['a']}"}
    calls = 0
    followed: Counter[tuple[str, int]] = Counter()  # (link, status) of each call a link fed
    try:
        schema = schemathesis.openapi.from_url(f"{server.url}/openapi.json")
        create = schema["/v1/memories"]["POST"]

        class Workflow(schema.as_state_machine()):  # type: ignore[misc]
            @rule(
                target=Bundle("created"),
                input=create.as_strategy(phase=TestPhase.STATEFUL).map(StepInput.initial),
            )
            def create_memory(self, input: StepInput) -> StepOutput:
                self.recorder.record_case(case=input.case)  # the parent of the calls it links to
                return self.step(input)

            def step(self, input: StepInput) -> StepOutput:
                nonlocal calls
                output = super().step(input)
                calls += 1
                link = input.transition
                if link is not None and not link.is_inferred and input.is_applied:
                    followed[link.id, output.response.status_code] += 1
                return output

            def get_call_kwargs(self, case: Case) -> dict[str, Any]:
                return {"headers": _with_fresh_key(headers)}

            def validate_response(self, response: Response, case: Case, *_: Any, **kwargs: Any) -> None:
                excluded = [positive_data_acceptance, use_after_free]
                if case.operation.label == "POST /v1/memories/{memory_id}/links":
                    excluded.append(ensure_resource_availability)  # a 404 for a made-up target_id
                case.validate_response(
                    response,
                    headers=headers,
                    excluded_checks=excluded,
                    transport_kwargs=kwargs,
                    recorder=self.recorder,
                )

        for opener in Workflow.root_rules:  # schemathesis' own openers: create_memory replaces them
            setattr(Workflow, opener, None)
        Workflow.run(
            settings=settings(
                max_examples=max(1, STEPS // SCENARIO_STEPS),
                stateful_step_count=SCENARIO_STEPS,
                phases=[Phase.generate],
                deadline=None,
                suppress_health_check=list(HealthCheck),
                database=None,
            )
        )
    finally:
        server.close()
    print(f"{calls} calls; links followed: {sorted(followed.items())}")
    assert calls >= STEPS // 4, calls
    # Links were followed, and some read a memory that was there (not a 404 for a made-up id).
    assert sum(followed.values()) > 0, followed
    reads = {"GET /v1/memories/{memory_id}", "GET /v1/memories/{memory_id}/history"}
    assert any(status == 200 and link.rsplit(" -> ", 1)[1] in reads for link, status in followed), followed
