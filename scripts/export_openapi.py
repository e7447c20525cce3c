"""Write the REST API's OpenAPI document (``create_app(...).openapi()``, as ``nous serve`` answers
``/openapi.json``) to ``clients/typescript/openapi.json``, the input of the TypeScript client's
generated types (``npm run generate`` in clients/typescript).

    .venv/bin/python scripts/export_openapi.py          # rewrite clients/typescript/openapi.json
    .venv/bin/python scripts/export_openapi.py --check  # exit 1 if it is out of date

``tests/test_typescript_client.py`` runs the check, so a change to the API without exporting
again (and regenerating the types) fails the suite.
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))

from nous.config import Settings  # noqa: E402
from nous.server import create_app  # noqa: E402

TARGET = ROOT / "clients/typescript/openapi.json"


def render() -> str:
    """The document as committed: indented JSON, keys in the server's order, one final newline."""
    with tempfile.TemporaryDirectory() as home:  # the document does not depend on the store
        spec = create_app(Settings(home=Path(home))).openapi()
    return json.dumps(spec, indent=2, ensure_ascii=False) + "\n"


def main(check: bool) -> int:
    text = render()
    if check:
        current = TARGET.read_text(encoding="utf-8") if TARGET.exists() else ""
        if current != text:
            print(
                "out of date: clients/typescript/openapi.json; run .venv/bin/python "
                "scripts/export_openapi.py, then `npm run generate` in clients/typescript"
            )
            return 1
        return 0
    TARGET.write_text(text, encoding="utf-8")
    print(f"wrote {TARGET}")
    return 0


if __name__ == "__main__":
    sys.exit(main("--check" in sys.argv[1:]))
