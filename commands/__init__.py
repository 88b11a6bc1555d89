"""probegen's click commands, installed as ``probegen.commands`` (pyproject.toml's ``package-dir``).

A command parses its options into a request of the run layer (:mod:`probegen.run`), which checks and runs it.
Only this package imports click; heavy imports happen inside the commands, so ``probegen --help`` stays instant.
Expected failures raise ``ProbegenError``: the CLI group (:mod:`probegen.commands.cli`) prints one line, exits 1.
"""
