"""Causal scoring throughput, and where probegen's speed comes from.

Same model (bundled SmolLM2-135M, float32, CPU), same token ids and same pairs for every method:
  (a) naive: one full forward pass per (query, candidate) pair, batch 1, full logits;
  (b) lm-evaluation-harness style: full sequences in right-padded batches (longest first), the
      LM head and a log-softmax over the vocabulary at EVERY position;
  (c) probegen ``strategy="full"``: the same full sequences, but the LM head runs only at the
      positions whose next token is scored (the continuation), not over the whole context;
  (d) probegen ``strategy="packed"`` (the default): the LM head only at scored positions AND prefix
      reuse: each query and all its candidates form one sequence (prefix + trie of candidates,
      tree attention mask), so a query's context runs once instead of once per candidate.
So b -> c measures the LM head saving, c -> d the prefix reuse. Scores must agree (max difference
printed). Each method runs ``--repeats`` times in alternating order (the round-robin order
rotates every round) so machine noise hits all methods alike; min and median are printed, and
speed-ups use medians. Also prints the raw batched forward throughput (no head) and the effective
tokens/s of (d) counted over the full pair lengths (prefix reuse can take it above 100%).

    .venv/bin/python bench/bench_causal.py [--groups 4] [--repeats 3] [--threads 2] [--out FILE.json]
    .venv/bin/python bench/bench_causal.py --against /path/to/old/checkout --repeats 9 [--out FILE.json]

``--against``: no regression of float32 CPU speed. The packed-vs-lm-eval-style ratio (d/b) of this
tree and of an older checkout, measured in ONE process: the older checkout's ``probegen`` is imported
under another name, and (b), this tree's (d) and the older (d) alternate ``--repeats`` times on the same
token ids, so load from other work hits all three alike; the change is the median over rounds of the
two trees' ratio in that round (default out: bench/results/bench_causal_vs.json).

The table and speed-ups go to ``--out`` [bench/results/bench_causal.json] with the machine, commit and
date; ``bench/render_figures.py`` renders them into docs/figures/speed.md.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

NONCE = "bkatuhla"
PATTERN = "Definition of {nonce} is"

# CoDA21-like contexts (SemCor-style sentences, ~30-40 words) with the target replaced by the nonce
CONTEXTS = [
    "The old fisherman pulled the heavy {n} out of the water at dawn, checked the knots along its edges, and spread it across the rocks so that it could dry before the evening tide came in.",
    "After the long meeting the committee finally agreed that the new {n} would be signed by every member of the board, filed with the court, and made public at the start of next month.",
    "She kept the little {n} on the kitchen windowsill, watering it every morning and turning it toward the light, until its pale green leaves grew thick enough to hide the cracked glass behind it.",
    "When the engine began to overheat on the mountain road, the driver stopped, opened the hood, and found that the {n} had split, leaking hot coolant all over the dusty gravel below.",
    "The children listened quietly as their grandmother described the {n} she had seen as a girl, a tall gray bird that waded through the marsh and speared small fish with its long beak.",
    "In the small village the {n} was respected by everyone, because he settled arguments between neighbours, kept the records of births and marriages, and spoke for the people at the district council.",
    "The recipe calls for a cup of {n}, finely chopped, which should be added to the pan only after the onions have softened and the garlic has turned a light golden brown.",
    "During the storm the sailors lowered the {n} and tied it securely to the mast, hoping that the ship would ride out the wind without losing any more of its rigging to the waves.",
    "Scientists measured the {n} in the lake every week for a year and found that it rose sharply in late summer, when warm water and fertilizer runoff encouraged the algae to spread.",
    "He felt a sudden {n} when he realised that the letter had been sent to the wrong address, and that the offer he had waited for all winter had probably been given to someone else.",
    "The museum displayed the ancient {n} in a glass case near the entrance, where visitors could see the fine carvings on its handle and the dark stains left by centuries of use.",
    "Before the race the runners gathered near the {n}, stretching their legs and chatting nervously, while the officials checked the timing equipment and the crowd slowly filled the stands along the track.",
]

# WordNet-style glosses (~10-15 words)
DEFINITIONS = [
    "a trap made of netting to catch fish or birds or insects",
    "a formal written agreement between two or more parties that is enforceable by law",
    "a plant cultivated for its flowers or foliage and grown indoors in a pot",
    "a flexible tube that carries liquid coolant between the engine and the radiator of a car",
    "a large wading bird with long legs, a long neck and a long pointed bill",
    "the elected head of a village or small town who settles disputes and keeps records",
    "an aromatic herb whose leaves are used fresh or dried to flavour cooked food",
    "a piece of strong cloth fastened to a mast to catch the wind and propel a vessel",
    "the concentration of dissolved nutrients in a body of water measured over time",
    "a feeling of sudden disappointment or regret caused by a mistake that cannot be undone",
    "an edged tool with a handle used in former times for cutting or as a weapon",
    "the line or place at which a race begins and from which competitors start",
]


def make_data(n_queries: int, n_cands: int) -> tuple[list[str], list[str]]:
    """``n_queries`` unique pattern queries and ``n_cands`` unique candidate definitions."""
    queries, cands = [], []
    for i in range(n_queries):
        ctx = CONTEXTS[i % len(CONTEXTS)].format(n=NONCE)
        if i >= len(CONTEXTS):  # unique variants beyond the hard-coded set
            ctx = f"In part {i // len(CONTEXTS) + 1} of the story, " + ctx[0].lower() + ctx[1:]
        queries.append(f"{ctx} {PATTERN.format(nonce=NONCE)}")
    for j in range(n_cands):
        d = DEFINITIONS[j % len(DEFINITIONS)]
        if j >= len(DEFINITIONS):
            d = f"{d}, especially one of type {j // len(DEFINITIONS) + 1}"
        cands.append(d)
    return queries, cands


def dataset_data(path: str, n_groups: int) -> tuple[list[list[str]], list[list[str]]]:
    """Real CoDA21 rows: per group, its k rendered queries and its k definitions (as probegen eval renders them)."""
    from probegen.coda21.dataset import load
    from probegen.coda21.render import patterns_for, render_group

    ds = load(path)
    pats = patterns_for()
    groups = ds.groups[:n_groups]
    return [render_group(g, "pattern", "context", NONCE, pats) for g in groups], [[it.definition for it in g.items] for g in groups]


def load_pairs(args, scorer) -> tuple:
    """The bench's pairs (real CoDA21 groups from ``--dataset`` if it exists, else synthetic), encoded once
    with ``scorer`` so every method sees identical token ids."""
    import numpy as np

    if os.path.exists(args.dataset):
        group_q, group_c = dataset_data(args.dataset, args.groups)
        print(f"data: {len(group_q)} real groups from {args.dataset}")
        data_desc = f"{len(group_q)} real CoDA21 groups ({os.path.basename(os.path.normpath(args.dataset))})"
    else:
        q, c = make_data(args.queries, args.candidates)
        group_q, group_c = [q], [c]
        print(f"data: synthetic CoDA21-like sentences ({args.dataset} not found)")
        data_desc = f"synthetic CoDA21-like sentences ({args.queries} queries x {args.candidates} definitions)"
    queries = [q for qs in group_q for q in qs]
    cand_lists = [cs for qs, cs in zip(group_q, group_c) for _ in qs]
    pairs = [(q, c) for q, cs in zip(queries, cand_lists) for c in cs]
    encoded = [scorer.encode_pair(q, c) for q, c in pairs]  # identical token ids for every method
    seqs = [list(p) + list(c) for p, c in encoded]
    n_tokens = sum(len(s) for s in seqs)
    print(f"      {len(queries)} queries, {len(pairs)} pairs, "
          f"{n_tokens} tokens in full pairs (mean query {np.mean([len(p) for p, _ in encoded]):.0f}, "
          f"candidate {np.mean([len(c) for _, c in encoded]):.0f} tokens)")
    return queries, cand_lists, pairs, encoded, seqs, n_tokens, data_desc


def lm_eval_runner(model, encoded, seqs, batch: int, results: dict) -> tuple:
    """(padded, longest-first order, run): method (b), full sequences in right-padded batches with the head
    and a log-softmax at every position, as lm-evaluation-harness scores loglikelihood requests."""
    import numpy as np
    import torch

    def padded(idx: list[int]) -> tuple[torch.Tensor, torch.Tensor]:
        L = max(len(seqs[i]) for i in idx)
        ids = torch.zeros((len(idx), L), dtype=torch.long)
        mask = torch.zeros((len(idx), L), dtype=torch.long)
        for r, i in enumerate(idx):
            ids[r, : len(seqs[i])] = torch.tensor(seqs[i])
            mask[r, : len(seqs[i])] = 1
        return ids, mask

    order = sorted(range(len(seqs)), key=lambda i: -len(seqs[i]))  # lm-eval sorts longest first

    def lm_eval_style() -> None:
        out = np.zeros(len(seqs))
        with torch.inference_mode():
            for k in range(0, len(order), batch):
                idx = order[k : k + batch]
                ids, mask = padded(idx)
                lp = torch.log_softmax(model(input_ids=ids, attention_mask=mask).logits, dim=-1)
                for r, i in enumerate(idx):
                    p, c = encoded[i]
                    pos = torch.arange(len(p) - 1, len(seqs[i]) - 1)
                    out[i] = lp[r, pos, torch.tensor(c)].sum().item()
        results["lm-eval"] = out

    return padded, order, lm_eval_style


def alternating(methods: dict, repeats: int) -> dict[str, list[float]]:
    """Run every method ``repeats`` times, rotating the order each round; seconds per run."""
    names = list(methods)
    times: dict[str, list[float]] = {n: [] for n in names}
    for r in range(repeats):
        order = names[r % len(names) :] + names[: r % len(names)]
        for n in order:
            t = time.perf_counter()
            methods[n]()
            times[n].append(time.perf_counter() - t)
    return times


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--queries", type=int, default=8, help="synthetic data: queries")
    ap.add_argument("--candidates", type=int, default=8, help="synthetic data: candidates per query")
    ap.add_argument("--batch", type=int, default=16, help="batch size of the lm-eval-style baseline (b)")
    ap.add_argument("--dataset", default="probegen_out/datasets/coda21-clean-hard",
                    help="real CoDA21 dataset to take groups from (synthetic sentences if it does not exist)")
    ap.add_argument("--groups", type=int, default=4, help="groups taken from --dataset")
    ap.add_argument("--repeats", type=int, default=3, help="timed runs per method (alternating order)")
    ap.add_argument("--no-naive", action="store_true", help="skip the (slow) naive loop")
    ap.add_argument("--threads", type=int, default=min(2, os.cpu_count() or 1))
    ap.add_argument("--out", default=None, help="result JSON [default: bench/results/bench_causal.json]")
    ap.add_argument("--against", default=None, help="an older checkout to compare d/b with (same run, rotating)")
    args = ap.parse_args()
    if args.against:
        return against(args)

    import numpy as np
    import torch

    torch.set_num_threads(args.threads)
    from probegen.models import ModelStore, load_scorer

    # one store: every scorer below shares the loaded weights, so no timed run includes loading the model
    store = ModelStore()
    t0 = time.perf_counter()
    scorer = load_scorer("smollm2-135m", cache=False, device="cpu", dtype="float32", store=store)
    print(f"model load: {time.perf_counter() - t0:.1f} s (threads={args.threads})")
    model = scorer.model
    queries, cand_lists, pairs, encoded, seqs, n_tokens, data_desc = load_pairs(args, scorer)
    results: dict[str, np.ndarray] = {}

    def naive() -> None:
        out = []
        with torch.inference_mode():
            for (p, c), s in zip(encoded, seqs):
                lp = torch.log_softmax(model(input_ids=torch.tensor([s])).logits[0], dim=-1)
                pos = torch.arange(len(p) - 1, len(s) - 1)
                out.append(lp[pos, torch.tensor(c)].sum().item())
        results["naive"] = np.array(out)

    padded, order, lm_eval_style = lm_eval_runner(model, encoded, seqs, args.batch, results)

    def raw_forward() -> None:
        base = model.get_decoder()
        with torch.inference_mode():
            for k in range(0, len(order), args.batch):
                ids, mask = padded(order[k : k + args.batch])
                base(input_ids=ids, attention_mask=mask)

    def probegen(strategy: str):
        def run() -> None:
            s = load_scorer("smollm2-135m", cache=False, strategy=strategy, device="cpu", dtype="float32", store=store)
            results[strategy] = np.concatenate(s.score(queries, cand_lists))  # fresh scorer: nothing memoised
        return run

    methods = {
        "(a) naive loop, batch 1, full logits": naive,
        f"(b) lm-eval style, batch {args.batch}, full logits": lm_eval_style,
        "(c) probegen full sequences, head at scored pos.": probegen("full"),
        "(d) probegen packed: (c) + prefix reuse": probegen("packed"),
        "    raw batched forward, no LM head": raw_forward,
    }
    if args.no_naive:
        del methods["(a) naive loop, batch 1, full logits"]
    # warm-up: thread pools, allocator, the scorer's one-time self-check of the packed path
    for strategy in ("packed", "full"):
        load_scorer("smollm2-135m", cache=False, strategy=strategy, device="cpu", dtype="float32",
                    store=store).score(["Warm up."], [["a short text"]])
    with torch.inference_mode():
        model(input_ids=torch.tensor([seqs[0]]))

    times = alternating(methods, args.repeats)
    n = len(pairs)
    med = {k: statistics.median(v) for k, v in times.items()}
    print(f"\n{'method':<50} {'min s':>7} {'median s':>9} {'pairs/s (median)':>17}")
    for label, ts in times.items():
        print(f"{label:<50} {min(ts):>7.2f} {med[label]:>9.2f} {n / med[label]:>17.1f}")
    keys = list(methods)
    b, c, d = (k for k in keys if k.startswith(("(b)", "(c)", "(d)")))
    print(f"\nspeed-ups (medians, {args.repeats} alternating runs each):")
    if not args.no_naive:
        print(f"  d/a (everything vs naive loop):           {med[keys[0]] / med[d]:.1f}x")
    print(f"  c/b (LM head only at scored positions):   {med[b] / med[c]:.1f}x")
    print(f"  d/c (prefix reuse, packed):               {med[c] / med[d]:.1f}x")
    print(f"  d/b (probegen vs lm-eval style):          {med[b] / med[d]:.1f}x")
    raw = med["    raw batched forward, no LM head"]
    print(f"raw batched forward: {n_tokens / raw:,.0f} tokens/s; probegen packed effective: {n_tokens / med[d]:,.0f} "
          f"tokens/s ({100 * raw / med[d]:.0f}% of raw)")
    ref = results["lm-eval"]
    diffs = {k: float(np.abs(v - ref).max()) for k, v in results.items() if k != "lm-eval"}
    print("max |score difference| vs lm-eval style: " + ", ".join(f"{k} {v:.2e}" for k, v in diffs.items()))
    from benchlib import write_result

    table = [{"method": label.strip(), "min_s": round(min(ts), 3), "median_s": round(med[label], 3),
              "pairs_per_s": round(n / med[label], 2)} for label, ts in times.items()]
    speedups = {"head": med[b] / med[c], "prefix_reuse": med[c] / med[d], "vs_lm_eval": med[b] / med[d]}
    if not args.no_naive:
        speedups["vs_naive"] = med[keys[0]] / med[d]
    write_result(args.out, "bench_causal", table,
                 config={"model": "smollm2-135m", "dtype": "float32", "device": "cpu", "threads": args.threads,
                         "batch": args.batch, "repeats": args.repeats, "data": data_desc, "pairs": n,
                         "tokens": int(n_tokens)},
                 speedups={k: round(v, 2) for k, v in speedups.items()},
                 max_abs_diff_vs_lm_eval={k: float(f"{v:.3g}") for k, v in diffs.items()})
    if max(diffs.values()) > 1e-3:
        sys.exit("scores differ by more than 1e-3")


def import_tree(path: str, alias: str = "probegen_against"):
    """The ``probegen`` package of another checkout, imported under ``alias`` beside this tree's (its
    modules import each other relatively), so both run in one process on the same load."""
    import importlib
    import importlib.util

    init = os.path.join(path, "probegen", "__init__.py")
    spec = importlib.util.spec_from_file_location(alias, init, submodule_search_locations=[os.path.dirname(init)])
    module = importlib.util.module_from_spec(spec)
    sys.modules[alias] = module
    spec.loader.exec_module(module)
    return importlib.import_module(f"{alias}.models")


def against(args) -> None:
    """d/b of this tree and of ``args.against`` in ONE process: (b) and both trees' (d) alternate
    ``--repeats`` times on the same token ids, so load from other work hits all three alike."""
    import numpy as np
    import torch
    from benchlib import machine, write_result

    from probegen.models import ModelStore, load_scorer

    torch.set_num_threads(args.threads)
    old = import_tree(os.path.abspath(args.against))
    kw = {"cache": False, "device": "cpu", "dtype": "float32", "strategy": "packed"}
    store, old_store = ModelStore(), old.ModelStore()
    scorer = load_scorer("smollm2-135m", store=store, **kw)
    queries, cand_lists, _, encoded, seqs, _, data_desc = load_pairs(args, scorer)
    results: dict[str, np.ndarray] = {}
    _, _, lm_eval_style = lm_eval_runner(scorer.model, encoded, seqs, args.batch, results)

    def packed(loader, st, key: str):
        def run() -> None:  # a fresh scorer each time: nothing memoised
            results[key] = np.concatenate(loader("smollm2-135m", store=st, **kw).score(queries, cand_lists))
        return run

    methods = {"(b) lm-eval style": lm_eval_style, "(d) this tree": packed(load_scorer, store, "this tree"),
               "(d) against": packed(old.load_scorer, old_store, "against")}
    for run in methods.values():  # warm-up: thread pools, allocator, each tree's self-check
        run()
    times = alternating(methods, args.repeats)
    med = {k: statistics.median(v) for k, v in times.items()}
    ratio = {k: med["(b) lm-eval style"] / med[f"(d) {k}"] for k in ("this tree", "against")}
    # the change per round (b cancels: the ratio of the two d/b is t_against / t_this), then its median: the
    # two trees' runs of a round are seconds apart, while the load can move by 10x between rounds
    paired = [old / new for new, old in zip(times["(d) this tree"], times["(d) against"])]
    change = statistics.median(paired) - 1
    diff = float(np.abs(results["this tree"] - results["against"]).max())
    print(f"d/b (medians of {args.repeats} alternating runs): this tree {ratio['this tree']:.2f}, {args.against} "
          f"{ratio['against']:.2f}; change per round {', '.join(f'{100 * (p - 1):+.0f}%' for p in paired)}: median "
          f"{100 * change:+.1f}% (scores differ by at most {diff:.2g})")
    rows = [{"method": k, "seconds": [round(t, 3) for t in v], "median_s": round(med[k], 3),
             "pairs_per_s": round(len(encoded) / med[k], 2)} for k, v in times.items()]
    write_result(args.out or os.path.join(os.path.dirname(os.path.abspath(__file__)), "results", "bench_causal_vs.json"),
                 "bench_causal", rows,
                 config={"repeats": args.repeats, "threads": args.threads, "batch": args.batch, "against": args.against,
                         "data": data_desc, "pairs": len(encoded)},
                 vs_lm_eval={k: round(v, 3) for k, v in ratio.items()}, change=round(change, 4),
                 change_per_round=[round(p - 1, 4) for p in paired],
                 within_5_percent=bool(change >= -0.05), max_abs_score_diff=float(f"{diff:.3g}"), machine_info=machine())


if __name__ == "__main__":
    main()
