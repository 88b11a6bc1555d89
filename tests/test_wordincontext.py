"""Word-in-context datasets: generic JSONL and WiC TSV readers (fixtures written here), WiC-style
and WSD-style builds on the real SemCor, and the trained bias method."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from probegen.errors import DatasetError, ProbegenError
from probegen.runner import Runner
from probegen.wordincontext.dataset import load, write
from probegen.wordincontext.items import Target, WicItem
from probegen.wordincontext.jsonl import read_items

# ---- generic JSONL --------------------------------------------------------------------------------
PAIR = {"id": "p1", "lemma": "bank", "pos": "n", "context": "They sat on the bank of the river.", "span": [16, 20],
        "context2": "The bank raised its rates.", "span2": [4, 8], "label": False, "split": "train"}
CHOICE = {"id": "c1", "lemma": "bank", "context": "The bank raised its rates.", "span": [4, 8],
          "choices": ["sloping land beside water", "a financial institution"], "gold": 1}


def _jsonl(path: Path, rows: list) -> Path:
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows), encoding="utf-8")
    return path


def test_generic_jsonl_reads_the_three_task_shapes(tmp_path):
    pairs = read_items(_jsonl(tmp_path / "p.jsonl", [PAIR, {**PAIR, "id": "p2", "label": "T"}]))
    assert [it.task for it in pairs] == ["pair", "pair"] and [it.label for it in pairs] == [False, True]
    assert pairs[0].context.word == "bank" and pairs[0].context2.word == "bank" and pairs[0].split == "train"
    choice = read_items(_jsonl(tmp_path / "c.jsonl", [CHOICE]))[0]
    assert choice.task == "choice" and choice.gold == 1 and choice.split == "test" and choice.unit == "bank"
    lab = read_items(_jsonl(tmp_path / "l.jsonl", [{"context": "a bank loan", "span": [2, 6], "label": "noun.group"}]))[0]
    assert lab.task == "label" and lab.id == "line1" and lab.lemma == "bank"
    # the dataset loader takes the file as is
    assert load(tmp_path / "p.jsonl").task == "pair"


@pytest.mark.parametrize(
    "bad, message",
    [
        ("{not json", "not valid JSON"),
        ({**CHOICE, "span": [4, 99]}, "'span' [4, 99] is outside 'context'"),
        ({**CHOICE, "gold": 2}, "'gold' must be an index 0..1"),
        ({**CHOICE, "choices": ["a", "a"]}, "'choices' repeats a choice text"),
        ({**PAIR, "label": "maybe"}, "a pair needs 'label' true/false"),
        ({**CHOICE, "split": "validation"}, "'split' must be one of train, dev, test"),
        ({"context": "x y", "span": [0, 1]}, "give 'context2'+'span2'+'label'"),
    ],
)
def test_generic_jsonl_bad_line_is_named_by_number(tmp_path, bad, message):
    good = {**CHOICE, "id": "c0"}
    with pytest.raises(DatasetError) as e:
        read_items(_jsonl(tmp_path / "d.jsonl", [good, good | {"id": "c2"}, bad]))
    assert f"d.jsonl:3: {message}" in str(e.value)


def test_generic_jsonl_validates_the_whole_file_before_returning(tmp_path):
    rows = [CHOICE, {**CHOICE, "id": "c2", "gold": 5}, CHOICE, {**PAIR}]
    with pytest.raises(DatasetError) as e:
        read_items(_jsonl(tmp_path / "d.jsonl", rows))
    msg = str(e.value)
    assert msg.startswith(f"{tmp_path / 'd.jsonl'}:2: 'gold'") and "(and 2 more bad lines)" in msg
    with pytest.raises(DatasetError, match=r"d.jsonl:3: id 'c1' repeats line 1"):
        read_items(_jsonl(tmp_path / "d.jsonl", [CHOICE, {**CHOICE, "id": "c9"}, CHOICE]))
    with pytest.raises(DatasetError, match=r"d.jsonl:2: a pair item, but line 1 is a choice item"):
        read_items(_jsonl(tmp_path / "d.jsonl", [CHOICE, PAIR]))


# ---- the WiC release TSV ------------------------------------------------------------------------------
WIC_TRAIN = [
    "carry\tV\t2-1\tYou must carry your camping gear .\tSound carries well over water .",
    "bank\tN\t4-1\tThey sat on the bank of the river .\tThe bank raised its rates .",
    "bank\tN\t1-6\tThe bank lent money .\tWe opened an account at the bank .",
]
WIC_GOLD = ["F", "F", "T"]


def _wic_copy(root: Path, data=WIC_TRAIN, gold=WIC_GOLD) -> Path:
    for split in ("train", "test"):
        (root / split).mkdir(parents=True, exist_ok=True)
        (root / split / f"{split}.data.txt").write_text("\n".join(data) + "\n", encoding="utf-8")
        (root / split / f"{split}.gold.txt").write_text("\n".join(gold) + "\n", encoding="utf-8")
    return root


def test_wic_release_copy_is_read_with_token_indices_as_spans(tmp_path):
    ds = load(_wic_copy(tmp_path / "WiC"))
    assert ds.kind == "wic" and ds.task == "pair" and len(ds.split("train")) == 3 and len(ds.split("test")) == 3
    first = ds.split("train")[0]
    assert (first.lemma, first.pos, first.context.word, first.context2.word, first.label) == ("carry", "v", "carry", "carries", False)
    assert [it.label for it in ds.split("test")] == [False, False, True]
    assert [(it.context.word, it.context2.word) for it in ds.split("test")[1:]] == [("bank", "bank"), ("bank", "bank")]
    # one data file (its gold file beside it) is one split, named by the file
    one = load(tmp_path / "WiC" / "train" / "train.data.txt")
    assert [it.split for it in one.items] == ["train"] * 3


@pytest.mark.parametrize(
    "line, gold, where, message",
    [
        ("carry\tV\t2-1\tYou must carry .", "F", "train.data.txt:2", "expected 5 tab-separated fields"),
        ("carry\tADJ\t2-1\tYou must carry .\tSound carries .", "F", "train.data.txt:2", "pos must be N or V"),
        ("carry\tV\t2_1\tYou must carry .\tSound carries .", "F", "train.data.txt:2", "indices must look like 3-7"),
        ("carry\tV\t2-9\tYou must carry .\tSound carries .", "F", "train.data.txt:2", "token index 9 is outside sentence 2"),
        ("carry\tV\t2-1\tYou must carry .\tSound carries .", "Y", "train.gold.txt:2", "gold must be T or F"),
    ],
)
def test_wic_release_bad_line_is_named_by_file_and_number(tmp_path, line, gold, where, message):
    root = _wic_copy(tmp_path / "WiC", [WIC_TRAIN[0], line, WIC_TRAIN[2]], ["F", gold, "T"])
    with pytest.raises(DatasetError) as e:
        load(root)
    assert f"{where}: {message}" in str(e.value) and "(and 1 more bad line)" in str(e.value)  # test/ has it too


def test_wic_release_gold_file_must_match_the_data(tmp_path):
    root = _wic_copy(tmp_path / "WiC", WIC_TRAIN, WIC_GOLD[:2])
    with pytest.raises(DatasetError, match="2 gold lines for 3 data lines"):
        load(root)
    (root / "test" / "test.gold.txt").unlink()
    (root / "train" / "train.gold.txt").write_text("F\nF\nT\n")
    with pytest.raises(DatasetError, match="no gold file test.gold.txt"):
        load(root)


# ---- WiC-style pairs from the real SemCor ---------------------------------------------------------------
@pytest.fixture(scope="module")
def real_wic():
    from probegen.wordincontext.wic import WicConfig, build

    return build(WicConfig(max_pairs=80, seed=3), log=lambda m: None)


def test_real_wic_pairs_are_labelled_by_synset_balanced_and_lemma_disjoint(real_wic, graph):
    from probegen.wordincontext.wic import fine_reason

    items = real_wic.items
    assert len(items) >= 80 and all(it.task == "pair" for it in items)
    for it in items:
        s1, s2 = it.meta["synsets"]
        assert it.label == (s1 == s2)
        assert it.lemma.lower() in {lem.lower() for lem in graph.lemmas(s1)} & {lem.lower() for lem in graph.lemmas(s2)}
        assert it.meta["refs"][0] != it.meta["refs"][1] and it.context.text != it.context2.text
        if not it.label:
            assert fine_reason(graph, s1, s2, "wic") is None  # too-fine distinctions were pruned
    per_lemma = Counter((it.unit, it.label) for it in items)
    assert all(per_lemma[(u, True)] == per_lemma[(u, False)] for u, _ in per_lemma)  # balanced within every lemma
    splits: dict[str, set] = {}
    for it in items:
        splits.setdefault(it.split, set()).add(it.unit)
    assert {"train", "test"} <= splits.keys()
    assert not (splits["train"] & splits["test"]) and not (splits.get("dev", set()) & splits["test"])
    # the file order is shuffled: labels do not alternate or cluster by position
    labels = [it.label for it in items]
    assert labels != [True, False] * (len(labels) // 2) and labels[: len(labels) // 2].count(True) < len(labels) // 2
    c = real_wic.manifest["counts"]["construction"]
    assert c["f_pruned"].get("supersense", 0) > 0 and real_wic.manifest["seed"] == 3


def test_real_wic_contexts_show_the_target_only_in_its_span(real_wic):
    from probegen.leaks import default_morphology, visible_target_forms

    morph = default_morphology()
    for it in real_wic.items:
        for t in (it.context, it.context2):
            assert t.word.strip() and visible_target_forms(t.text, t.span, it.lemma, morph) == []


def test_real_wic_build_is_deterministic_and_written_atomically_with_checksums(real_wic, tmp_path):
    from probegen.io import sha256_file
    from probegen.wordincontext.wic import WicConfig, build

    again = build(WicConfig(max_pairs=80, seed=3), log=lambda m: None)
    a, b = write(real_wic, tmp_path / "a"), write(again, tmp_path / "b")
    for name in ("items.jsonl", "manifest.json"):
        assert (a / name).read_bytes() == (b / name).read_bytes()
    manifest = json.loads((a / "manifest.json").read_text())
    assert manifest["kind"] == "wic" and manifest["files"]["items.jsonl"] == sha256_file(a / "items.jsonl")
    assert manifest["config"]["max_pairs"] == 80 and manifest["counts"]["items"] == len(real_wic.items)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a", "b"]  # no temporary directories left
    back = load(a)
    assert [it.to_json() for it in back.items] == [it.to_json() for it in real_wic.items]
    other = build(WicConfig(max_pairs=80, seed=4), log=lambda m: None)
    assert [it.id for it in other.items] != [it.id for it in real_wic.items]
    # an edited items file no longer matches its manifest
    (a / "items.jsonl").write_text((a / "items.jsonl").read_text()[:-200] + "\n")
    with pytest.raises(DatasetError, match="changed after the dataset was written"):
        load(a)


def test_wic_pruning_rule_none_keeps_fine_distinctions(graph):
    from probegen.wordincontext.wic import WicConfig, build

    ds = build(WicConfig(max_pairs=40, seed=3, prune="none"), log=lambda m: None)
    assert ds.manifest["counts"]["construction"]["f_pruned"] == {}
    from probegen.wordincontext.wic import fine_reason

    fine = [it for it in ds.items if not it.label and fine_reason(graph, *it.meta["synsets"], "wic")]
    assert fine  # without pruning, same-supersense / sister F pairs do occur


# ---- WSD-style items from the real SemCor ------------------------------------------------------------------
@pytest.fixture(scope="module")
def real_wsd():
    from probegen.wordincontext.wsd import WsdConfig, build

    return build(WsdConfig(max_items=120, seed=1), log=lambda m: None)


def test_real_wsd_items_offer_every_sense_with_the_tagged_one_as_gold(real_wsd, graph):
    from probegen.leaks import default_morphology, visible_target_forms
    from probegen.wordincontext.wsd import sense_index

    senses = sense_index(graph, ("n", "v"))
    morph = default_morphology()
    golds = Counter()
    for it in real_wsd.items:
        cands = senses[(it.lemma, it.pos)]
        assert len(it.choices) == len(cands) >= 2
        assert sorted(it.meta["choice_synsets"]) == sorted(cands)
        assert list(it.choices) == [graph.definition(s) for s in it.meta["choice_synsets"]]
        assert it.meta["choice_synsets"][it.gold] == it.meta["synset"]
        assert visible_target_forms(it.context.text, it.context.span, it.lemma, morph) == []
        golds[it.gold] += 1
    assert len(golds) >= 4  # seeded choice order: the gold is not parked at one position
    reordered = sum(it.meta["choice_synsets"] != senses[(it.lemma, it.pos)] for it in real_wsd.items)
    assert reordered > len(real_wsd.items) / 2  # not WordNet's (frequency-ranked) sense order


def test_real_wsd_splits_are_disjoint_by_document_and_deterministic(real_wsd, tmp_path):
    from probegen.wordincontext.wsd import WsdConfig, build

    docs: dict[str, set] = {}
    for it in real_wsd.items:
        assert it.unit == it.meta["ref"].split("#")[0]
        docs.setdefault(it.split, set()).add(it.unit)
    assert {"train", "test"} == docs.keys() and not (docs["train"] & docs["test"])
    again = build(WsdConfig(max_items=120, seed=1), log=lambda m: None)
    assert (write(real_wsd, tmp_path / "a") / "items.jsonl").read_bytes() == (write(again, tmp_path / "b") / "items.jsonl").read_bytes()
    assert load(tmp_path / "a").manifest["counts"]["items"] == 120


# ---- the trained bias method ------------------------------------------------------------------------------
class BagEncoder:
    """A deterministic stand-in encoder: hashed words and character trigrams of the shown text.

    It sees exactly what a condition shows (the masked context, the word alone), so the trained
    method must find what the synthetic data plants in that part of the input."""

    mask = "[MASK]"
    dim = 128
    name = "bag"
    net = object()

    def vectors(self, rows, progress=False):
        import re
        import zlib

        out = np.zeros((len(rows), self.dim), dtype=np.float32)
        for i, (text, _) in enumerate(rows):
            for w in re.findall(r"[a-z]+", text.lower()):
                out[i, zlib.crc32(w.encode()) % self.dim] += 1.0
                for k in range(len(w) - 2):
                    out[i, zlib.crc32(("#" + w[k : k + 3]).encode()) % self.dim] += 0.5
        return out


CUES = ["river", "money", "music", "garden", "battle", "kitchen"]


def _ctx(rng, lemma: str, cue: str, inflect: bool = False) -> Target:
    filler = rng.choice(["the", "a", "one", "some"])
    left = f"{filler} old "
    word = lemma + (rng.choice(["", "s", "es"]) if inflect else "")
    text = f"{left}{word} was near {filler} {cue} today."
    return Target(text, (len(left), len(left) + len(word)))


def context_biased_pairs(n_lemmas: int = 60, per: int = 8, seed: int = 0):
    """WiC-like pairs whose label only the contexts carry: T iff both contexts share their cue word."""
    from probegen.wordincontext.dataset import WicDataset

    rng = np.random.default_rng(seed)
    items = []
    for k in range(n_lemmas):
        lemma = f"zq{k}x"
        split = "test" if k % 4 == 0 else "train"
        for j in range(per):
            c1 = CUES[rng.integers(len(CUES))]
            same = j % 2 == 0
            c2 = c1 if same else rng.choice([c for c in CUES if c != c1])
            # inflected forms: the word condition is not one identical input per lemma (an all-tie classifier)
            items.append(WicItem(f"{lemma}-{j}", lemma, "n", _ctx(rng, lemma, c1, True), _ctx(rng, lemma, c2, True), same,
                                 split=split, unit=lemma, meta={"synsets": [f"{lemma}.{c1}", f"{lemma}.{c2}"]}))
    return WicDataset(items, {"kind": "wic"}, "synthetic")


def word_biased_labels(n: int = 400, seed: int = 0):
    """One-context items whose label is the target word's suffix (-ing vs -ed); the context is noise."""
    from probegen.wordincontext.dataset import WicDataset

    rng = np.random.default_rng(seed)
    items = []
    for k in range(n):
        stem = "".join(rng.choice(list("bdfgklmprstvz"), 4))
        label = "ing" if k % 2 else "ed"
        items.append(WicItem(f"i{k}", stem + label, "v", _ctx(rng, stem + label, CUES[rng.integers(len(CUES))]),
                             label=label, split="test" if k % 4 == 0 else "train", unit=f"u{k}"))
    return WicDataset(items, {"kind": "wordincontext"}, "synthetic")


