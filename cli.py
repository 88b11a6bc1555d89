"""The repository's entry point, kept for ``python cli.py ...``: the CLI itself is
:mod:`probegen.commands.cli` (installed as the ``probegen`` console script), so an install adds no
top-level name but ``probegen``."""

from probegen.commands.cli import cli, main

__all__ = ["cli", "main"]

if __name__ == "__main__":
    main()
