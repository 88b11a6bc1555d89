"""CoDA21 scoring throughput on a GPU: lm-eval-style full sequences vs probegen, and masked PLL.

Models are random-init from configs (speed does not depend on the weights), in three shapes:
  smollm2-135m   Llama, hidden 576, 30 layers, 9 heads (3 KV), MLP 1536, vocab 49152
  llama-1.7b     Llama, hidden 2048, 24 layers, 32 heads, MLP 8192, vocab 49152 (SmolLM2-1.7B)
  roberta-large  masked LM, hidden 1024, 24 layers, 16 heads, MLP 4096, vocab 50265 (built as a
                 BertForMaskedLM: RoBERTa-large's layers and compute, BERT's embeddings)
with the bundled SmolLM2 tokenizer (causal) and the bert-base-uncased WordPiece vocabulary of the
bundled MiniLM (masked). Data: real CoDA21 groups rendered as ``probegen eval`` renders them
("<context with bkatuhla> Definition of bkatuhla is" + each definition of the group), from
``--dataset`` (a probegen CoDA21 directory or an original-schema JSON file), else a few groups
built here with probegen's own code (clean-hard, first SemCor context; slow the first time).

Methods (same token ids, same pairs; every score from every method):
  lm-eval style      full sequences, batches of 128 pairs (8 in the CPU smoke run) (longest first), full logits and a
                     log-softmax over the vocabulary at every position (lm-evaluation-harness's
                     loglikelihood path);
  packed, default    probegen's scorer with its CPU default budget (2,048 tokens, 32 rows);
                     ("user" in the budget column: the default passed explicitly);
  packed, auto       the same with the budget sized to the device (searched, see
                     probegen/scorers/_budget.py; search time printed separately);
  full, auto         probegen's full-sequence path (LM head only at scored positions), auto budget;
  PLL / word-l2r     the masked scorer, default and auto budgets.
Each method runs ``--repeats`` times in rotating order per model; pairs/s use the median, and
ratios are against the lm-eval-style baseline measured in the same run.

    .venv/bin/python bench/bench_gpu.py [--dataset DIR] [--dtype auto] [--repeats 3]
    .venv/bin/python bench/bench_gpu.py --cpu-smoke      # tiny shapes, seconds (automatic without CUDA)
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

NONCE = "bkatuhla"

SHAPES = {
    "smollm2-135m": dict(kind="causal", hidden_size=576, num_hidden_layers=30, num_attention_heads=9,
                         num_key_value_heads=3, intermediate_size=1536, vocab_size=49152, tie_word_embeddings=True),
    "llama-1.7b": dict(kind="causal", hidden_size=2048, num_hidden_layers=24, num_attention_heads=32,
                       num_key_value_heads=32, intermediate_size=8192, vocab_size=49152, tie_word_embeddings=True),
    "roberta-large": dict(kind="masked", hidden_size=1024, num_hidden_layers=24, num_attention_heads=16,
                          intermediate_size=4096, vocab_size=50265),
}
SMOKE_SHAPES = {
    "smollm2-135m": dict(SHAPES["smollm2-135m"], hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
                         num_key_value_heads=2, intermediate_size=128),
    "llama-1.7b": dict(SHAPES["llama-1.7b"], hidden_size=64, num_hidden_layers=3, num_attention_heads=4,
                       num_key_value_heads=4, intermediate_size=128),
    "roberta-large": dict(SHAPES["roberta-large"], hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
                          intermediate_size=128),
}


# ---- data ----------------------------------------------------------------------------------------------
def load_groups(path: str | None, n_groups: int | None, log=print):
    """Real CoDA21 groups: from ``path`` if it exists, else built with probegen's own code."""
    from probegen.coda21.dataset import load

    if path and Path(path).exists():
        ds = load(path)
        where = path
    else:
        from probegen.coda21.config import Coda21Config
        from probegen.coda21.dataset import build
        from probegen.runner import Runner

        log(f"data: {path} not found; building clean-hard nouns with probegen (first SemCor context)")
        ds = build(Coda21Config(easy=False, clean=True, pos=("n",), context_scorer="first"), progress=False,
                   log=lambda m: None, runner=Runner(log=lambda m: None))
        where = "built here (clean-hard nouns)"
    groups = ds.groups[:n_groups] if n_groups else ds.groups
    return groups, where