def test_trained_method_finds_a_context_biased_pair_set():
    from probegen.diagnostics.trained import TrainedConfig
    from probegen.run.trained import measure

    r = measure(context_biased_pairs(), "ctx", BagEncoder(), TrainedConfig(n_boot=200), log=lambda m: None, progress=False)
    m = {c: v["mean"] for c, v in r["conditions"].items()}
    # word-only sees no cue: chance on 15 x 8 balanced test pairs; 5 SD of Binomial(120, .5)/120 = .23
    # bounds the false-failure rate below 1e-6 (the label condition is exact: labels are balanced)
    assert m["full"] > 0.85 and m["context"] > 0.85 and abs(m["word"] - 0.5) < 5 * np.sqrt(0.25 / 120) and abs(m["label"] - 0.5) < 0.01
    assert r["ratios"]["bias_c"]["value"] > 0.85 and abs(r["ratios"]["bias_w"]["value"]) < 0.3
    assert r["side"] == "context-biased" and r["paper"]["bias_c"] == 1.055
    assert len(r["conditions"]["full"]["per_seed"]) == 3 and r["n_test_units"] == 15
    assert r["entropy"]["all"]["label"]["mean"] == pytest.approx(1.0)  # balanced T/F within every lemma


def test_trained_method_finds_a_word_biased_label_set():
    from probegen.diagnostics.trained import TrainedConfig
    from probegen.run.trained import measure

    r = measure(word_biased_labels(), "word", BagEncoder(), TrainedConfig(n_boot=200), log=lambda m: None, progress=False)
    assert r["conditions"]["word"]["mean"] > 0.8 and r["conditions"]["full"]["mean"] > 0.8
    assert r["ratios"]["bias_w"]["value"] > 0.8 and r["ratios"]["bias_c"]["value"] < 0.3
    assert r["side"] == "word-biased" and r["paper"] is None


