"""The run layer: a command's request checked, then run (datasets loaded, the model's scorer, the task's
units scored) and handed to the analyses of :mod:`probegen.diagnostics`, which take plain data and return
results; the commands parse into these requests, and :func:`probegen.score` / :func:`probegen.bias` call
:mod:`probegen.run.api`."""
