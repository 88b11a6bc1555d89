"""Probe families as data: a spec file (YAML or JSON) declares concepts, relation, item shape,
contexts and templates; ``build_spec`` maps it onto the CoDA21, WordNetQA or WiC generators."""
