"""A deterministic stand-in for the embedding model, for fast tests of the vector plumbing.

Vectors are hashed bags of lower-cased words (so shared words mean similar vectors);
long texts are split into fixed character windows. Install it with ``use_fake``: it
becomes the process's loaded encoder for the configured model ``fake/hash``, so the
real settings, drain, matrix files and recall code all run around it.
"""

from __future__ import annotations

import hashlib
import re

import numpy as np
import pytest

from marm import embed

MODEL = "fake/hash"
DIM = 64
WINDOW = 400
OVERLAP = 80


class FakeEncoder:
    model = MODEL
    dim = DIM

    def __init__(self) -> None:
        self.calls = 0

    def embed(self, texts):
        self.calls += 1
        out = np.zeros((len(texts), DIM), dtype=np.float32)
        for i, text in enumerate(texts):
            for word in re.findall(r"\w+", text.lower()):
                h = int(hashlib.md5(word.encode()).hexdigest(), 16)
                out[i, h % DIM] += 1.0 if (h >> 8) % 2 else -1.0
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        norms[norms == 0] = 1.0
        return out / norms

    def spans(self, text):
        if len(text) <= WINDOW:
            return [(0, len(text))]
        spans, start = [], 0
        while True:
            end = min(start + WINDOW, len(text))
            spans.append((start, end))
            if end == len(text):
                return spans
            start = end - OVERLAP


def use_fake(monkeypatch: pytest.MonkeyPatch, ctx) -> FakeEncoder:
    """Make the fake the loaded encoder for ``ctx``'s home (and the environment's)."""
    fake = FakeEncoder()
    monkeypatch.setenv("MARM_EMBED_MODEL", MODEL)
    ctx.env["MARM_EMBED_MODEL"] = MODEL
    monkeypatch.setitem(embed._LOADED, (MODEL, str(ctx.home)), fake)
    return fake