def test_trained_choice_items_are_scored_by_argmax_with_ties_at_random():
    from probegen.diagnostics.trained import TrainedConfig
    from probegen.run.trained import features, measure
    from probegen.wordincontext.dataset import WicDataset
    from probegen.wordincontext.task import choice_correct

    rng = np.random.default_rng(1)
    items = []
    for k in range(240):
        cue = CUES[k % len(CUES)]
        others = list(rng.choice([c for c in CUES if c != cue], 3, replace=False))  # every cue a distractor as often
        choices = [f"something about {c}" for c in [cue] + others]
        order = rng.permutation(4)
        shown = [choices[i] for i in order]
        lemma = f"zq{rng.integers(30)}x"  # independent of the cue: the word alone says nothing
        items.append(WicItem(f"c{k}", lemma, "n", _ctx(rng, lemma, cue), choices=tuple(shown),
                             gold=int(np.where(order == 0)[0][0]), split="test" if k % 5 == 0 else "train", unit=f"d{k % 40}"))
    ds = WicDataset(items, {"kind": "wsd"}, "synthetic")
    X, y, g = features(items[:2], "full", BagEncoder())
    assert X.shape == (8, 4 * BagEncoder.dim) and y.sum() == 2 and g.tolist() == [0, 0, 0, 0, 1, 1, 1, 1]
    r = measure(ds, "wsd-like", BagEncoder(), TrainedConfig(n_boot=200), log=lambda m: None, progress=False)
    assert r["conditions"]["context"]["mean"] > 0.9 and r["conditions"]["word"]["mean"] < 0.45
    assert r["task"] == "choice" and r["paper"]["bias_w"] == 0.346
    # a tie is the core's: broken at random by the seed and item id, never for or against the gold
    tied = [choice_correct(np.zeros(4), np.zeros(4, int), np.array([1, 0, 0, 0]), [f"i{n}"])[0] for n in range(40)]
    assert 0 < sum(tied) < 40


