"""``python -m nous`` runs the CLI."""

from nous.cli.app import main

main()
