"""``probegen make spec``."""

from __future__ import annotations

from typing import Any

import click

from probegen.errors import ProbegenError
from probegen.runner import Runner, Runtime

from .forms import forms_option, make_outputs, write_forms
from .options import SEED, add_device_options, add_wordnet_source_option, log


@click.command("spec")
@add_device_options
@add_wordnet_source_option
@click.argument("spec_file", required=False, metavar="SPEC")
@click.option("--set", "overrides", multiple=True, metavar="KEY=VALUE",
              help="Override a spec field before it is checked (value read as YAML), e.g. contexts.scorer=first; "
                   "repeatable.")
@click.option("--seed", type=SEED, default=None, help="Override the spec's seed.")
@click.option("--out", type=click.Path(), help="Dataset directory [default: probegen_out/datasets/<spec name>].")
@click.option("--check", "check_only", is_flag=True,
              help="Check the spec and print it as canonical JSON; build nothing.")
@click.option("--list", "list_specs", is_flag=True, help="List the built-in specs (templates/specs/) and exit.")
@forms_option
@click.pass_obj
def spec(obj: dict[str, Any], /, runtime: Runtime, spec_file: str | None, overrides: tuple[str, ...], seed: int | None,
         out: str | None, check_only: bool, list_specs: bool, n_forms: int | None) -> None:
    """Build the probe family a spec file (YAML or JSON) declares.

    SPEC is a file, or the name of a built-in spec in templates/specs/. The output is a dataset of
    the kind that registers the spec's shape (CoDA21, WordNetQA, WiC or a plugin's) that stats,
    eval, bias and export read like any other; its manifest records the spec's canonical JSON and
    sha256.

    \b
    Examples:
      probegen make spec --list                                   # the built-in specs
      probegen make spec coda21-clean-hard                        # = probegen make coda21
      probegen make spec templates/specs/coda21-3hops.yaml --set contexts.scorer=first
      probegen make spec my-probe.yaml --set concepts.pos=[verb] --seed 1 --out /tmp/my-probe
      probegen make spec my-probe.yaml --check                    # validate only
      probegen make spec coda21-clean-hard --set contexts.scorer=first --forms 3 --out sets/c   # sets/c-form1..3
    """
    import json

    from probegen.spec.schema import builtin_specs, load_spec

    if list_specs:
        for name, path in builtin_specs().items():
            s = load_spec(path)
            click.echo(f"{name:<28} {s.shape:<16} {s.description}")
        return
    if not spec_file:
        raise ProbegenError("name a spec file or a built-in spec (probegen make spec --list)")
    if seed is not None:
        overrides = tuple(overrides) + (f"seed={seed}",)
    s = load_spec(spec_file, overrides)
    from probegen.spec.build import build_spec, config_for, models_of
    from probegen.spec.schema import spec_sections

    config_for(s)  # generator-level checks before any work
    sections = spec_sections()
    if n_forms and not sections[s.shape].forms:
        with_forms = [shape for shape, sec in sections.items() if sec.forms]
        raise ProbegenError(f"--forms makes parallel forms of {' and '.join(with_forms)} specs; {s.name} is a "
                            f"{s.shape} spec")
    if check_only:
        click.echo(json.dumps(s.to_dict(), indent=1, sort_keys=True, ensure_ascii=False))
        click.echo(f"sha256 {s.sha256}", err=True)
        return
    from probegen.run.evaluation import resolve_models
    from probegen.scorers import LM_KINDS

    outputs = make_outputs(out, s.name, obj, n_forms, inputs=[spec_file])
    runner = Runner(runtime, log=log)  # loads the embedder and context scorer; rank 0 alone writes and speaks
    # an unknown model fails now, not after the groups are formed (the runner keeps it for the load)
    kinds = resolve_models(models_of(s), runner=runner)
    scorer = s.contexts.scorer
    if sections[s.shape].scorer and scorer != "first" and kinds[scorer] not in LM_KINDS:
        raise ProbegenError(f"contexts.scorer must be a causal or masked LM, or 'first'; {scorer!r} is a "
                            f"{kinds[scorer]} model")
    built = build_spec(s, obj.get("wordnet"), obj.get("semcor"), progress=runner.progress, log=runner.main_log(log),
                       runner=runner)
    if n_forms:
        write_forms(built.dataset, built.kind, s.seed, outputs, obj, runner, lambda d, p: built.task().write(d, p))
        return
    runner.write(lambda: built.write(outputs[0]))
    runner.main_log(click.echo)(f"wrote {outputs[0]} ({built.kind}; spec {s.name} sha256 {s.sha256[:12]}): "
                                f"{built.summary()}")
