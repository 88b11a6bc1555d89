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

  llama-7b       Llama, hidden 4096, 32 layers, 32 heads, MLP 11008 (Llama-2-7B's body; SmolLM2's vocabulary)

Methods (same token ids, same pairs; every score from every method):
  lm-eval style      full sequences, batches of 128 pairs (8 in the CPU smoke run) (longest first), full logits and a
                     log-softmax over the vocabulary at every position (lm-evaluation-harness's
                     loglikelihood path);
  packed, default    probegen's scorer with its CPU default budget (2,048 tokens, 32 rows);
                     ("user" in the budget column: the default passed explicitly);
  packed, auto       the same with the budget sized to the device (searched, see
                     probegen/scorers/_budget.py; search time printed separately), dense kernel
                     (padded rows, a (B, 1, L, L) mask);
  packed, flex       the same rows flat, without padding, through FlexAttention (a BlockMask built on
                     the device from one per-token vector; probegen/scorers/_paths.py), auto budget;
  lm-eval HFLM       the real lm-evaluation-harness 0.4.13 ``HFLM.loglikelihood`` over the same model
                     (batch as the baseline), where lm_eval is installed: a CPU test shows the
                     lm-eval-style path gives its scores;
  full, auto         probegen's full-sequence path (LM head only at scored positions), auto budget;
  PLL / word-l2r     the masked scorer, default and auto budgets.
Each method runs ``--repeats`` times in rotating order per model; pairs/s use the median, and
ratios are against the lm-eval-style baseline measured in the same run. Every row also reports the
unique tokens one run processes (packed: prefix + candidate trie once; full and lm-eval: every
pair's sequence), tokens/s, and the model FLOP utilisation: 2 x parameters x tokens/s over the
card's dense peak for the run's dtype (the peak named in the row; none on a CPU). Below float32,
every method's choices (a context's highest-scoring definition, and each group's one-to-one
alignment) are compared with float32 packed scores of the same weights: agreement and max |diff|.

The whole GPU run is one command, meant to fit in 8 minutes on one H100/H200 in bfloat16 (not yet timed on one:
no GPU was available when the flex, HFLM, MFU and 7B parts were added; `--shapes` and `--groups` shorten it):

    python bench/bench_gpu.py --dataset DIR --dtype bfloat16 --out bench/results/bench_gpu_NAME.json

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
    "llama-7b": dict(kind="causal", hidden_size=4096, num_hidden_layers=32, num_attention_heads=32,
                     num_key_value_heads=32, intermediate_size=11008, vocab_size=49152, tie_word_embeddings=False),
}
#: dense (no sparsity) peak FLOP/s by card and dtype, from NVIDIA's datasheets; float32 is the
#: non-tensor-core peak (torch's default float32 matmul precision does not use TF32)
PEAKS = {
    "H200": {"bfloat16": 989e12, "float16": 989e12, "float32": 67e12},
    "H100 PCIe": {"bfloat16": 756e12, "float16": 756e12, "float32": 51e12},
    "H100": {"bfloat16": 989e12, "float16": 989e12, "float32": 67e12},
    "A100": {"bfloat16": 312e12, "float16": 312e12, "float32": 19.5e12},
}


def peak(device_name: str, dtype: str) -> tuple[str, float] | None:
    """(card, dense peak FLOP/s) of ``device_name`` in ``dtype``, or None for a card not in PEAKS.

    >>> peak("NVIDIA H100 80GB HBM3", "bfloat16")
    ('H100', 989000000000000.0)
    >>> peak("NVIDIA H100 PCIe", "float32"), peak("CPU (2 threads)", "float32")
    (('H100 PCIe', 51000000000000.0), None)
    """
    for card in sorted(PEAKS, key=len, reverse=True):
        if all(part in device_name for part in card.split()) and dtype in PEAKS[card]:
            return card, PEAKS[card][dtype]
    return None
