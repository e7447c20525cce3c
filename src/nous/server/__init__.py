"""The network interfaces: the REST API (``nous serve``) and its API keys."""

from nous.server.app import create_app
from nous.server.keys import create_key, revoke_key, verify_key

__all__ = ["create_app", "create_key", "revoke_key", "verify_key"]
