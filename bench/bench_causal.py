"""Causal scoring throughput: naive loop vs. batched full sequences vs. probegen's scorer.

Same model (bundled SmolLM2-135M, float32, CPU) and same data for all three:
  (a) naive: one full forward pass per (query, candidate) pair, batch size 1;
  (b) lm-evaluation-harness style: full sequences, right-padded batches of 16, no prefix reuse;
  (c) probegen: ``load_scorer("smollm2-135m", cache=False).score(...)`` (prefix reuse).
All three must give the same scores. Also reports the model's raw forward throughput (tokens/s
of batched full-sequence forward passes) and the effective tokens/s probegen reaches, counted
over the full pair lengths (so prefix reuse can take it above 100%).

    .venv/bin/python bench/bench_causal.py [--queries 8] [--candidates 8] [--threads 2]
"""

from __future__ import annotations

import argparse
import os
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
    from probegen.coda21.render import render_group
    from probegen.templating import coda21_patterns

    ds = load(path)
    pats = coda21_patterns()
    groups = ds.groups[:n_groups]
    return [render_group(g, "pattern", "context", NONCE, pats) for g in groups], [[it.definition for it in g.items] for g in groups]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--queries", type=int, default=8)
    ap.add_argument("--candidates", type=int, default=8)
    ap.add_argument("--pairs", type=int, default=None, help="shortcut: about this many pairs (queries = candidates = sqrt)")
    ap.add_argument("--batch", type=int, default=16, help="batch size of the lm-eval-style baseline (b)")
    ap.add_argument("--dataset", default="probegen_out/datasets/coda21-clean-hard",
                    help="real CoDA21 dataset to take groups from (synthetic sentences if it does not exist)")
    ap.add_argument("--groups", type=int, default=6, help="groups taken from --dataset")
    ap.add_argument("--threads", type=int, default=min(2, os.cpu_count() or 1))
    args = ap.parse_args()
    if args.pairs:
        args.queries = args.candidates = max(1, round(args.pairs**0.5))

    import numpy as np
    import torch

    torch.set_num_threads(args.threads)
    from probegen.models import load_scorer

    t0 = time.perf_counter()
    scorer = load_scorer("smollm2-135m", cache=False)
    print(f"model load: {time.perf_counter() - t0:.1f} s (threads={args.threads})")
    model = scorer.model
    if os.path.exists(args.dataset):
        group_q, group_c = dataset_data(args.dataset, args.groups)
        print(f"data: {len(group_q)} real groups from {args.dataset}")
    else:
        q, c = make_data(args.queries, args.candidates)
        group_q, group_c = [q], [c]
        print(f"data: synthetic ({args.dataset} not found)")
    queries = [q for qs in group_q for q in qs]
    cand_lists = [cs for qs, cs in zip(group_q, group_c) for _ in qs]
    pairs = [(q, c) for q, cs in zip(queries, cand_lists) for c in cs]
    encoded = [scorer.encode_pair(q, c) for q, c in pairs]  # identical token ids for all three methods
    seqs = [list(p) + list(c) for p, c in encoded]
    n_tokens = sum(len(s) for s in seqs)
    print(f"      {len(queries)} queries, {len(pairs)} pairs, "
          f"{n_tokens} tokens in full pairs (mean query {np.mean([len(p) for p, _ in encoded]):.0f}, "
          f"candidate {np.mean([len(c) for _, c in encoded]):.0f} tokens)")

    def naive() -> np.ndarray:
        out = []
        with torch.inference_mode():
            for (p, c), s in zip(encoded, seqs):
                lp = torch.log_softmax(model(input_ids=torch.tensor([s])).logits[0], dim=-1)
                pos = torch.arange(len(p) - 1, len(s) - 1)
                out.append(lp[pos, torch.tensor(c)].sum().item())
        return np.array(out)

    def batched() -> np.ndarray:
        out = np.zeros(len(seqs))
        order = sorted(range(len(seqs)), key=lambda i: -len(seqs[i]))  # lm-eval sorts longest first
        with torch.inference_mode():
            for k in range(0, len(order), args.batch):
                idx = order[k : k + args.batch]
                L = max(len(seqs[i]) for i in idx)
                ids = torch.zeros((len(idx), L), dtype=torch.long)
                mask = torch.zeros((len(idx), L), dtype=torch.long)
                for r, i in enumerate(idx):
                    ids[r, : len(seqs[i])] = torch.tensor(seqs[i])
                    mask[r, : len(seqs[i])] = 1
                lp = torch.log_softmax(model(input_ids=ids, attention_mask=mask).logits, dim=-1)
                for r, i in enumerate(idx):
                    p, c = encoded[i]
                    pos = torch.arange(len(p) - 1, len(seqs[i]) - 1)
                    out[i] = lp[r, pos, torch.tensor(c)].sum().item()
        return out

    def raw_forward() -> int:
        order = sorted(range(len(seqs)), key=lambda i: -len(seqs[i]))
        with torch.inference_mode():
            for k in range(0, len(order), args.batch):
                idx = order[k : k + args.batch]
                L = max(len(seqs[i]) for i in idx)
                ids = torch.zeros((len(idx), L), dtype=torch.long)
                mask = torch.zeros((len(idx), L), dtype=torch.long)
                for r, i in enumerate(idx):
                    ids[r, : len(seqs[i])] = torch.tensor(seqs[i])
                    mask[r, : len(seqs[i])] = 1
                model(input_ids=ids, attention_mask=mask)
        return n_tokens

    def probegen(strategy: str = "packed") -> np.ndarray:
        s = load_scorer("smollm2-135m", cache=False, strategy=strategy)  # fresh scorer: nothing memoised
        return np.concatenate(s.score(queries, cand_lists))

    # warm-up (thread pools, allocator, the scorer's one-time prefix-sharing self-check)
    for strategy in ("packed", "kv"):
        load_scorer("smollm2-135m", cache=False, strategy=strategy).score(["Warm up."], [["a short text"]])
    with torch.inference_mode():
        model(input_ids=torch.tensor([seqs[0]]))

    def timed(fn):
        t = time.perf_counter()
        r = fn()
        return r, time.perf_counter() - t

    (_, t_raw) = timed(raw_forward)
    (s_c, t_c) = timed(probegen)
    (s_kv, t_kv) = timed(lambda: probegen("kv"))
    (s_b, t_b) = timed(batched)
    (s_a, t_a) = timed(naive)

    n = len(pairs)
    print(f"\n{'method':<44} {'time s':>8} {'pairs/s':>9}")
    for label, t in (("(a) naive loop, batch 1", t_a), (f"(b) batched full sequences, batch {args.batch}", t_b),
                     ("(c) probegen scorer (packed prefix sharing)", t_c),
                     ("    probegen, strategy='kv' (KV-cache reuse)", t_kv)):
        print(f"{label:<44} {t:>8.2f} {n / t:>9.1f}")
    print(f"\nspeed-up c/a: {t_a / t_c:.1f}x (target >= 5x)")
    print(f"speed-up c/b: {t_b / t_c:.1f}x (target >= 2x)")
    raw_tps = n_tokens / t_raw
    eff_tps = n_tokens / t_c
    print(f"raw batched forward: {raw_tps:,.0f} tokens/s; probegen effective: {eff_tps:,.0f} tokens/s "
          f"({100 * eff_tps / raw_tps:.0f}% of raw)")
    d_ab, d_ac, d_kv = (np.abs(s_a - x).max() for x in (s_b, s_c, s_kv))
    print(f"max |score difference| vs naive: batched {d_ab:.2e}, probegen {d_ac:.2e}, probegen kv {d_kv:.2e}")
    if max(d_ab, d_ac, d_kv) > 1e-3:
        sys.exit("scores differ by more than 1e-3")


if __name__ == "__main__":
    main()