def test_trained_method_needs_train_and_test_splits():
    from probegen.diagnostics.trained import train_test
    from probegen.wordincontext.dataset import WicDataset

    ds = context_biased_pairs(n_lemmas=4, per=2)
    only_train = WicDataset([WicItem(**{**it.__dict__, "split": "train"}) for it in ds.items], {"kind": "wic"})
    with pytest.raises(ProbegenError, match="needs a train split and a test"):
        train_test(only_train, "x")


def test_run_trained_writes_report_plot_and_per_item_correctness(tmp_path):
    from probegen.diagnostics.trained import TrainedConfig, summary_table
    from probegen.run.trained import run_trained

    path = tmp_path / "pairs.jsonl"
    _jsonl(path, [it.to_json() for it in context_biased_pairs().items])
    res = run_trained("bag", [path], tmp_path / "out", TrainedConfig(n_boot=100, seeds=2), log=lambda m: None,
                      progress=False, encoder=BagEncoder(), runner=Runner(log=lambda m: None))
    out = tmp_path / "out"
    assert sorted(p.name for p in out.iterdir()) == [".probegen-output.json", "bias_plane.png", "pairs", "report.md", "results.json"]
    d = json.loads((out / "results.json").read_text())["datasets"][0]
    assert d["kind"] == "wordincontext" and d["task"] == "pair" and d["paper"]["name"].startswith("WiC")
    rows = (out / "pairs" / "correct.jsonl").read_text().splitlines()
    assert len(rows) == d["n_test"] and len(json.loads(rows[0])["full"]) == 2
    report = (out / "report.md").read_text()
    assert "1.055 / 0.473 (context-biased)" in report and "context-biased" in report and "Table 4" in report
    assert "pairs" in summary_table(res)


