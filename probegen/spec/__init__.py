"""Probe families as data: a spec file (YAML or JSON) declares concepts, relation, item shape,
contexts and templates; ``build_spec`` maps it onto the generator of the kind that registers its
shape (CoDA21, WordNetQA, WiC, or a plugin's)."""

# The task registry registers the kinds' spec sections with the schema as it is imported (the schema never
# imports the registry: the kinds' spec modules import the schema); importing it here makes any use of
# probegen.spec find them.
from .. import tasks as _tasks  # noqa: E402,F401