SMOKE_SHAPES = {
    "smollm2-135m": dict(SHAPES["smollm2-135m"], hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
                         num_key_value_heads=2, intermediate_size=128),
    "llama-1.7b": dict(SHAPES["llama-1.7b"], hidden_size=64, num_hidden_layers=3, num_attention_heads=4,
                       num_key_value_heads=4, intermediate_size=128),
    "roberta-large": dict(SHAPES["roberta-large"], hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
                          intermediate_size=128),
    "llama-7b": dict(SHAPES["llama-7b"], hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
                     num_key_value_heads=4, intermediate_size=128),
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


def wordnetqa_definitions(path: str, limit: int | None, log=print) -> tuple[list[str], list[list[str]]]:
    """(queries, choices per query) of a WordNetQA dataset's ``definitions`` items, as ``probegen eval``
    renders them for a causal LM (the dataset's own question templates, ``pattern`` style, full mode)."""
    import subprocess

    from probegen.wordnetqa.dataset import load

    if not Path(path).exists():  # one command on a bare machine: built here with probegen's own code
        log(f"data: {path} not found; building WordNetQA definitions items with probegen (--limit 200)")
        subprocess.run([sys.executable, "-m", "probegen", "make", "wordnetqa", "--probe", "definitions", "--limit", "200",
                        "--out", path], check=True, stdout=subprocess.DEVNULL)
    ds = load(path)
    items = [it for it in ds.items if it.probe == "definitions"][:limit]
    if not items:
        sys.exit(f"{path}: no definitions items (make one with: probegen make wordnetqa --probe definitions)")
    log(f"data: {path}: {len(items)} WordNetQA definitions items, {sum(len(it.choices) for it in items)} pairs")
    return [ds.templates.query(it, "pattern", "full", NONCE) for it in items], [list(it.choices) for it in items]


def rendered(groups) -> tuple[list[str], list[list[str]]]:
    """(queries, candidate list per query) exactly as ``probegen eval`` renders CoDA21 groups."""
    from probegen.coda21.render import patterns_for, render_group

    pats = patterns_for()
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


def timed_runs(scorer, queries, cands, results: dict):
    """``run(variant, budget, label, kernel)``: a function that scores with ``scorer(variant, budget, kernel)``
    and keeps the scores and the scorer's stats under ``label`` in ``results`` (a closure for timed_rounds)."""
    def run(variant, budget_arg, label, kernel="dense"):
        def go():
            import numpy as np

            s = scorer(variant, budget_arg, kernel)
            results[label] = np.concatenate(s.score(queries, cands))
            results[label + "|stats"] = s.stats()
        return go
    return run


def hflm_scores(model, tok, pairs, batch: int):
    """Scores of (query, candidate) ``pairs`` by the real lm-evaluation-harness ``HFLM.loglikelihood`` over
    ``model`` (None when lm_eval is not installed)."""
    try:
        from lm_eval.api.instance import Instance
        from lm_eval.models.huggingface import HFLM
    except ImportError:
        return None
    from probegen.scorers.base import boundary_split

    lm = HFLM(pretrained=model, tokenizer=tok, batch_size=batch, max_length=2048)
    # the texts probegen scores: its boundary rule (lm-eval's, plus one space where neither side has one)
    reqs = [Instance("loglikelihood", {}, boundary_split(q, c), i) for i, (q, c) in enumerate(pairs)]
    return [ll for ll, _ in lm.loglikelihood(reqs, disable_tqdm=True)]


def choices(scores, sizes) -> list[int]:
    """Each unit's highest-scoring candidate (units of ``sizes`` candidates, concatenated)."""
    import numpy as np

    out, start = [], 0
    for k in sizes:
        out.append(int(np.argmax(scores[start : start + k])))
        start += k
    return out


def alignments(scores, group_sizes) -> list[tuple[int, ...]]:
    """Each group's one-to-one alignment (probegen's aligner) of its k x k block of ``scores``."""
    import numpy as np

    from probegen.aligner import align

    out, start = [], 0
    for k in group_sizes:
        out.append(tuple(align(np.asarray(scores[start : start + k * k]).reshape(k, k)).tolist()))
        start += k * k
    return out


def bench_causal(name, shape, tok, queries, cands, args, device, dtype, group_sizes=None):
    import numpy as np

    from probegen.scorers.causal import CausalScorer

    model = random_model(shape, device, dtype)
    n_params = sum(p.numel() for p in model.parameters())
    pairs = [(q, c) for q, cs in zip(queries, cands) for c in cs]

    def scorer(strategy: str, budget, kernel: str = "dense", m=None):
        return CausalScorer(f"bench-{name}", m if m is not None else model, tok,  # noqa: F821 - called before the final `del model`
                            model_id=f"bench-{name}-{args.tag}", cache=False, strategy=strategy, max_batch_tokens=budget,
                            kernel=kernel)

    encoded = [scorer("full", None).encode_pair(q, c) for q, c in pairs]
    full_tokens = sum(len(p) + len(c) - 1 for p, c in encoded)
    packed_tokens = sum(r.length for r in scorer("packed", None)._rows(encoded))
    results = {}
    # warm-up (kernels, allocator, flex compilation), the one-time self-check and the budget search, timed apart
    warm = {"packed": scorer("packed", None), "full": scorer("full", None)}
    for s in warm.values():
        s.score(queries[:2], cands[:2])
    lm_eval_style(model, encoded[:8])
    t = time.perf_counter()
    auto = scorer("packed", "auto")
    auto.score(queries[:2], cands[:2])
    search_s = time.perf_counter() - t
    scorer("full", "auto").score(queries[:2], cands[:2])  # its own budget: searched here, not timed
    flex_warm = scorer("packed", "auto", "flex")
    flex_warm.score(queries[:2], cands[:2])  # its own budget and the kernel's compilation, not timed
    flex_warm._run("packed", encoded, "flex")  # every flat length it will meet, compiled before timing
    budget = auto.stats()
    check = warm["packed"].stats()["self_check"]

    run = timed_runs(scorer, queries, cands, results)

    base = f"lm-eval style (batch {args.lm_eval_batch})"
    methods = {
        base: lambda: results.__setitem__(base, np.array(lm_eval_style(model, encoded, args.lm_eval_batch))),  # noqa: F821 - called before the final `del model`
        "packed, default budget": run("packed", CausalScorer.max_batch_tokens, "packed, default budget"),
        "packed, auto budget": run("packed", "auto", "packed, auto budget"),
        "packed, flex, auto budget": run("packed", "auto", "packed, flex, auto budget", "flex"),
        "full, auto budget": run("full", "auto", "full, auto budget"),
    }
    hflm_label = f"lm-eval {args.lm_eval_version} HFLM (batch {args.lm_eval_batch})"
    if args.hflm and args.lm_eval_version:
        methods[hflm_label] = lambda: results.__setitem__(
            hflm_label, np.array(hflm_scores(model, tok, pairs, args.lm_eval_batch)))  # noqa: F821 - called before the final `del model`
    tokens = {label: packed_tokens if label.startswith("packed") else full_tokens for label in methods}
    times = timed_rounds(methods, args.repeats, device)
    ref = results[base]
    # below float32: every method's choices against float32 packed scores of the same weights
    ref32 = None
    if dtype != "float32":
        m32 = random_model(shape, device, "float32")
        ref32 = np.concatenate(scorer("packed", "auto", m=m32).score(queries, cands))
        del m32
    sizes = [len(c) for c in cands]
    card = peak(args.device_name, dtype)
    rows = []
    for label, ts in times.items():
        st = results.get(label + "|stats", {})
        diff = float(np.abs(results[label] - ref).max())
        med = statistics.median(ts)
        row = {"pairs_per_s": len(pairs) / med, "best_pairs_per_s": len(pairs) / min(ts), "max_abs_diff": diff,
               "budget": f"{st['max_batch_tokens']} tok/{st['batch_rows']} rows ({st['budget']})" if st
               else f"{args.lm_eval_batch} pairs", "tokens": tokens[label], "tokens_per_s": tokens[label] / med,
               "params": n_params, "kernel": st.get("kernel")}
        if card:
            row.update(peak=f"{card[0]} dense {dtype} {card[1] / 1e12:g} TFLOP/s",
                       mfu=2 * n_params * tokens[label] / med / card[1])
        if ref32 is not None:
            same = [a == b for a, b in zip(choices(results[label], sizes), choices(ref32, sizes))]
            row.update(unit_agreement=sum(same) / len(same), max_abs_diff_vs_float32=float(
                np.abs(results[label] - ref32).max()))
            if group_sizes and sum(k * k for k in group_sizes) == len(pairs):
                g = [a == b for a, b in zip(alignments(results[label], group_sizes), alignments(ref32, group_sizes))]
                row["group_agreement"] = sum(g) / len(g)
        rows.append((label, row))
    if args.hflm and args.lm_eval_version:  # the baseline's scores are lm-eval's (up to batch rounding)
        print(f"{'':<15} lm-eval-style vs real HFLM: max |diff| {np.abs(results[hflm_label] - ref).max():.2g}")
    del model
    return rows, {"search_s": search_s, "searched": budget, "self_check": check, "pairs": len(pairs)}


def bench_masked(name, shape, tok, queries, cands, args, device, dtype):
    import numpy as np

    from probegen.scorers.masked import MaskedScorer

    model = random_model(shape, device, dtype)
    pairs = [(q, c) for q, cs in zip(queries, cands) for c in cs]
    results = {}

    def scorer(pll: str, budget, kernel: str = "dense"):
        return MaskedScorer(f"bench-{name}", model, tok, model_id=f"bench-{name}-{args.tag}", cache=False, pll=pll,  # noqa: F821 - called before the final `del model`
                            max_batch_tokens=budget, kernel=kernel)

    n_params = sum(p.numel() for p in model.parameters())
    jobs = [j for q, c in pairs for j in scorer("original", None)._pll_jobs(q, c)]
    scorer("original", None).score(queries[:1], cands[:1])  # warm-up
    t = time.perf_counter()
    scorer("original", "auto").score(queries[:1], cands[:1])
    search_s = time.perf_counter() - t
    scorer("word-l2r", "auto").score(queries[:1], cands[:1])  # its own budget: searched here, not timed
    flex_warm = scorer("original", "auto", "flex")
    flex_warm.score(queries[:1], cands[:1])
    flex_warm._run_jobs(jobs, "flex")  # every flat length it will meet, compiled before timing

    run = timed_runs(scorer, queries, cands, results)

    methods = {
        "PLL, default budget": run("original", MaskedScorer.max_batch_tokens, "PLL, default budget"),
        "PLL, auto budget": run("original", "auto", "PLL, auto budget"),
        "PLL, flex, auto budget": run("original", "auto", "PLL, flex, auto budget", "flex"),
        "PLL word-l2r, auto budget": run("word-l2r", "auto", "PLL word-l2r, auto budget"),
    }
    times = timed_rounds(methods, args.repeats, device)
    ref = results["PLL, default budget"]
    tokens = sum(len(j[0]) for j in jobs)  # one copy per candidate token; padding not counted
    card = peak(args.device_name, dtype)
    rows = []
    for label, ts in times.items():
        st = results[label + "|stats"]
        diff = float(np.abs(results[label] - ref).max()) if "l2r" not in label else float("nan")
        med = statistics.median(ts)
        row = {"pairs_per_s": len(pairs) / med, "best_pairs_per_s": len(pairs) / min(ts), "max_abs_diff": diff,
               "budget": f"{st['max_batch_tokens']} tok/{st['batch_rows']} rows ({st['budget']})",
               "tokens": tokens, "tokens_per_s": tokens / med, "params": n_params, "kernel": st.get("kernel")}
        if card:
            row.update(peak=f"{card[0]} dense {dtype} {card[1] / 1e12:g} TFLOP/s",
                       mfu=2 * n_params * tokens / med / card[1])
        rows.append((label, row))
    del model
    return rows, {"search_s": search_s, "pairs": len(pairs)}


# ---- main -------------------------------------------------------------------------------------------------
def main(argv: list[str] | None = None) -> list[dict]:
    """Run the benchmark and print the table; also returns its rows (for the smoke test)."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--dataset", default="probegen_out/datasets/coda21-clean-hard", help="real CoDA21 groups")
    ap.add_argument("--wordnetqa", default=None,
                    help="also time the causal shapes on this WordNetQA dataset's definitions items (probegen make wordnetqa)")
    ap.add_argument("--wordnetqa-items", type=int, default=None, help="first N definitions items [default: all; smoke: 2]")
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
    ap.add_argument("--no-hflm", dest="hflm", action="store_false",
                    help="skip the real lm-eval HFLM row (it runs where lm_eval is installed)")
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
    args.device_name = what
    try:
        from importlib.metadata import version

        args.lm_eval_version = version("lm_eval")
    except Exception:  # not installed: the lm-eval-style path stands in for it
        args.lm_eval_version = None
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
    print(f"\n{'model shape':<15} {'method':<31} {'pairs/s':>9} {'(best)':>9} {'x lm-eval':>9} {'max|d|':>9} "
          f"{'tokens':>8} {'MFU':>6} {'agree':>6}  budget")
    group_sizes = [len(g.items) for g in causal_groups] if limit is None else None
    runs = [("coda21", name, q_c, c_c, group_sizes) for name in args.shapes.split(",") if name]
    if args.wordnetqa:
        q_w, c_w = wordnetqa_definitions(args.wordnetqa, args.wordnetqa_items or (2 if smoke else None))
        runs += [("wordnetqa-definitions", name, q_w, c_w, None) for name in args.shapes.split(",")
                 if name and shapes[name]["kind"] == "causal"]
    for data, name, queries, cands, sizes in runs:
        table += bench_shape(data, name, shapes[name], queries, cands, sizes, (q_m, c_m), args, device, dtype)
        if device.startswith("cuda"):
            torch.cuda.empty_cache()
    if args.out:
        write_results(args.out, table, what=what, torch_version=torch.__version__, dtype=str(dtype), smoke=smoke,
                      data=where, commit=args.commit)
    return table


def bench_shape(data, name, shape, queries, cands, group_sizes, masked_data, args, device, dtype) -> list[dict]:
    """Time every method on one model shape and one dataset; print the rows; return them."""
    t0 = time.perf_counter()
    if shape["kind"] == "causal":
        rows, info = bench_causal(name, shape, causal_tokenizer(args.causal_tokenizer), queries, cands, args, device,
                                  dtype, group_sizes)
        base = rows[0][1]["pairs_per_s"]
    else:
        rows, info = bench_masked(name, shape, masked_tokenizer(args.masked_vocab), *masked_data, args, device, dtype)
        base = None
    table = []
    for i, (label, row) in enumerate(rows):
        med = row["pairs_per_s"]
        ratio = f"{med / base:.2f}" if base else "-"
        mfu = f"{100 * row['mfu']:.1f}%" if row.get("mfu") is not None else "-"
        agree = f"{100 * row['unit_agreement']:.1f}%" if row.get("unit_agreement") is not None else "-"
        head = f"{name} ({data})" if data != "coda21" else name
        print(f"{head if i == 0 else '':<15} {label:<31} {med:>9,.0f} {row['best_pairs_per_s']:>9,.0f} {ratio:>9} "
              f"{row['max_abs_diff']:>9.2g} {row['tokens']:>8,} {mfu:>6} {agree:>6}  {row['budget']}")
        table.append({"shape": name, "data": data, "method": label, **row, "vs_lm_eval": med / base if base else None,
                      **info})
    extra = f"budget search {info['search_s']:.1f} s"
    if "self_check" in info:
        sc = info["self_check"]
        extra += f"; self-check {'passed' if sc['passed'] else 'FAILED'} (max |packed-full| {sc.get('max_abs_diff')} nats)"
    print(f"{'':<15} ({extra}; {time.perf_counter() - t0:.0f} s in all)")
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
