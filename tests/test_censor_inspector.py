"""The inspector's censors page names every action with what it does, shows the escalation bar on
warn censors only, and keeps the activation count on an edit unless the reset box is ticked."""

from __future__ import annotations

import html
from collections.abc import Iterator

import pytest

from nous import Nous, Settings
from nous.models import CensorAction
from nous.models.heart import CENSOR_ACTION_EFFECTS
from nous.server import create_key
from tests.test_server import LiveServer, live
from tests.test_ui import _client, _csrf


async def _censors(settings: Settings) -> dict[str, str]:
    async with Nous(settings, agent_id="agent-a") as nous:
        key = (await create_key(nous.store, agent_id="agent-a"))[1]
        warn = await nous.add_censor(r"chmod\s+777", action="warn", reason="world-writable files")
        block = await nous.add_censor(r"DROP\s+TABLE", action="block", reason="never drop tables")
        for _ in range(2):
            await nous.check_action("chmod 777 /srv && psql -c 'DROP TABLE x'")
        return {"key": key, "warn": warn.id, "block": block.id}


@pytest.fixture
def served(database_url: str, settings: Settings) -> Iterator[tuple[LiveServer, dict[str, str]]]:
    with live(settings.model_copy(update={"database_url": database_url}), _censors) as pair:
        yield pair


def test_every_action_is_explained_and_only_warn_censors_show_escalation(
    served: tuple[LiveServer, dict[str, str]],
) -> None:
    server, made = served
    with _client(server, made["key"]) as a:
        page = a.get("/ui/censors")
        text = html.unescape(page.text)
        for action in CensorAction:
            assert f"{action.value}: {CENSOR_ACTION_EFFECTS[action]}" in text  # the edit form's options
            assert f"<dd>{CENSOR_ACTION_EFFECTS[action]}</dd>" in text  # the legend
        items = {
            cid: text.split(f'id="censor-{cid}"', 1)[1].split("</li>", 1)[0]
            for cid in (made["warn"], made["block"])
        }
        assert 'class="bar"' in items[made["warn"]] and "becomes block at 3" in items[made["warn"]]
        assert (
            'class="bar"' not in items[made["block"]]
            and "threshold" not in items[made["block"]].split("<details>")[0]
        )

        token = _csrf(page)
        kept = a.post(f"/ui/censors/{made['warn']}/edit", data={"csrf": token, "action": "block"})
        assert kept.status_code == 303, kept.text
        stored = a.get(f"/v1/memories/{made['warn']}").json()
        assert stored["action"] == "block" and stored["activation_count"] == 2
        reset = a.post(f"/ui/censors/{made['warn']}/edit", data={"csrf": token, "reset_activations": "1"})
        assert (
            reset.status_code == 303 and a.get(f"/v1/memories/{made['warn']}").json()["activation_count"] == 0
        )
        patched = a.patch(f"/v1/censors/{made['block']}", json={"action": "warn"})
        assert patched.status_code == 200 and patched.json()["activation_count"] == 2
        patched = a.patch(f"/v1/censors/{made['block']}", json={"reset_activations": True})
        assert patched.status_code == 200 and patched.json()["activation_count"] == 0