# ---- a real (tiny, random) transformer ---------------------------------------------------------------------
@pytest.fixture(scope="module")
def tiny_bert(tmp_path_factory) -> str:
    import torch
    from transformers import BertConfig, BertForMaskedLM, BertTokenizerFast

    from probegen.models import resolve_model

    tok = BertTokenizerFast(vocab=str(Path(resolve_model("minilm-l6").path_or_id) / "vocab.txt"))
    torch.manual_seed(0)
    cfg = BertConfig(vocab_size=tok.vocab_size, hidden_size=16, num_hidden_layers=1, num_attention_heads=2, intermediate_size=32)
    path = tmp_path_factory.mktemp("tiny-bert")
    BertForMaskedLM(cfg).save_pretrained(str(path))
    tok.save_pretrained(str(path))
    return str(path)


def test_encoder_reads_the_target_tokens_by_character_offsets(tiny_bert):
    import torch

    from probegen.run.trained import load_encoder

    enc = load_encoder(tiny_bert, runner=Runner(log=lambda m: None))
    text = "The riverbank was steep."
    got = enc.batch([(text, (4, 13)), (text, None)]).numpy()
    ids = enc.tok(text, return_tensors="pt")
    pieces = enc.tok.convert_ids_to_tokens(ids["input_ids"][0])
    with torch.no_grad():
        h = enc.net(**ids, output_hidden_states=True).hidden_states[-1][0].numpy()
    target = [k for k, p in enumerate(pieces) if p in ("river", "##bank")]
    assert len(target) == 2 and np.allclose(got[0], h[target].mean(0), atol=1e-5)
    assert np.allclose(got[1], h.mean(0), atol=1e-5)
    assert enc.mask == "[MASK]"


