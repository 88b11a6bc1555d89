"""A planted exposure for ``probegen contamination``: fine-tune the bundled SmolLM2-135M on one form's
gold answers, and save it as a local Hugging Face folder that ``--model PATH`` scores.

Each training text is exactly what probegen scores: the item's query as the causal scorer sees it
(the dataset's templates, pattern style, full condition) and the gold choice after the same boundary
split (:func:`probegen.scorers.base.boundary_split`); the loss is on the answer tokens only, so the
model learns the answers of that form, not the task. AdamW on the top blocks only (CPU).

    python bench/contamination_finetune.py FORM OUT [--epochs 4] [--lr 1e-4] [--seed 0] [--top 4]
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path


def texts_of(form: Path) -> list[tuple[str, str]]:
    """(context, continuation) of every item's gold answer, as the causal scorer splits them."""
    from probegen.run.run_bias import load_dataset
    from probegen.scorers.base import boundary_split
    from probegen.templating import dataset_nonce
    from probegen.wordnetqa.render import templates_of

    _, data = load_dataset(form)
    query = templates_of(data).query
    nonce = dataset_nonce(getattr(data, "manifest", None))
    pairs = [boundary_split(query(it, "pattern", "full", nonce), it.choices[it.answer]) for it in data.items]
    return list(dict.fromkeys(pairs))  # a question's distractor variants share its query and gold: once each


def finetune(form: Path, out: Path, epochs: int = 4, lr: float = 1e-4, seed: int = 0, batch: int = 8,
             top: int = 4) -> dict:
    """Fine-tune SmolLM2-135M on ``form``'s gold answers; save model and tokenizer to ``out``."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from probegen.models import _smollm2_dir, resolve_model

    src = str(_smollm2_dir(Path(resolve_model("smollm2-135m").path_or_id)))  # the de-quantised HF folder
    torch.manual_seed(seed)
    torch.set_num_threads(2)
    tok = AutoTokenizer.from_pretrained(src)
    model = AutoModelForCausalLM.from_pretrained(src, torch_dtype=torch.float32)
    model.train()
    # only the top ``top`` transformer blocks and the final norm learn (the tied embeddings stay): on a
    # shared 2-core CPU a full backward pass costs ~80 s per batch of 8, this about a third of that
    for p in model.parameters():
        p.requires_grad_(False)
    blocks = model.model.layers
    for p in [*(q for b in blocks[len(blocks) - top:] for q in b.parameters()), *model.model.norm.parameters()]:
        p.requires_grad_(True)
    pairs = texts_of(form)
    enc = []
    for ctx, cont in pairs:
        a, b = tok(ctx, add_special_tokens=False)["input_ids"], tok(cont, add_special_tokens=False)["input_ids"]
        enc.append((a + b, [-100] * len(a) + b))  # loss on the answer only
    opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=lr, weight_decay=0.0)
    gen = torch.Generator().manual_seed(seed)
    log = []
    t0 = time.time()
    for ep in range(epochs):
        order = torch.randperm(len(enc), generator=gen).tolist()
        total = 0.0
        for s in range(0, len(order), batch):
            chunk = [enc[i] for i in order[s:s + batch]]
            n = max(len(x) for x, _ in chunk)
            pad = tok.pad_token_id if tok.pad_token_id is not None else 0
            ids = torch.tensor([x + [pad] * (n - len(x)) for x, _ in chunk])
            lab = torch.tensor([y + [-100] * (n - len(y)) for _, y in chunk])
            att = torch.tensor([[1] * len(x) + [0] * (n - len(x)) for x, _ in chunk])
            loss = model(input_ids=ids, attention_mask=att, labels=lab).loss
            opt.zero_grad()
            loss.backward()
            opt.step()
            total += float(loss.detach()) * len(chunk)
            print(f"epoch {ep + 1} step {s // batch + 1}: loss {float(loss.detach()):.3f} ({time.time() - t0:.0f} s)",
                  flush=True)
        log.append({"epoch": ep + 1, "loss": total / len(enc), "seconds": round(time.time() - t0, 1)})
        print(json.dumps(log[-1]), flush=True)
    model.eval()
    out.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(out, safe_serialization=True)
    tok.save_pretrained(out)
    info = {"base": "smollm2-135m", "form": str(form), "texts": len(enc), "epochs": epochs, "lr": lr, "seed": seed,
            "batch": batch, "trained": f"top {top} of {len(blocks)} blocks + final norm", "loss_on": "gold answer tokens only", "log": log}
    from probegen.io import json_text

    (out / "exposure.json").write_text(json_text(info, indent=1) + "\n", encoding="utf-8")
    return info


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("form", type=Path)
    ap.add_argument("out", type=Path)
    ap.add_argument("--epochs", type=int, default=4)
    ap.add_argument("--lr", type=float, default=1e-4)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--top", type=int, default=4, help="transformer blocks trained, from the top")
    a = ap.parse_args()
    finetune(a.form, a.out, a.epochs, a.lr, a.seed, top=a.top)
