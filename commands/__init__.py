"""probegen's click commands: the command line's layer over the library.

Installed as ``probegen.commands`` (pyproject.toml maps the repository's ``commands/`` there, and
``diagnostics/`` to ``probegen.diagnostics``, so an install adds no top-level name but ``probegen``).
Only this package (:mod:`probegen.commands.cli`, the ``probegen`` console script; the repository's
``cli.py`` forwards to it) imports click. A command parses its options into a request of the library's
run layer (:mod:`probegen.run`), which checks and runs it and hands the analyses (``diagnostics``) plain
data. Modules here import click (and small, click-free helpers) at module level only, so
``probegen --help`` stays instant; heavy imports happen inside the commands.

- :mod:`probegen.commands.options`: the shared option decorators (``--device``..., ``--wordnet-source``);
- :mod:`probegen.commands.make_wordnetqa`, :mod:`probegen.commands.make_spec`,
  :mod:`probegen.commands.make_wordincontext`: ``probegen make wordnetqa|spec|wic|wsd``;
- :mod:`probegen.commands.bias`: ``probegen bias``;
- :mod:`probegen.commands.study`: the ``probegen study`` group;
"""
