"""probegen's click commands: the command line's layer over the library.

Only the CLI (``cli.py``) and this package import click and ``diagnostics``; the library
(``probegen``) takes typed option objects and never imports either. Modules here import click
(and small, click-free helpers) at module level only, so ``probegen --help`` stays instant;
heavy imports happen inside the commands.

- :mod:`commands.options`: the shared option decorators (``--device``..., ``--wordnet-source``);
- :mod:`commands.make_wordnetqa`, :mod:`commands.make_spec`, :mod:`commands.make_wordincontext`:
  ``probegen make wordnetqa|spec|wic|wsd``;
- :mod:`commands.bias`: ``probegen bias``;
- :mod:`commands.study`: the ``probegen study`` group;
- :mod:`commands.evaluate`: the word-in-context branch of ``probegen eval``.
"""