def test_finetune_loop_trains_and_scores_on_a_tiny_model(tiny_bert):
    from probegen.diagnostics.trained import TrainedConfig
    from probegen.run.finetune import finetune_correct
    from probegen.run.trained import load_encoder

    ds = context_biased_pairs(n_lemmas=8, per=4)
    enc = load_encoder(tiny_bert, runner=Runner(log=lambda m: None))
    before = [p.detach().clone() for p in enc.net.parameters()]
    got = finetune_correct(enc, "context", ds.split("train"), ds.split("test"), 0, TrainedConfig(epochs=1, batch_size=8))
    assert got.dtype == bool and len(got) == len(ds.split("test"))
    assert all((a == b).all() for a, b in zip(before, enc.net.parameters()))  # the shared encoder is untouched


# ---- the command line ---------------------------------------------------------------------------------------
def _run(*args):
    from click.testing import CliRunner

    from probegen.commands.cli import cli

    r = CliRunner().invoke(cli, list(args))
    return r.exit_code, r.stdout, r.stderr


def _one_line_error(code, err, *needles):
    lines = [ln for ln in err.strip().splitlines() if ln.strip()]
    assert code == 1 and len(lines) == 1 and lines[0].startswith("probegen: error:"), err
    for n in needles:
        assert n in lines[0], lines[0]


