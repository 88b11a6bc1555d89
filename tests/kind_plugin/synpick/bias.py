"""synonym-pick's bias hooks (to be filled: issue 38 part 2)."""

from probegen.tasks import Task


class BiasHooks(Task):
    """Nothing yet: the kind gets probegen's defaults."""
