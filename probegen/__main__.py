"""``python -m probegen ...`` runs the CLI (what ``torchrun -m probegen ...`` launches on every rank)."""

from probegen.commands.cli import main

if __name__ == "__main__":
    main()
