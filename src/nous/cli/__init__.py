"""The ``nous`` command line."""