def test_bias_trained_command_end_to_end_on_a_generic_jsonl(tmp_path, tiny_bert):
    path = _jsonl(tmp_path / "pairs.jsonl", [it.to_json() for it in context_biased_pairs(n_lemmas=12, per=4).items])
    code, out, err = _run("bias", "--model", tiny_bert, "--dataset", str(path), "--out", str(tmp_path / "r"), "--seeds", "2", "--bootstrap", "50")
    assert code == 0, err
    assert "pairs" in out and (tmp_path / "r" / "bias_plane.png").is_file()
    res = json.loads((tmp_path / "r" / "results.json").read_text())
    assert res["config"]["seeds"] == 2 and res["datasets"][0]["n_test"] == 12


def test_bias_trained_command_errors_are_one_line_and_write_nothing(tmp_path, tiny_bert):
    bad = _jsonl(tmp_path / "bad.jsonl", [CHOICE, {**CHOICE, "id": "c2", "span": [0, 500]}])
    out = tmp_path / "r"
    code, _, err = _run("bias", "--model", tiny_bert, "--dataset", str(bad), "--out", str(out))
    _one_line_error(code, err, "bad.jsonl:2:", "'span' [0, 500] is outside")
    assert not out.exists()
    good = _jsonl(tmp_path / "ok.jsonl", [it.to_json() for it in context_biased_pairs(n_lemmas=4, per=2).items])
    code, _, err = _run("bias", "--model", tiny_bert, "--dataset", str(good), "--finetune", "--out", str(out))
    _one_line_error(code, err, "--finetune needs a CUDA GPU")
    code, _, err = _run("bias", "--model", tiny_bert, "--dataset", str(good), "--method", "zeroshot", "--out", str(out))
    _one_line_error(code, err, "word-in-context dataset", "--method trained")
    assert not out.exists()


def test_make_wsd_command_on_the_real_semcor(tmp_path):
    code, out, err = _run("make", "wsd", "--max-items", "30", "--pos", "noun", "--out", str(tmp_path / "wsd"))
    assert code == 0, err
    assert "wrote" in out and "choices on average" in out
    manifest = json.loads((tmp_path / "wsd" / "manifest.json").read_text())
    assert manifest["kind"] == "wsd" and manifest["config"]["max_items"] == 30 and manifest["counts"]["items"] == 30
    assert {it.pos for it in load(tmp_path / "wsd").items} == {"n"}
    code, _, err = _run("make", "wic", "--max-pairs-per-lemma", "1", "--out", str(tmp_path / "w"))
    assert code == 2  # a click usage error


def test_eval_on_a_wic_release_copy_is_a_linear_probe(tmp_path, tiny_bert):
    rows = WIC_TRAIN * 6
    root = _wic_copy(tmp_path / "WiC", rows, WIC_GOLD * 6)
    code, out, err = _run("eval", "--model", tiny_bert, "--dataset", str(root), "--out", str(tmp_path / "r"))
    assert code == 0, err
    assert "accuracy" in out and "18 test items" in out
    res = json.loads((tmp_path / "r" / "results.json").read_text())
    assert res["kind"] == "wic" and len(res["metrics"]["accuracy"]["per_seed"]) == 3
    assert len((tmp_path / "r" / "items.jsonl").read_text().splitlines()) == 18
    bad = _wic_copy(tmp_path / "Bad", [WIC_TRAIN[0], "carry\tV\t2-1\tYou must carry ."], ["F", "T"])
    code, _, err = _run("eval", "--model", tiny_bert, "--dataset", str(bad), "--out", str(tmp_path / "r2"))
    _one_line_error(code, err, "train.data.txt:2: expected 5 tab-separated fields")
    assert not (tmp_path / "r2").exists()