def rendered(groups) -> tuple[list[str], list[list[str]]]:
    """(queries, candidate list per query) exactly as ``probegen eval`` renders CoDA21 groups."""
    from probegen.coda21.render import render_group
    from probegen.templating import coda21_patterns

    pats = coda21_patterns()
    queries, cands = [], []
    for g in groups:
        defs = [it.definition for it in g.items]
        for q in render_group(g, "pattern", "context", NONCE, pats):
            queries.append(q)
            cands.append(defs)
    return queries, cands


# ---- models ----------------------------------------------------------------------------------------------
def causal_tokenizer(path: str | None = None):
    """The bundled SmolLM2 tokenizer (or the tokenizer folder ``path``: a machine without the bundle)."""
    from transformers import AutoTokenizer

    if path:
        return AutoTokenizer.from_pretrained(path)
    from probegen.models import _smollm2_dir, resolve_model

    return AutoTokenizer.from_pretrained(str(_smollm2_dir(Path(resolve_model("smollm2-135m").path_or_id))))


def masked_tokenizer(vocab: str | None = None):
    """bert-base-uncased's WordPiece vocabulary, from the bundled MiniLM (or the file ``vocab``)."""
    from transformers import BertTokenizerFast

    if vocab:
        return BertTokenizerFast(vocab=vocab)
    from probegen.models import resolve_model

    return BertTokenizerFast(vocab=str(Path(resolve_model("minilm-l6").path_or_id) / "vocab.txt"))


def random_model(shape: dict, device: str, dtype: str):
    """A random-init model of ``shape`` created directly on ``device`` in ``dtype``."""
    import torch
    from transformers import BertConfig, BertForMaskedLM, LlamaConfig, LlamaForCausalLM

    cfg = {k: v for k, v in shape.items() if k != "kind"}
    torch.manual_seed(0)
    with torch.device(device):
        if shape["kind"] == "causal":
            model = LlamaForCausalLM(LlamaConfig(**cfg, max_position_embeddings=2048, bos_token_id=0, eos_token_id=0))
        else:
            model = BertForMaskedLM(BertConfig(**cfg, max_position_embeddings=514))
    return model.to(getattr(torch, dtype)).eval()


# ---- methods ---------------------------------------------------------------------------------------------
def lm_eval_style(model, encoded, batch: int = 128):
    """Full sequences, longest first, full logits + log-softmax everywhere (lm-evaluation-harness)."""
    import torch

    device = model.get_input_embeddings().weight.device
    seqs = [list(p) + list(c) for p, c in encoded]
    order = sorted(range(len(seqs)), key=lambda i: -len(seqs[i]))
    out = [0.0] * len(seqs)
    with torch.inference_mode():
        for k in range(0, len(order), batch):
            idx = order[k : k + batch]
            L = max(len(seqs[i]) for i in idx) - 1
            ids = torch.zeros((len(idx), L), dtype=torch.long)
            for r, i in enumerate(idx):
                ids[r, : len(seqs[i]) - 1] = torch.tensor(seqs[i][:-1])
            lp = torch.log_softmax(model(input_ids=ids.to(device)).logits, dim=-1)  # right padding: no mask needed
            rows, cols, tgts = [], [], []
            for r, i in enumerate(idx):
                p, c = encoded[i]
                rows += [r] * len(c)
                cols += list(range(len(p) - 1, len(p) - 1 + len(c)))
                tgts += list(c)
            vals = lp[torch.tensor(rows, device=device), torch.tensor(cols, device=device), torch.tensor(tgts, device=device)]
            sums = torch.zeros(len(idx), dtype=torch.float64, device=device).index_add_(
                0, torch.tensor(rows, device=device), vals.double())
            for r, i in enumerate(idx):
                out[i] = float(sums[r])
    return out


