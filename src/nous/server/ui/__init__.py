"""The web inspector of ``nous serve`` under ``/ui/``: see, search and curate an agent's memory."""

from nous.server.ui.routes import mount

__all__ = ["mount"]
