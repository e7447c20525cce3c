"""A Python client for `nous serve` with the methods of ``Nous``, so a script moves from the
embedded engine to a server by changing one line:

    nous = Nous()                                            # embedded
    nous = AsyncClient("http://127.0.0.1:8765", key=KEY)     # the same calls, over HTTP

``Client`` is its blocking twin (as ``SyncNous`` is of ``Nous``). Problem-details errors come
back as the same typed errors the engine raises.
"""

from nous.client.async_client import AsyncClient
from nous.client.sync_client import Client

__all__ = ["AsyncClient", "Client"]