def sync(device: str) -> None:
    import torch

    if device.startswith("cuda"):
        torch.cuda.synchronize(device)


def timed_rounds(methods: dict, repeats: int, device: str) -> dict[str, list[float]]:
    """Seconds per run of each method, ``repeats`` runs in rotating order."""
    names = list(methods)
    times: dict[str, list[float]] = {n: [] for n in names}
    for r in range(repeats):
        for n in names[r % len(names) :] + names[: r % len(names)]:
            sync(device)
            t = time.perf_counter()
            methods[n]()
            sync(device)
            times[n].append(time.perf_counter() - t)
    return times


def bench_causal(name, shape, tok, queries, cands, args, device, dtype):
    import numpy as np

    from probegen.scorers.causal import CausalScorer

    model = random_model(shape, device, dtype)
    pairs = [(q, c) for q, cs in zip(queries, cands) for c in cs]

    def scorer(strategy: str, budget):
        return CausalScorer(f"bench-{name}", model, tok, model_id=f"bench-{name}-{args.tag}", cache=False,  # noqa: F821 - called before the final `del model`
                            strategy=strategy, max_batch_tokens=budget)

    encoded = [scorer("full", None).encode_pair(q, c) for q, c in pairs]
    results = {}
    # warm-up (kernels, allocator), the one-time self-check and the budget search, timed apart
    warm = {"packed": scorer("packed", None), "full": scorer("full", None)}
    for s in warm.values():
        s.score(queries[:2], cands[:2])
    lm_eval_style(model, encoded[:8])
    t = time.perf_counter()
    auto = scorer("packed", "auto")
    auto.score(queries[:2], cands[:2])
    search_s = time.perf_counter() - t
    scorer("full", "auto").score(queries[:2], cands[:2])  # its own budget: searched here, not timed
    budget = auto.stats()
    check = warm["packed"].stats()["self_check"]

    def run(strategy, budget_arg, label):
        def go():
            s = scorer(strategy, budget_arg)
            results[label] = np.concatenate(s.score(queries, cands))
            results[label + "|stats"] = s.stats()
        return go

    base = f"lm-eval style (batch {args.lm_eval_batch})"
    methods = {
        base: lambda: results.__setitem__(base, np.array(lm_eval_style(model, encoded, args.lm_eval_batch))),  # noqa: F821 - called before the final `del model`
        "packed, default budget": run("packed", CausalScorer.max_batch_tokens, "packed, default budget"),
        "packed, auto budget": run("packed", "auto", "packed, auto budget"),
        "full, auto budget": run("full", "auto", "full, auto budget"),
    }
    times = timed_rounds(methods, args.repeats, device)
    ref = results[base]
    rows = []
    for label, ts in times.items():
        st = results.get(label + "|stats", {})
        diff = float(np.abs(results[label] - ref).max())
        rows.append((label, len(pairs) / statistics.median(ts), len(pairs) / min(ts), diff,
                     f"{st['max_batch_tokens']} tok/{st['batch_rows']} rows ({st['budget']})" if st else f"{args.lm_eval_batch} pairs"))
    del model
    return rows, {"search_s": search_s, "searched": budget, "self_check": check, "pairs": len(pairs)}


