"""``probegen make wordnetqa``."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import click

from probegen import request_options as opts
from probegen.runner import Runner, Runtime

from .forms import forms_option, make_outputs, write_forms
from .options import SEED, add_device_options, add_wordnet_source_option, checked_type, log

if TYPE_CHECKING:
    from probegen.wordnetqa.config import WordNetQAConfig

PROBE_CHOICES = ["definitions", "hypernymy", "hyponymy", "synonymy", "all"]


def _config(probe: str, pos: str, distractors: str, contexts: str, **kw: Any) -> WordNetQAConfig:
    """The generator's settings from the command's options (checked)."""
    from probegen.wordnetqa.config import WordNetQAConfig

    cfg = WordNetQAConfig(probes=(probe,), pos=("n", "v") if pos == "both" else (pos[0],),
                          distractors=tuple(t.strip() for t in distractors.split(",") if t.strip()),
                          contexts="wordnet" if contexts == "examples" else contexts, **kw)
    cfg.validate()
    if cfg.templates:  # a bad templates file fails before any work
        from probegen.templating import question_templates

        question_templates(path=cfg.templates)
    return cfg


@click.command("wordnetqa")
@add_device_options
@add_wordnet_source_option
@click.option("--probe", type=click.Choice(PROBE_CHOICES), default="all", show_default=True,
              help="Probe type, or all four.")
@click.option("--pos", type=click.Choice(["noun", "verb", "both"]), default="noun", show_default=True)
@click.option("--max-hops", default=4, show_default=True, type=click.IntRange(1, 10),
              help="ISA answers (and ISA distractors) at 1..K hops.")
@click.option("--distractors", default="random,sister,isa", show_default=True,
              help="Perturbations, comma-separated: one item per question and type.")
@click.option("--sister-depth", default=2, show_default=True, type=click.IntRange(1, 5),
              help="Sister family depth l: siblings plus their descendants down to l-1 levels.")
@click.option("--contexts", type=click.Choice(["wordnet", "examples", "wordnet+semcor"]), default="wordnet",
              show_default=True,
              help="Context sentences: the wordnet's examples ('examples' is the same), or with SemCor filling in "
                   "where they give none (needs sense keys).")
@click.option("--max-contexts", default=3, show_default=True, type=click.IntRange(min=1),
              help="Contexts per concept (definitions: one question each).")
@click.option("--max-answers-per-hop", default=1, show_default=True, type=click.IntRange(min=1),
              help="ISA probes: gold answers sampled per concept and hop.")
@click.option("--min-answer-depth", default=2, show_default=True, type=click.IntRange(min=0),
              help="Noun hypernymy answers nearer the root than this are skipped (entity, abstraction, ...).")
@click.option("--instances/--no-instances", default=False, show_default=True,
              help="Follow instance hypernymy (Paris -> city) for answers and ISA distractors.")
@click.option("--max-concepts", "--limit", "max_concepts", default=None, type=click.IntRange(min=1),
              help="A seeded sample of N concepts that have a question of the probe(s) (quick sets).")
@click.option("--dev-frac", default=0.1, show_default=True, type=checked_type(opts.DEV_FRAC),
              help="Share of concepts in dev.")
@click.option("--test-frac", default=0.1, show_default=True, type=checked_type(opts.TEST_FRAC),
              help="Share of concepts in test.")
@click.option("--release/--no-release", default=False, show_default=True,
              help="Also write release/<split>.jsonl in the WordNetQA release schema.")
@click.option("--adversarial", is_flag=True,
              help="Pick the valid distractors the --against model scores highest; also writes the non-adversarial "
                   "twin to <out>-twin.")
@click.option("--against", default="minilm-l6", show_default=True, help="Reference model for --adversarial.")
@click.option("--templates", type=click.Path(dir_okay=False), default=None,
              help="Question templates (YAML/JSON, the shape of templates/questions/en.yaml) [default: "
                   "templates/questions/<the wordnet's language>.yaml].")
@click.option("--seed", type=SEED, default=0, show_default=True)
@click.option("--out", type=click.Path(), help="Dataset directory [default: probegen_out/datasets/wordnetqa-<probe>].")
@forms_option
@click.pass_obj
def wordnetqa(obj: dict[str, Any], /, runtime: Runtime, probe: str, pos: str, distractors: str, contexts: str,
              release: bool, adversarial: bool, against: str, out: str | None, n_forms: int | None,
              **settings: Any) -> None:
    """Generate WordNetQA multiple-choice probes (definitions, hypernymy, hyponymy, synonymy).

    Questions about a concept use its WordNet example sentence; 5-way items with graded
    distractors (random, sister family, ISA up/down), clusters per concept, and train/dev/test
    splits disjoint by concept. Prints the sizes beside the paper's.

    \b
    Examples:
      probegen make wordnetqa                                   # all four probes, nouns
      probegen make wordnetqa --probe definitions --pos both
      probegen make wordnetqa --probe hypernymy --max-hops 3 --distractors random,isa
      probegen make wordnetqa --limit 300 --out /tmp/wnqa-small --release
      probegen make wordnetqa --probe hypernymy --limit 300 --adversarial --against smollm2-135m
      probegen make wordnetqa --wordnet-source pwn31 --probe definitions
      probegen make wordnetqa --wordnet-source tests/data/lmf/es-mini.xml   # Spanish questions
      probegen make wordnetqa --wordnet-source my-wordnet.xml --templates my-questions.yaml
      probegen make wordnetqa --probe definitions --limit 600 --forms 3 --out sets/defs   # sets/defs-form1..3
    """
    from probegen.wordnetqa import dataset as ds_mod
    from probegen.wordnetqa.reference import size_table

    cfg = _config(probe, pos, distractors, contexts, **settings)  # the other options are the config's fields
    name = cfg.name + (f"-adv-{against.strip('/').replace('/', '_')}" if adversarial else "")
    outputs = make_outputs(out, name, obj, n_forms, adversarial)
    runner = Runner(runtime, log=log)  # loads the --against model; rank 0 alone writes and speaks
    echo = runner.main_log(click.echo)
    if adversarial:
        from probegen.wordnetqa.adversarial import AdversarialSettings, build_adversarial

        runner.resolve(against)  # an unknown reference model fails before generation
        ds, twin = build_adversarial(cfg, AdversarialSettings(against), obj.get("wordnet"), obj.get("semcor"), True,
                                     log, runner=runner)
        runner.write(lambda: ds_mod.write(twin, outputs[1], release=release))
        a = ds.manifest["adversarial"]
        echo(f"wrote {outputs[1]} (twin); adversarial: {a['items_changed']} of {a['items']} items got new distractors")
    else:
        ds = ds_mod.build(cfg, wordnet=obj.get("wordnet"), semcor=obj.get("semcor"), progress=runner.progress,
                          log=runner.main_log(log))
    if n_forms:
        write_forms(ds, "wordnetqa", cfg.seed, outputs, obj, runner, lambda d, p: ds_mod.write(d, p, release=release))
        return
    runner.write(lambda: ds_mod.write(ds, outputs[0], release=release))
    echo(f"wrote {outputs[0]}: {len(ds.items)} items")
    echo(size_table(ds.manifest["counts"]))
