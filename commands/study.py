"""``probegen study``: human baselines."""

from __future__ import annotations

from pathlib import Path

import click

from probegen import request_options as opts
from probegen.paths import DEFAULT_ROOT

from .options import SEED, checked_type

STUDIES = DEFAULT_ROOT / "studies"


@click.group("study")
def study() -> None:
    """Human baselines: people answer the same items as models, in Full, Context and Word conditions.

    \b
    Examples:
      probegen study make probegen_out/datasets/wordnetqa-definitions --n 100 --annotators 2 --overlap 50
      probegen study serve probegen_out/studies/wordnetqa-definitions
      probegen study score probegen_out/studies/wordnetqa-definitions --model probegen_out/bias/minilm-l6
    """


@study.command("make")
@click.argument("dataset", type=click.Path())
@click.option("--conditions", default="full,context,word", show_default=True,
              help="Comma list of full (whole input), context (target hidden), word (target alone).")
@click.option("--n", "n", default=100, show_default=True, type=click.IntRange(min=1),
              help="Items sampled (WordNetQA: questions, one per concept; CoDA21: groups), shown in every condition.")
@click.option("--annotators", default=2, show_default=True, type=click.IntRange(min=1),
              help="Annotators per condition.")
@click.option("--overlap", default=50, show_default=True, type=click.IntRange(min=0),
              help="Items every annotator of a condition answers (agreement); the rest are dealt out in turn.")
@click.option("--seed", type=SEED, default=0, show_default=True, help="Seed for sampling, assignment and orders.")
@click.option("--split", type=click.Choice(["train", "dev", "test"]), default=None,
              help="WordNetQA: sample from one split.")
@click.option("--out", type=click.Path(), help="Study directory [default: probegen_out/studies/<dataset>].")
def make(dataset: str, conditions: str, n: int, annotators: int, overlap: int, seed: int, split: str | None,
         out: str | None) -> None:
    """Sample items and write a study directory (items, assignment, gold apart, tokens, manifest).

    Works on probegen WordNetQA and CoDA21 datasets and on the original CoDA21 JSON. The
    directory appears whole or not at all and is never overwritten. Each annotator gets a
    secret token; the links are printed here and by `probegen study serve`.

    \b
    Examples:
      probegen study make probegen_out/datasets/wordnetqa-definitions --split test
      probegen study make probegen_out/datasets/coda21-clean-easy --n 20 --annotators 2 --overlap 10
      probegen study make coda21.json --conditions full,context --n 10 --annotators 1 --overlap 0 --out my-study
    """
    from probegen.run.command_requests import StudyRequest, run_study_request

    req = StudyRequest(dataset=dataset, conditions=tuple(c.strip() for c in conditions.split(",") if c.strip()), n=n,
                       annotators=annotators, overlap=overlap, seed=seed, split=split, out=out)
    built = run_study_request(req, STUDIES)
    out_dir = req.out_dir(STUDIES)
    m = built["manifest"]
    per = m["counts"]["per_annotator"]
    click.echo(f"wrote {out_dir}: {m['n']} {m['dataset']['kind']} {m['unit']}s x {len(m['conditions'])} condition(s), "
               f"{len(per)} annotators ({', '.join(f'{a}: {k}' for a, k in per.items())} items)")
    for cond, reasons in m["counts"]["kept_out"].items():
        for why, k in reasons.items():  # as `probegen bias` keeps them out of that condition's ratio
            click.echo(f"kept out of {cond}: {k} item(s) (shown in the other conditions): {why}")
    from probegen.study.server import annotator_links
    from probegen.study.store import load_study

    click.echo("annotator links (secret; they work once `probegen study serve` runs with the default host and port):")
    for line in annotator_links(load_study(out_dir), "http://127.0.0.1:8765"):
        click.echo(line)
    click.echo(f"next: probegen study serve {out_dir}")


@study.command("serve")
@click.argument("study_dir", metavar="STUDY", type=click.Path())
@click.option("--port", default=8765, show_default=True, type=click.IntRange(0, 65535), help="Port (0: any free port).")
@click.option("--host", default="127.0.0.1", show_default=True,
              help="Address to bind; other than loopback only on a trusted network.")