def bench_masked(name, shape, tok, queries, cands, args, device, dtype):
    import numpy as np

    from probegen.scorers.masked import MaskedScorer

    model = random_model(shape, device, dtype)
    pairs = [(q, c) for q, cs in zip(queries, cands) for c in cs]
    results = {}

    def scorer(pll: str, budget):
        return MaskedScorer(f"bench-{name}", model, tok, model_id=f"bench-{name}-{args.tag}", cache=False, pll=pll,  # noqa: F821 - called before the final `del model`
                            max_batch_tokens=budget)

    scorer("original", None).score(queries[:1], cands[:1])  # warm-up
    t = time.perf_counter()
    scorer("original", "auto").score(queries[:1], cands[:1])
    search_s = time.perf_counter() - t
    scorer("word-l2r", "auto").score(queries[:1], cands[:1])  # its own budget: searched here, not timed

    def run(pll, budget_arg, label):
        def go():
            s = scorer(pll, budget_arg)
            results[label] = np.concatenate(s.score(queries, cands))
            results[label + "|stats"] = s.stats()
        return go

    methods = {
        "PLL, default budget": run("original", MaskedScorer.max_batch_tokens, "PLL, default budget"),
        "PLL, auto budget": run("original", "auto", "PLL, auto budget"),
        "PLL word-l2r, auto budget": run("word-l2r", "auto", "PLL word-l2r, auto budget"),
    }
    times = timed_rounds(methods, args.repeats, device)
    ref = results["PLL, default budget"]
    rows = []
    for label, ts in times.items():
        st = results[label + "|stats"]
        diff = float(np.abs(results[label] - ref).max()) if "l2r" not in label else float("nan")
        rows.append((label, len(pairs) / statistics.median(ts), len(pairs) / min(ts), diff,
                     f"{st['max_batch_tokens']} tok/{st['batch_rows']} rows ({st['budget']})"))
    del model
    return rows, {"search_s": search_s, "pairs": len(pairs)}


