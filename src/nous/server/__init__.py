"""The network interfaces: the REST API (``nous serve``) and its API keys.

The names are imported on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from nous._lazy import lazy_exports

if TYPE_CHECKING:
    from nous.server.app import create_app
    from nous.server.keys import create_key, revoke_key, verify_key

__all__ = ["create_app", "create_key", "revoke_key", "verify_key"]

# Each name and the module it is defined in.
_EXPORTS = {
    "create_app": "nous.server.app",
    "create_key": "nous.server.keys",
    "revoke_key": "nous.server.keys",
    "verify_key": "nous.server.keys",
}

__getattr__, __dir__ = lazy_exports(globals(), _EXPORTS)
