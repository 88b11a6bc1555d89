"""``--finetune``: train the encoder with a small head per condition (GPU; the paper fine-tunes BERT).

The head sees the same features as the frozen method (target-span vectors; WiC ``[u, v, |u-v|,
u*v]``, WSD ``[u, d, |u-d|, u*d]`` per choice with a softmax over the item's choices), but the
encoder's weights are updated too. Each call starts from a fresh copy of the encoder, so
conditions and seeds never share trained weights.
"""

from __future__ import annotations

import copy

import numpy as np

from .trained import Encoder, TrainedConfig, view


def _device():
    import torch

    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


def finetune_correct(enc: Encoder, condition: str, train: list, test: list, seed: int, cfg: TrainedConfig) -> np.ndarray:
    """Fine-tune a copy of ``enc`` on ``train`` under ``condition``; per-test-item correctness."""
    import torch

    torch.manual_seed(seed)
    dev = _device()
    work = Encoder(enc.tok, copy.deepcopy(enc.net).to(dev), enc.name, enc.max_length, enc.batch_size)
    task, h = train[0].task, enc.dim
    classes = sorted({str(it.label) for it in train}) if task == "label" else []
    n_out = {"pair": 2, "choice": 1, "label": len(classes)}[task]
    head = torch.nn.Linear(h if task == "label" else 4 * h, n_out).to(dev)
    opt = torch.optim.AdamW([{"params": work.net.parameters(), "lr": cfg.lr}, {"params": head.parameters(), "lr": 1e-3}])

    def pair4(u, v):
        return torch.cat([u, v, (u - v).abs(), u * v], dim=1)

    def logits(batch: list, grad: bool):
        u = work.batch([view(it.context, condition, enc.mask) for it in batch], grad=grad)
        if task == "pair":
            v = work.batch([view(it.context2, condition, enc.mask) for it in batch], grad=grad)
            return head(pair4(u, v))
        if task == "label":
            return head(u)
        d = work.batch([(c, None) for it in batch for c in it.choices], grad=grad)
        idx = torch.tensor([i for i, it in enumerate(batch) for _ in it.choices], device=dev)
        return head(pair4(u[idx], d)).squeeze(1)  # one score per choice, grouped by item

    def loss_of(batch: list, out):
        if task == "pair":
            y = torch.tensor([int(bool(it.label)) for it in batch], device=dev)
            return torch.nn.functional.cross_entropy(out, y)
        if task == "label":
            y = torch.tensor([classes.index(str(it.label)) for it in batch], device=dev)
            return torch.nn.functional.cross_entropy(out, y)
        losses, k = [], 0
        for it in batch:
            s = out[k : k + len(it.choices)]
            losses.append(torch.nn.functional.cross_entropy(s[None], torch.tensor([it.gold], device=dev)))
            k += len(it.choices)
        return torch.stack(losses).mean()

    rng = np.random.default_rng(seed)
    step = max(1, cfg.batch_size // (8 if task == "choice" else 1))  # choices multiply the rows of a batch
    work.net.train()
    for _ in range(cfg.epochs):
        order = rng.permutation(len(train))
        for i in range(0, len(order), step):
            batch = [train[j] for j in order[i : i + step]]
            opt.zero_grad()
            loss = loss_of(batch, logits(batch, grad=True))
            loss.backward()
            opt.step()
    work.net.eval()
    correct = []
    with torch.no_grad():
        for i in range(0, len(test), step):
            batch = test[i : i + step]
            out = logits(batch, grad=False).float().cpu().numpy()
            if task == "choice":
                k = 0
                for it in batch:
                    s = out[k : k + len(it.choices)]
                    k += len(it.choices)
                    correct.append(bool((s == s.max()).sum() == 1 and int(s.argmax()) == it.gold))
            else:
                for it, row in zip(batch, out):
                    top = row == row.max()
                    pred = int(row.argmax())
                    gold = int(bool(it.label)) if task == "pair" else classes.index(str(it.label)) if str(it.label) in classes else -1
                    correct.append(bool(top.sum() == 1 and pred == gold))
    return np.array(correct)
