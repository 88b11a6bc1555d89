"""``--finetune``: train the encoder with a small head per condition (GPU; the paper fine-tunes BERT).

The head sees the frozen method's features; each call starts from a fresh copy of the encoder
(:meth:`~probegen.scorers.spans.SpanEncoder.trainable_copy`), so conditions and seeds share no weights.
Predictions are the core's decisions (top logit, ties broken at random with the seed and the item id).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from probegen.diagnostics.inputs import view
from probegen.tasks import task_of

if TYPE_CHECKING:
    import torch

    from probegen.diagnostics.trained import TrainedConfig
    from probegen.scorers.spans import SpanEncoder as Encoder


def _device() -> torch.device:
    import torch

    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


class _Probe:
    """A trainable encoder copy and its head for one task and condition: logits, loss, correctness."""

    def __init__(self, enc: Encoder, condition: str, train: list[Any], dev: torch.device) -> None:
        import torch

        self.work, self.condition, self.mask, self.dev = enc.trainable_copy(dev), condition, enc.mask, dev
        self.task = task_of(train)
        self.classes = self.task.head_classes(train)  # None: one score per choice
        # pairs and choices see [u, v, |u-v|, u*v] of two vectors; a label item its one vector
        paired = self.task.second_context or self.task.scores_choices
        self.head = torch.nn.Linear(4 * enc.dim if paired else enc.dim,
                                    1 if self.classes is None else len(self.classes)).to(dev)

    def logits(self, batch: list[Any], grad: bool) -> torch.Tensor:
        """Pair/label: one row of class logits per item; choice: one score per choice, grouped by item."""
        import torch

        def pair4(u: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
            return torch.cat([u, v, (u - v).abs(), u * v], dim=1)

        # head.forward, not head(...): the typed call (a bare Linear has no hooks to skip)
        u = self.work.batch([view(it.context, self.condition, self.mask) for it in batch], grad=grad)
        if self.task.second_context:
            v = self.work.batch([view(it.context2, self.condition, self.mask) for it in batch], grad=grad)
            return self.head.forward(pair4(u, v))
        if not self.task.scores_choices:
            return self.head.forward(u)
        d = self.work.batch([(c, None) for it in batch for c in it.choices], grad=grad)
        idx = torch.tensor([i for i, it in enumerate(batch) for _ in it.choices], device=self.dev)
        return self.head.forward(pair4(u[idx], d)).squeeze(1)

    def gold(self, it: Any) -> int:
        """The gold class (pair: F/T; label: the label's index, -1 if unseen in training) or choice."""
        return self.task.gold_index(it, self.classes)

    def loss(self, batch: list[Any], out: torch.Tensor) -> torch.Tensor:
        import torch
        from torch.nn.functional import cross_entropy

        if not self.task.scores_choices:
            return cross_entropy(out, torch.tensor([self.gold(it) for it in batch], device=self.dev))
        losses, k = [], 0
        for it in batch:
            s = out[k : k + len(it.choices)]
            losses.append(cross_entropy(s[None], torch.tensor([it.gold], device=self.dev)))
            k += len(it.choices)
        return torch.stack(losses).mean()

    def rows(self, batch: list[Any], out: np.ndarray) -> list[np.ndarray]:
        """Each item's scores (its choices', or its classes')."""
        if not self.task.scores_choices:
            return list(out)
        bounds = np.cumsum([0] + [len(it.choices) for it in batch])
        return [out[a:b] for a, b in zip(bounds[:-1], bounds[1:])]


def finetune_correct(enc: Encoder, condition: str, train: list[Any], test: list[Any], seed: int,
                     cfg: TrainedConfig) -> np.ndarray:
    """Fine-tune a copy of ``enc`` on ``train`` under ``condition``; per-test-item correctness."""
    import torch

    from probegen.core import decide_scores, tie_rng

    torch.manual_seed(seed)
    probe = _Probe(enc, condition, train, _device())
    opt = torch.optim.AdamW([{"params": probe.work.net.parameters(), "lr": cfg.lr},
                             {"params": probe.head.parameters(), "lr": 1e-3}])
    rng = np.random.default_rng(seed)
    step = max(1, cfg.batch_size // (8 if probe.task.scores_choices else 1))  # choices multiply the rows of a batch
    probe.work.net.train()
    for _ in range(cfg.epochs):
        order = rng.permutation(len(train))
        for i in range(0, len(order), step):
            batch = [train[j] for j in order[i : i + step]]
            opt.zero_grad()
            torch.autograd.backward(probe.loss(batch, probe.logits(batch, grad=True)))
            opt.step()
    probe.work.net.eval()
    correct = []
    with torch.no_grad():
        for i in range(0, len(test), step):
            batch = test[i : i + step]
            for it, s in zip(batch, probe.rows(batch, probe.logits(batch, grad=False).float().cpu().numpy())):
                pick = decide_scores(s[None, :], "argmax", tie_rng(seed, it.id))[0]
                correct.append(bool(pick == probe.gold(it)))
    return np.array(correct)
