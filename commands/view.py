"""``probegen view``: one page showing every item of one or more runs (what the model saw, chose and why)."""

from __future__ import annotations

from pathlib import Path

import click

from probegen.errors import ProbegenError
from probegen.paths import DEFAULT_ROOT


def default_out(runs: tuple[str, ...]) -> Path:
    """``probegen_out/views/<run>.html`` (several runs: their names joined by ``+``, shortened): outside the
    runs, so a run folder stays exactly what eval or bias wrote.

    >>> default_out(("probegen_out/runs/glove-50d__coda21-clean-easy",)).as_posix()
    'probegen_out/views/glove-50d__coda21-clean-easy.html'
    """
    import hashlib

    name = "+".join(Path(r.rstrip("/")).name for r in runs) or "view"
    if len(name) > 120:
        name = name[:100] + "-" + hashlib.sha256(name.encode()).hexdigest()[:12]
    return DEFAULT_ROOT / "views" / f"{name}.html"


@click.command("view")
@click.argument("runs", nargs=-1, required=True, type=click.Path())
@click.option("--out", type=click.Path(), help="HTML file to write [default: probegen_out/views/<run>.html].")
@click.option("--serve", is_flag=True, help="Serve the page on --host:--port instead of writing a file (Ctrl-C stops).")
@click.option("--host", default="127.0.0.1", show_default=True, help="With --serve: address to bind.")
@click.option("--port", default=8766, show_default=True, type=click.IntRange(0, 65535),
              help="With --serve: port (0: a free one).")
@click.option("--items", "items_dir", type=click.Path(),
              help="A `probegen items` output folder: each item's statistics and flags, a 'flagged' filter and "
                   "the item map (figures tab).")
def view(runs: tuple[str, ...], out: str | None, serve: bool, host: str, port: int, items_dir: str | None) -> None:
    """Write one self-contained HTML page showing every item of the RUNS (eval or bias folders).

    For each item: the query as the model saw it (the target hidden by the made-up word), each
    candidate with its score, rank and confidence, the gold and the decision, ties; a CoDA21
    group as its k x k matrix with the chosen matching; a bias run's item under every condition
    side by side; a generate run's raw answers, parse errors and option orders. Filters (right or
    wrong, condition, part of speech, relation, hops, distractor type, margin, text), runs side by
    side (both right / only A / only B / neither, with the items behind each count), and the bias
    plane with clickable points. The page needs no server and makes no request: open it from disk.
    The URL fragment holds the filters and the open item, so a link shows the same view.

    \b
    Examples:
      probegen view probegen_out/runs/smollm2-135m__coda21-clean-easy
      probegen view probegen_out/runs/glove-50d__wqa probegen_out/runs/minilm-l6__wqa --out compare.html
      probegen view probegen_out/bias/minilm-l6 --out bias.html
      probegen view RUN_A RUN_B --items items_out --out items.html   # probegen items RUN_A RUN_B --out items_out
      probegen view probegen_out/bias/minilm-l6 --serve          # http://127.0.0.1:8766/
    """
    from probegen.view.load import load_runs

    if serve and out:
        raise ProbegenError("--out writes a file and --serve serves the page: give one")
    target = Path(out) if out else default_out(runs)
    if not serve:  # before any work: never onto an input, nor a file probegen did not write
        from probegen.io import check_file_replaceable, check_output_not_input

        check_output_not_input(target, list(runs))
        check_file_replaceable(target)
    model = load_runs(runs, log=lambda m: click.echo(m, err=True))
    if items_dir:
        from probegen.view.analysis import item_stats

        model["itemstats"] = item_stats(items_dir, model)
    n = len(model["items"])
    if serve:
        from probegen.view.serve import serve as run_server

        run_server(model, host, port, announce=click.echo)
        return
    from probegen.view.page import write_page

    path = write_page(model, target)
    click.echo(f"{n} items of {len(model['runs'])} run(s)", err=True)
    click.echo(str(path))