def serve(study_dir: str, port: int, host: str) -> None:
    """Serve the annotator pages; answers are saved on the server as they are given.

    Prints one link per annotator (the token in it keeps annotators apart). Reloading a page
    resumes at the first unanswered item; Ctrl-C stops the server and loses nothing. While it
    runs, `probegen study import` (and a second server) on the same study are refused.

    \b
    Examples:
      probegen study serve probegen_out/studies/wordnetqa-definitions
      probegen study serve my-study --port 9000
    """
    from probegen.study.server import serve as run

    run(study_dir, host=host, port=port, announce=lambda m: click.echo(m, err=False))


@study.command("export")
@click.argument("study_dir", metavar="STUDY", type=click.Path())
@click.option("--out", type=click.Path(), required=True, help="CSV file to write.")
def export(study_dir: str, out: str) -> None:
    """Write the study as CSV (one row per annotator and item, no gold) to run it elsewhere.

    Answer columns are filled where answers are already stored. Fill in `answer` (a letter;
    for a CoDA21 group one letter per row, comma-separated) and `guess` (context items), then
    `probegen study import`. A cell that a spreadsheet would read as a formula (starting with
    = + - @) is written with a leading ' that import takes off again.

    \b
    Examples:
      probegen study export probegen_out/studies/wordnetqa-definitions --out answers.csv
    """
    from probegen.io import check_output_not_input
    from probegen.study.csvio import export_csv
    from probegen.study.store import load_study

    check_output_not_input(out, [study_dir])  # e.g. not onto one of its answer files
    n = export_csv(load_study(study_dir), out)
    click.echo(f"wrote {out} ({n} rows)")


@study.command("import")
@click.argument("study_dir", metavar="STUDY", type=click.Path())
@click.argument("csv_file", metavar="CSV", type=click.Path())
def import_cmd(study_dir: str, csv_file: str) -> None:
    """Store answers from a CSV (the `study export` columns); every row is checked first.

    Rows with an empty answer are skipped; an answer already stored identically is skipped;
    bad rows are reported with their line numbers and then nothing is stored. Refused while
    `probegen study serve` runs on the study (one writer per study): stop the server first.

    \b
    Examples:
      probegen study import probegen_out/studies/wordnetqa-definitions answers.csv
    """
    from probegen.study.csvio import import_csv
    from probegen.study.store import load_study

    c = import_csv(load_study(study_dir), csv_file)
    click.echo(f"imported {c['new']} answer(s) from {csv_file} ({c['already_stored']} already stored, {c['blank']} "
               "blank rows)")


@study.command("score")
@click.argument("study_dir", metavar="STUDY", type=click.Path())
@click.option("--model", "models", multiple=True, type=click.Path(),
              help="A `probegen bias` output directory on the study's dataset; repeat for several. Adds the "
                   "model-human gap table.")
@click.option("--bootstrap", "n_boot", default=1000, show_default=True, type=checked_type(opts.N_BOOT),
              help="Bootstrap replicates.")
@click.option("--seed", type=SEED, default=0, show_default=True, help="Bootstrap seed.")
@click.option("--out", type=click.Path(), help="Report directory [default: STUDY/score].")
def score(study_dir: str, models: tuple[str, ...], n_boot: int, seed: int, out: str | None) -> None:
    """Human accuracy per condition with CIs, agreement, human Bias_C/Bias_W, and model-human gaps.

    Writes results.json, report.md and bias_plane.png (humans as a black star; models, with
    --model, on the same items).

    \b
    Examples:
      probegen study score probegen_out/studies/wordnetqa-definitions
      probegen study score probegen_out/studies/wordnetqa-definitions --model probegen_out/bias/minilm-l6 --model probegen_out/bias/glove-50d
    """  # noqa: E501 (the examples are shown verbatim by --help)
    from probegen.diagnostics.human import summary
    from probegen.io import ensure_writable
    from probegen.run.human import score_study, write_score

    out_dir = Path(out) if out else Path(study_dir) / "score"
    # written by atomic_dir; by default inside the study, never onto it or a run it reads
    ensure_writable(out_dir, replace=True, inputs=list(models), homes=[study_dir], writer="run")
    res = score_study(study_dir, list(models), n_boot=n_boot, seed=seed)
    write_score(res, out_dir)
    click.echo(summary(res))
    click.echo(f"report: {out_dir / 'report.md'}")
