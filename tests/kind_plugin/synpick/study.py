"""synonym-pick's study hooks (to be filled: issue 38 part 2)."""

from probegen.tasks import Task


class StudyHooks(Task):
    """Nothing yet: the kind gets probegen's defaults."""
