"""The make commands' outputs (``--forms K`` among them) and ``probegen forms``."""

from __future__ import annotations

import functools
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Sequence

import click

from probegen import request_options as opts
from probegen.errors import ProbegenError
from probegen.paths import DEFAULT_ROOT
from probegen.runner import Runner

from .items import irt_option, lm_eval_metric_option
from .options import SEED, F, checked_type, log

if TYPE_CHECKING:
    from probegen.tasks import Dataset


def forms_option(command: F) -> F:
    """``--forms K`` on a make command (its value reaches the command as ``n_forms``)."""
    return click.option("--forms", "n_forms", type=click.IntRange(2, 20), default=None, metavar="K",
                        help="Write K parallel forms instead of one set: <out>-form1 .. <out>-formK, disjoint by "
                             "synset and target lemma, matched on the difficulty strata (see docs/forms.md); "
                             "`probegen forms` checks they are equivalent.")(command)


def make_outputs(out: str | None, name: str, obj: dict[str, Any], n_forms: int | None = None,
                 adversarial: bool = False, inputs: Sequence[str] = ()) -> list[Path]:
    """The folders a make command writes, each checked writable before any work: ``out`` (default
    ``probegen_out/datasets/<name>``), then with ``adversarial`` its twin ``<out>-twin``; with ``n_forms`` K
    its forms instead, the sibling folders ``<out>-form1`` .. ``<out>-formK``."""
    from probegen.io import ensure_writable

    path = Path(out) if out else DEFAULT_ROOT / "datasets" / name
    if n_forms and adversarial:
        raise ProbegenError("--forms is not available with --adversarial; drop one of them")
    if n_forms:
        paths = [path.with_name(f"{path.name}-form{i}") for i in range(1, n_forms + 1)]
    else:
        paths = [path, path.with_name(path.name + "-twin")][: 1 + adversarial]
    for p in paths:
        ensure_writable(p, replace=True, inputs=[*inputs, obj.get("wordnet"), obj.get("semcor")], writer="dataset")
    return paths


def write_forms(ds: Dataset, kind: str, seed: int, paths: list[Path], obj: dict[str, Any], runner: Runner,
                write: Callable[[Any, Path], object]) -> None:
    """Cut the built ``ds`` into one form per folder of ``paths`` and write each with ``write`` (rank 0 alone)."""
    from probegen.forms.split import make_forms

    forms = make_forms(ds, kind, len(paths), seed, [p.name for p in paths], obj.get("wordnet"), obj.get("semcor"),
                       runner.main_log(log))
    for form, path in zip(forms, paths):
        runner.write(functools.partial(write, form, path))
    for path in paths:
        runner.main_log(click.echo)(f"wrote {path}")


@click.command("forms")
@click.argument("runs", nargs=-1, required=True, type=click.Path())
@click.option("--out", required=True, type=click.Path(), help="Output folder (written whole or not at all).")
@click.option("--margin", type=checked_type(opts.FORMS_MARGIN), default=0.03, show_default=True,
              help="Equivalence margin of the TOST (accuracy, +/-).")
@click.option("--alpha", type=checked_type(opts.FORMS_ALPHA), default=0.05, show_default=True,
              help="Level of each TOST (and of the accuracy CIs: 1 - 2 alpha is the TOST's interval).")
@click.option("--bootstrap", "n_boot", type=checked_type(opts.N_BOOT), default=2000, show_default=True,
              help="Cluster-bootstrap replicates (accuracy CIs).")
@click.option("--seed", type=SEED, default=0, show_default=True, help="Bootstrap seed.")
@irt_option("1pl", "IRT difficulties compared across forms (with at least 3 respondents).")
@lm_eval_metric_option
def forms(runs: tuple[str, ...], out: str, margin: float, alpha: float, n_boot: int, seed: int, irt_model: str,
          lm_eval_metric: str) -> None:
    """Are parallel forms equivalent? RUNs are `probegen eval` folders of several respondents (models,
    methods) on the forms of one family (`make ... --forms K`), or other harnesses' per-item results
    on the forms: Every Eval Ever / inspect-ai exports, lm-eval --log_samples of a form's lm-eval
    export (placed by the export's manifest), inspect/EEE files of other tools (docs/exchange.md).

    Per respondent: accuracy on each form with cluster-bootstrap CIs (clustered by group/concept)
    and a TOST between every pair of forms at +/- --margin (cluster-robust SE); the respondents'
    rank correlation across forms (Kendall, Spearman); the item difficulty distributions per form
    (p-values, IRT difficulties) compared with KS tests. Writes report.md, forms.csv,
    equivalence.csv, difficulty.csv, summary.json and forms.png.

    \b
    Examples:
      probegen make coda21 --hard --pos noun --context-scorer first --forms 3 --out sets/coda
      probegen eval --model glove-50d --dataset sets/coda-form1 --out runs/glove-1   # ... every form, every model
      probegen forms runs/glove-1 runs/glove-2 runs/glove-3 runs/minilm-1 runs/minilm-2 runs/minilm-3 --out eq
      probegen forms runs/* --margin 0.05 --out eq-05
      probegen forms runs/glove-1 runs/glove-2 lm-out/M/samples_probegen_coda_form1_*.jsonl \\
                     lm-out/M/samples_probegen_coda_form2_*.jsonl logs/x-1.eval logs/x-2.eval --out eq-x
    """
    from probegen.forms.report import run_forms

    click.echo(run_forms(list(runs), out, margin, alpha, n_boot, seed, None if irt_model == "none" else irt_model,
                         lm_eval_metric))