# ---- main -------------------------------------------------------------------------------------------------
def main(argv: list[str] | None = None) -> list[dict]:
    """Run the benchmark and print the table; also returns its rows (for the smoke test)."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--dataset", default="probegen_out/datasets/coda21-clean-hard", help="real CoDA21 groups")
    ap.add_argument("--groups", type=int, default=None, help="groups used for the causal models [default: all; smoke: 1]")
    ap.add_argument("--masked-groups", type=int, default=None, help="groups for the masked model [default: 40; smoke: 1]")
    ap.add_argument("--max-queries", type=int, default=None, help="first N queries of those groups [default: all; smoke: 2]")
    ap.add_argument("--shapes", default=",".join(SHAPES), help="comma-separated subset of " + ", ".join(SHAPES))
    ap.add_argument("--device", default="auto")
    ap.add_argument("--dtype", default="auto")
    ap.add_argument("--repeats", type=int, default=None, help="timed runs per method [default: 3; smoke: 1]")
    ap.add_argument("--lm-eval-batch", type=int, default=None, help="baseline batch size [default: 128; smoke: 8]")
    ap.add_argument("--cpu-smoke", action="store_true", help="tiny shapes on the CPU (automatic without CUDA)")
    ap.add_argument("--keep-budgets", action="store_true", help="reuse remembered budgets (default: search afresh)")
    ap.add_argument("--causal-tokenizer", default=None, help="tokenizer folder [default: the bundled SmolLM2's]")
    ap.add_argument("--masked-vocab", default=None, help="WordPiece vocab.txt [default: the bundled MiniLM's]")
    ap.add_argument("--out", default=None, help="also write the table and the machine, commit and date as JSON")
    ap.add_argument("--commit", default=None, help="commit to record [default: git rev-parse HEAD]")
    args = ap.parse_args(argv)

    import torch

    from probegen.models import resolve_device, resolve_dtype
    from probegen.scorers import _budget

    device = resolve_device(args.device)
    smoke = args.cpu_smoke or not device.startswith("cuda")
    if smoke:
        device = "cpu"
        _budget.START_TOKENS = 1 << 10  # no out-of-memory on a CPU: the first probe fits; keep it small
    dtype = resolve_dtype(args.dtype, device)
    shapes = SMOKE_SHAPES if smoke else SHAPES
    args.repeats = args.repeats or (1 if smoke else 3)
    args.lm_eval_batch = args.lm_eval_batch or (8 if smoke else 128)
    args.groups = args.groups or (1 if smoke else None)
    args.masked_groups = args.masked_groups or (1 if smoke else 40)
    args.tag = f"{'smoke' if smoke else 'full'}-{dtype}"
    if not args.keep_budgets:
        tmp = tempfile.mkdtemp(prefix="bench-gpu-budgets-")
        _budget.budget_path = lambda: Path(tmp) / "batch_budgets.json"  # a fresh search, timed below

    what = torch.cuda.get_device_name(device) if device.startswith("cuda") else f"CPU ({torch.get_num_threads()} threads)"
    print(f"device: {what}; torch {torch.__version__}; dtype {dtype}" + ("; CPU SMOKE RUN: tiny shapes, not GPU figures" if smoke else ""))
    groups, where = load_groups(args.dataset, None)
    causal_groups = groups[: args.groups] if args.groups else groups
    q_c, c_c = rendered(causal_groups)
    q_m, c_m = rendered(groups[: args.masked_groups])
    limit = args.max_queries or (2 if smoke else None)
    q_c, c_c, q_m, c_m = q_c[:limit], c_c[:limit], q_m[:limit], c_m[:limit]
    print(f"data: {where}: {len(causal_groups)} group(s), {len(q_c)} queries, {sum(map(len, c_c))} pairs (causal); "
          f"{min(args.masked_groups, len(groups))} group(s), {sum(map(len, c_m))} pairs (masked)")
    table: list[dict] = []
    print(f"\n{'model shape':<15} {'method':<27} {'pairs/s':>9} {'(best)':>9} {'x lm-eval':>9} {'max|d|':>9}  budget")
    for name in [s for s in args.shapes.split(",") if s]:
        shape = shapes[name]
        t0 = time.perf_counter()
        if shape["kind"] == "causal":
            rows, info = bench_causal(name, shape, causal_tokenizer(args.causal_tokenizer), q_c, c_c, args, device, dtype)
            base = rows[0][1]
        else:
            rows, info = bench_masked(name, shape, masked_tokenizer(args.masked_vocab), q_m, c_m, args, device, dtype)
            base = None
        for i, (label, med, best, diff, budget) in enumerate(rows):
            ratio = f"{med / base:.2f}" if base else "-"
            print(f"{name if i == 0 else '':<15} {label:<27} {med:>9,.0f} {best:>9,.0f} {ratio:>9} {diff:>9.2g}  {budget}")
            table.append({"shape": name, "method": label, "pairs_per_s": med, "best_pairs_per_s": best,
                          "vs_lm_eval": med / base if base else None, "max_abs_diff": diff, "budget": budget, **info})
        extra = f"budget search {info['search_s']:.1f} s"
        if "self_check" in info:
            sc = info["self_check"]
            extra += f"; self-check {'passed' if sc['passed'] else 'FAILED'} (max |packed-full| {sc.get('max_abs_diff')} nats)"
        print(f"{'':<15} ({extra}; {time.perf_counter() - t0:.0f} s in all)")
        if device.startswith("cuda"):
            torch.cuda.empty_cache()
    if args.out:
        write_results(args.out, table, what=what, torch_version=torch.__version__, dtype=str(dtype), smoke=smoke,
                      data=where, commit=args.commit)
    return table


def write_results(path: str, table: list[dict], **meta) -> None:
    """The table as JSON with the machine, commit and date that produced it (rendered into the docs).

    The same format as every bench script's result (``bench/benchlib.py``), plus ``machine.device``
    (the device it ran on, "CPU SMOKE RUN" included) and the run's dtype, smoke flag and data.
    """
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import benchlib

    what = meta.pop("what")
    info = {**benchlib.machine(), "device": what, "torch": meta.pop("torch_version")}
    benchlib.write_result(path, "bench_gpu", table, machine_info=info, commit_id=meta.pop("commit", None), **meta)


if __name__ == "__main__":
    main()
