"""How fast `probegen view` pages are written, open and filter, in headless Chromium.

Builds real runs (``probegen eval`` of glove-50d with alignment and with simple matching, and a
glove-50d ``bias`` run; subprocesses) on a CoDA21 set when one has been built (else on the WordNetQA
release definitions sample), writes pages with ``probegen view`` (timed),
and opens each from disk in Debian's Chromium (Playwright, no browser download) ``--repeats``
times: ready is the page's own ``data-ready-at`` (ms from navigation start until the page has
drawn), a filter is timed in the page from the change event to the redrawn list ("wrong only",
and sorting by margin). Medians go to ``--out`` [bench/results/bench_viewer.json] with the machine
(and the browser's version), commit and date; ``bench/render_figures.py`` renders them into
docs/figures/viewer.md.

    .venv/bin/python bench/bench_viewer.py [--dataset probegen_out/datasets/coda21-clean-easy] [--out FILE.json]
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_position import release_dir  # noqa: E402
from benchlib import machine, write_result  # noqa: E402

REPO = Path(__file__).resolve().parent.parent

#: dispatch a change on a filter and time the synchronous redraw (the page re-renders in its handler)
TIME_CHANGE = """([id, value]) => {
  const el = document.getElementById(id);
  el.value = value;
  const t = performance.now();
  el.dispatchEvent(new Event('change'));
  return performance.now() - t;
}"""


def probegen(*argv: str) -> float:
    """Run one probegen command (output discarded); its wall seconds."""
    t = time.perf_counter()
    subprocess.run([sys.executable, "-m", "probegen", *argv], check=True, cwd=REPO, stdout=subprocess.DEVNULL)
    return time.perf_counter() - t


def measure(browser, path: Path, repeats: int) -> dict:
    """Median ready time and filter times of ``repeats`` fresh openings of ``path``."""
    ready, wrong, sort = [], [], []
    for _ in range(repeats):
        ctx = browser.new_context(viewport={"width": 1400, "height": 900})
        page = ctx.new_page()
        page.goto(path.resolve().as_uri())
        page.wait_for_selector("body[data-ready='1']", timeout=60000)
        ready.append(float(page.get_attribute("body", "data-ready-at")))
        wrong.append(page.evaluate(TIME_CHANGE, ["f-ok", "wrong"]))
        sort.append(page.evaluate(TIME_CHANGE, ["f-sort", "margin"]))
        ctx.close()
    return {"ready_ms": round(statistics.median(ready)), "wrong_only_ms": round(statistics.median(wrong), 1),
            "sort_margin_ms": round(statistics.median(sort), 1)}


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--dataset", default="probegen_out/datasets/coda21-clean-easy",
                    help="the set the runs score (the release definitions sample when absent)")
    ap.add_argument("--repeats", type=int, default=3, help="openings per page (medians)")
    ap.add_argument("--out", default=None, help="result JSON [default: bench/results/bench_viewer.json]")
    args = ap.parse_args(argv)
    chromium = shutil.which("chromium") or ("/usr/bin/chromium" if Path("/usr/bin/chromium").exists() else None)
    if chromium is None:
        sys.exit("bench_viewer: Debian's chromium is not installed (`make test` installs it)")
    dataset = REPO / args.dataset
    if not dataset.exists():
        rel = release_dir()
        if rel is None:
            sys.exit(f"bench_viewer: {args.dataset} is not built and the release sample is not in the shared data")
        dataset = rel / "definitions-train-sample.jsonl"
    name = dataset.name.removesuffix(".jsonl")
    from playwright.sync_api import sync_playwright

    rows = []
    with tempfile.TemporaryDirectory(prefix="bench_viewer-") as tmp:
        t = Path(tmp)
        # two runs to compare: glove-50d aligned one-to-one and matched simply (fast on a CPU; the page is the same
        # for any model)
        for run, extra in (("align", []), ("simple", ["--matching", "simple"])):
            secs = probegen("eval", "--model", "glove-50d", "--dataset", str(dataset), "--device", "cpu", *extra,
                            "--out", str(t / run))
            print(f"eval glove-50d ({run}) on {name}: {secs:.1f} s")
        print(f"bias glove-50d on {name}: {probegen('bias', '--model', 'glove-50d', '--dataset', str(dataset), '--device', 'cpu', '--bootstrap', '200', '--out', str(t / 'bias')):.1f} s")
        pages = {f"{name}: two glove-50d runs (alignment, simple matching) side by side": [t / "align", t / "simple"],
                 f"{name}: glove-50d bias run (every condition)": [t / "bias"]}
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=chromium, headless=True, args=["--no-sandbox"])
            version = browser.version
            for label, runs in pages.items():
                html = t / f"page-{len(rows)}.html"
                write_s = probegen("view", *map(str, runs), "--out", str(html))
                row = {"page": label, "mb": round(html.stat().st_size / 1e6, 1), "write_s": round(write_s, 2),
                       **measure(browser, html, args.repeats)}
                print(row)
                rows.append(row)
            browser.close()
    write_result(args.out, "bench_viewer", rows, machine_info={**machine(), "browser": f"Chromium {version} (headless)"},
                 config={"dataset": name, "repeats": args.repeats})


if __name__ == "__main__":
    main()
