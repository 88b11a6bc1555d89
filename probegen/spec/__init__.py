"""Probe families as data: a spec file (YAML or JSON) declares concepts, relation, item shape,
contexts and templates; ``build_spec`` maps it onto the generator of the kind that registers its
shape (CoDA21, WordNetQA, WiC, or a plugin's)."""
