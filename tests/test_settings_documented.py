"""Every setting is documented: each field of ``Settings`` appears as ``NOUS_<NAME>`` in the
README's settings table (a new setting without a line there fails this test)."""

from __future__ import annotations

from pathlib import Path

from nous import Settings

README = Path(__file__).resolve().parents[1] / "README.md"


def test_every_setting_is_in_the_readme() -> None:
    text = README.read_text(encoding="utf-8")
    missing = [
        f"NOUS_{name.upper()}" for name in Settings.model_fields if f"`NOUS_{name.upper()}`" not in text
    ]
    assert not missing, f"document these settings in README.md: {', '.join(missing)}"
