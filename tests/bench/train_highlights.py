"""Train the highlight classifier (``marm/capture/highlights.py``) and say how good it is.

    python tests/bench/train_highlights.py [--corpus tests/data/highlight_sentences.tsv]
        [--sessions ../shared/data/sessions/sessions-dev.json] [--write] [--json]

Softmax regression over the hashed features of ``highlights.features``, fitted with
full-batch gradient descent and L2. It prints five-fold cross-validated figures on the
corpus (keep/drop precision and recall, label accuracy among kept sentences) and, with
``--sessions``, how many gold facts of real transcripts have a sentence the classifier
keeps (a sentence containing a fact's ``must`` phrase) and how many sentences it keeps
per turn. ``--write`` fits on the whole corpus and writes the model files. The
transcripts are only read for the figures; nothing from them is trained on or written.
"""

from __future__ import annotations

import argparse
import json
import sys
import zlib
from array import array
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from marm.capture import highlights as hl  # noqa: E402
from marm.capture.sentences import is_english, sentences  # noqa: E402
from marm.capture import transcript  # noqa: E402

CLASSES = ("drop", "decision", "root_cause", "fix", "convention", "lesson")
BUCKETS = 8192


def load(path: Path) -> tuple[list[str], np.ndarray]:
    texts, labels = [], []
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        label, text = line.split("\t", 1)
        texts.append(text.strip())
        labels.append(CLASSES.index(label.strip()))
    return texts, np.array(labels)


def matrix(texts: list[str]) -> np.ndarray:
    x = np.zeros((len(texts), BUCKETS), dtype=np.float32)
    for row, text in enumerate(texts):
        for f in hl.features(text):
            x[row, zlib.crc32(f.encode()) % BUCKETS] += 1.0
    return x


def fit(x: np.ndarray, y: np.ndarray, l2: float = 3e-3, steps: int = 600, lr: float = 0.5):
    n, k = len(y), len(CLASSES)
    onehot = np.eye(k, dtype=np.float32)[y]
    # Balance the classes: each class weighs as much as the others in the loss.
    counts = np.bincount(y, minlength=k).astype(np.float32)
    sample_w = (n / (k * np.maximum(counts, 1)))[y][:, None]
    w = np.zeros((BUCKETS, k), dtype=np.float32)
    b = np.zeros(k, dtype=np.float32)
    for _ in range(steps):
        logits = x @ w + b
        logits -= logits.max(axis=1, keepdims=True)
        p = np.exp(logits)
        p /= p.sum(axis=1, keepdims=True)
        g = (p - onehot) * sample_w / n
        w -= lr * (x.T @ g + l2 * w)
        b -= lr * g.sum(axis=0)
    return w, b


def predict(w: np.ndarray, b: np.ndarray, x: np.ndarray) -> np.ndarray:
    logits = x @ w + b
    logits -= logits.max(axis=1, keepdims=True)
    p = np.exp(logits)
    return p / p.sum(axis=1, keepdims=True)


def cross_validate(texts: list[str], y: np.ndarray, keep: float, folds: int = 5) -> dict:
    x = matrix(texts)
    order = np.random.default_rng(7).permutation(len(y))
    probs = np.zeros((len(y), len(CLASSES)), dtype=np.float32)
    for f in range(folds):
        test = order[f::folds]
        train = np.setdiff1d(order, test)
        w, b = fit(x[train], y[train])
        probs[test] = predict(w, b, x[test])
    kept = (1 - probs[:, 0]) >= keep
    truth = y != 0
    tp = int((kept & truth).sum())
    label_ok = int(((probs[:, 1:].argmax(axis=1) + 1) == y)[kept & truth].sum())
    return {"n": len(y), "keep_precision": tp / max(1, int(kept.sum())), "keep_recall": tp / max(1, int(truth.sum())),
            "label_accuracy_kept": label_ok / max(1, tp)}


def session_figures(path: Path, model: hl.Model) -> dict:
    data = json.loads(path.read_text(encoding="utf-8"))
    facts = found = kept_total = sentence_total = turn_total = 0
    for s in data["sessions"]:
        transcript.TAIL_BYTES = 1 << 30  # the whole file, for the figures
        ts = transcript.turns(str(path.parent / s["transcript"]))
        kept_texts = []
        for t in ts:
            turn_total += 1
            for h in hl.highlights(t.messages, limit=99, m=model):
                kept_texts.append(h.text.lower())
            sentence_total += sum(1 for m in t.messages if is_english(m) for _ in sentences(m))
        kept_total += len(kept_texts)
        for f in s["facts"]:
            facts += 1
            found += any(p.lower() in k for k in kept_texts for p in f["must"])
    return {"facts": facts, "facts_in_highlights": found, "turns": turn_total, "sentences": sentence_total,
            "highlights": kept_total, "highlights_per_turn": kept_total / max(1, turn_total)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--corpus", default=str(ROOT / "tests/data/highlight_sentences.tsv"))
    ap.add_argument("--sessions", default=None)
    ap.add_argument("--keep", type=float, default=0.5, help="least keep probability")
    ap.add_argument("--neighbour", type=float, default=0.35, help="least keep probability of a next sentence")
    ap.add_argument("--write", action="store_true")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    texts, y = load(Path(a.corpus))
    out: dict = {"corpus": len(texts), "keep": a.keep, "neighbour": a.neighbour,
                 "cv": cross_validate(texts, y, a.keep)}
    print(f"corpus {len(texts)} sentences; 5-fold CV at keep >= {a.keep}: "
          f"precision {out['cv']['keep_precision']:.3f} recall {out['cv']['keep_recall']:.3f} "
          f"label accuracy {out['cv']['label_accuracy_kept']:.3f}")
    w, b = fit(matrix(texts), y)
    model = hl.Model(CLASSES, BUCKETS, array("f", w.T.astype(np.float32).ravel().tolist()),
                     tuple(float(v) for v in b), a.keep, a.neighbour)
    if a.sessions:
        out["sessions"] = session_figures(Path(a.sessions), model)
        sf = out["sessions"]
        print(f"sessions: {sf['facts_in_highlights']}/{sf['facts']} facts in a highlight; "
              f"{sf['highlights']} highlights from {sf['sentences']} sentences in {sf['turns']} turns "
              f"({sf['highlights_per_turn']:.1f} per turn)")
    if a.write:
        hl.WEIGHTS.write_bytes(w.T.astype("<f4").tobytes())
        hl.META.write_text(json.dumps({"classes": list(CLASSES), "buckets": BUCKETS, "bias": [round(float(v), 6) for v in b],
                                       "keep": a.keep, "neighbour": a.neighbour, "corpus": len(texts),
                                       "cv": {k: round(v, 4) if isinstance(v, float) else v for k, v in out["cv"].items()}},
                                      indent=1) + "\n")
        print(f"wrote {hl.WEIGHTS.name} ({hl.WEIGHTS.stat().st_size} bytes) and {hl.META.name}")
    if a.json:
        print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
