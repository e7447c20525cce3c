"""The TypeScript client's input, ``clients/typescript/openapi.json``, is the server's OpenAPI
document as ``create_app`` builds it: changing the API without exporting it again (and
regenerating the client's types, which ``npm run check`` holds to this file) fails here."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _exporter() -> ModuleType:
    spec = importlib.util.spec_from_file_location("export_openapi", ROOT / "scripts" / "export_openapi.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_openapi_json_is_the_servers_document() -> None:
    exporter = _exporter()
    assert exporter.main(check=True) == 0, (
        "clients/typescript/openapi.json is out of date: run scripts/export_openapi.py, then "
        "`npm run generate` in clients/typescript"
    )
    document = json.loads((ROOT / "clients/typescript/openapi.json").read_text(encoding="utf-8"))
    assert document["openapi"].startswith("3.1") and "/v1/recall" in document["paths"]


def test_the_check_flags_a_stale_document(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    exporter = _exporter()
    stale = json.loads(exporter.render())
    del stale["components"]["schemas"]["RecallRequest"]["properties"]["limit"]  # an API change
    target = tmp_path / "openapi.json"
    target.write_text(json.dumps(stale, indent=2) + "\n", encoding="utf-8")
    monkeypatch.setattr(exporter, "TARGET", target)
    assert exporter.main(check=True) == 1
    assert exporter.main(check=False) == 0  # exporting again brings it up to date
    assert exporter.main(check=True) == 0
