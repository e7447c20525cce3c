"""The Python API."""

from nous.api.nous import Nous
from nous.api.sync import SyncNous

__all__ = ["Nous", "SyncNous"]
