"""``marm mcp`` over STDIO: the handshake answered at once while the MCP SDK loads.

Importing the SDK costs a start most of its time (its protocol types are pydantic
models for every protocol version, and its server module pulls in the HTTP
transports): ~0.5 s on an idle machine, over a second on a busy one. A client waits
only for ``initialize`` and ``tools/list`` before its agent can go on, and both
answers depend on nothing but marm's code and the SDK's. So the server answers them
from what the SDK itself said to the same requests last time (``Handshake``: saved in
``$MARM_HOME/cache/mcp-handshake.json``, keyed by the protocol version the client asks
for, and valid only while every file of marm, the SDK and pydantic is the one that
said it), while a thread imports the SDK and builds the server
(``marm.mcp_server.build``). Then the stream is handed to the SDK: it first reads the
lines that came so far (``initialize`` included, so its session holds the client's
capabilities and name; its own answer to it is dropped, the client has one), then
the rest. Without a saved answer (the first start of a home, or after an upgrade),
the SDK answers everything, and what it says is saved for the next start.

The process claims the protocol's descriptors at once, as the SDK's own transport
does: fd 0 reads the null device and fd 1 writes to stderr, so a stray print never
reaches the client. SIGINT and SIGTERM end the process at once, at any point (Claude
Code sends SIGINT, then SIGTERM 100 ms later); so does the end of stdin before the SDK
is up.
"""

from __future__ import annotations

import hashlib
import logging
import os
import queue
import signal
import sys
import threading
from collections.abc import AsyncIterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson

if TYPE_CHECKING:
    from marm.mcp_server import Served

log = logging.getLogger("marm.mcp")

#: The packages whose files shape the handshake's answers (with marm's own).
_SHAPERS = ("mcp", "mcp_types", "pydantic", "pydantic_core")
#: What the builder thread puts in the inbox once the SDK's server is built (a line
#: read from the stream is never empty).
_READY = b""


def cache_path(home: Path) -> Path:
    return home / "cache" / "mcp-handshake.json"


def fingerprint() -> str:
    """Every file that shapes the answers, by path, size and modification time: marm's
    modules, and the SDK's and pydantic's package folders (an upgrade replaces them)."""
    import importlib.util

    import marm

    parts = [sys.version]
    for path in sorted(Path(marm.__file__).parent.rglob("*.py")):
        st = path.stat()
        parts.append(f"{path} {st.st_size} {st.st_mtime_ns}")
    for name in _SHAPERS:
        spec = importlib.util.find_spec(name)
        for folder in (spec.submodule_search_locations or []) if spec else []:
            for entry in sorted(os.scandir(folder), key=lambda e: e.name):
                st = entry.stat()
                parts.append(f"{entry.path} {st.st_size} {st.st_mtime_ns}")
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()


def _key(message_id: Any) -> str:
    """A JSON-RPC id as a dictionary key (``1`` and ``"1"`` stay apart)."""
    return orjson.dumps(message_id).decode()


class Handshake:
    """The SDK's answers to ``initialize`` (by requested protocol version) and
    ``tools/list`` (by negotiated version), saved from one start for the next.

    ``answer`` answers a request line from the saved answers when it can; ``note`` and
    ``heard`` watch the SDK's answers to the requests it got instead, and save them.
    ``passes`` drops the SDK's answer to a request answered here already.
    """

    def __init__(self, home: Path) -> None:
        self.path = cache_path(home)
        self.key = fingerprint()
        self.saved: dict[str, dict[str, Any]] = {"initialize": {}, "tools/list": {}}
        try:
            data = orjson.loads(self.path.read_bytes())
            if data.get("key") == self.key:
                self.saved = {"initialize": dict(data["initialize"]), "tools/list": dict(data["tools/list"])}
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            pass  # none yet, or from other code: the SDK answers and it is saved anew
        self.version: str | None = None   # the protocol version the session runs
        self.answered: set[str] = set()   # ids answered here; the SDK's answers are dropped
        self.watched: dict[str, tuple[str, str | None]] = {}  # id -> (method, version asked)
        self._changed = False

    @property
    def watching(self) -> bool:
        """Whether outgoing messages still need a look (``passes``)."""
        return bool(self.answered or self.watched)

    @property
    def complete(self) -> bool:
        """Whether both answers of this session's protocol version are saved."""
        return self.version is not None and self.version in self.saved["tools/list"]

    def answer(self, line: bytes) -> tuple[bytes | None, bool]:
        """(the reply to write, or None; whether the SDK must read the line too)."""
        request = self._request(line)
        if request is None:
            return None, True
        mid, method, params = request
        if method == "initialize" and self.version is None:
            asked = params.get("protocolVersion")
            result = self.saved["initialize"].get(asked) if isinstance(asked, str) else None
            if result is None or not isinstance(params.get("clientInfo"), dict):
                self._watch(mid, method, asked if isinstance(asked, str) else None)
                return None, True
            self.version = result.get("protocolVersion")
            self.answered.add(_key(mid))
            return self._reply(mid, result), True  # the SDK's session must see it too
        if method == "tools/list" and self.version is not None and not params.get("cursor"):
            result = self.saved["tools/list"].get(self.version)
            if result is not None:
                return self._reply(mid, result), False
        self.note(line)
        return None, True

    def note(self, line: bytes) -> None:
        """Watch for the SDK's answer to a handshake request it reads itself."""
        request = self._request(line)
        if request is not None:
            mid, method, params = request
            if method == "initialize" and isinstance(params.get("protocolVersion"), str):
                self._watch(mid, method, params["protocolVersion"])
            elif method == "tools/list" and not params.get("cursor"):
                self._watch(mid, method, None)

    def passes(self, data: bytes) -> bool:
        """Whether an outgoing message goes to the client (False: answered here already);
        an answer to a watched request is kept for the next start."""
        try:
            message = orjson.loads(data)
        except ValueError:
            return True
        if not isinstance(message, dict) or "id" not in message or "method" in message:
            return True
        key = _key(message["id"])
        if key in self.answered:
            self.answered.discard(key)
            return False
        watched = self.watched.pop(key, None)
        result = message.get("result")
        if watched is not None and isinstance(result, dict):
            method, asked = watched
            if method == "initialize" and asked is not None:
                self.version = result.get("protocolVersion")
                self._keep("initialize", asked, result)
            elif method == "tools/list" and self.version is not None:
                self._keep("tools/list", self.version, result)
        return True

    def _keep(self, method: str, version: str, result: dict[str, Any]) -> None:
        if self.saved[method].get(version) == result:
            return
        self.saved[method][version] = result
        tmp = self.path.with_name(f"{self.path.name}.{os.getpid()}")
        try:  # only a cache: a home that cannot be written answers through the SDK
            self.path.parent.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            self.path.parent.mkdir(exist_ok=True, mode=0o700)
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            try:
                write_all(fd, orjson.dumps({"key": self.key, **self.saved}))
            finally:
                os.close(fd)
            os.replace(tmp, self.path)
        except OSError as exc:
            log.debug("could not save the handshake answers: %s", exc)

    def _watch(self, mid: Any, method: str, asked: str | None) -> None:
        self.watched[_key(mid)] = (method, asked)

    @staticmethod
    def _request(line: bytes) -> tuple[Any, str, dict[str, Any]] | None:
        """(id, method, params) of a request line; None for anything else."""
        try:
            message = orjson.loads(line)
        except ValueError:
            return None
        if not isinstance(message, dict) or "id" not in message or not isinstance(message.get("method"), str):
            return None
        params = message.get("params")
        return message["id"], message["method"], params if isinstance(params, dict) else {}

    @staticmethod
    def _reply(mid: Any, result: dict[str, Any]) -> bytes:
        return orjson.dumps({"jsonrpc": "2.0", "id": mid, "result": result}) + b"\n"


def write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


class _ClientLines:
    """The client's stream as the SDK's transport reads it: the lines read before the
    server was up, then the rest as they come (``serve``)."""

    def __init__(self, early: list[bytes], inbox: queue.Queue[bytes | None], handshake: Handshake) -> None:
        self.early, self.inbox, self.handshake = early, inbox, handshake

    def _next(self) -> bytes | None:
        return self.inbox.get()

    async def __aiter__(self) -> AsyncIterator[str]:
        for read in self.early:
            yield read.decode("utf-8", "replace")
        import anyio.to_thread  # start-up cost: the SDK's dependency, loaded by now

        while True:
            line = await anyio.to_thread.run_sync(self._next, abandon_on_cancel=True)
            if line is None:
                return
            if not self.handshake.complete:
                self.handshake.note(line)
            yield line.decode("utf-8", "replace")


class _ClientWire:
    """Where the SDK's transport writes: the protocol descriptor, less the answers the
    handshake gave already."""

    def __init__(self, fd: int, handshake: Handshake) -> None:
        self.fd, self.handshake = fd, handshake

    async def write(self, text: str) -> None:
        import anyio.to_thread  # start-up cost: the SDK's dependency, loaded by now

        data = text.encode("utf-8")
        if self.handshake.watching and not self.handshake.passes(data):
            return
        await anyio.to_thread.run_sync(write_all, self.fd, data)

    async def flush(self) -> None:
        pass


def _claim() -> tuple[int, int]:
    """Private copies of the protocol's descriptors; fd 0 then reads the null device and
    fd 1 writes to stderr."""
    wire_in, wire_out = os.dup(0), os.dup(1)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    os.dup2(2, 1)
    return wire_in, wire_out


def _read(fd: int, inbox: queue.Queue[bytes | None]) -> None:
    """Every line of the client's stream into ``inbox``, then None at its end."""
    try:
        with os.fdopen(fd, "rb", closefd=False) as stream:
            for line in stream:
                inbox.put(line)
    except (OSError, ValueError) as exc:
        log.debug("reading the client's stream failed: %s", exc)
    inbox.put(None)


def exit_on_signals() -> None:
    """SIGINT and SIGTERM end the process at once, whatever it is doing."""
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, _stop)


def _stop(signum: int, frame: Any) -> None:
    sys.stderr.flush()
    os._exit(128 + signum)


def serve(cwd: Path, env: Mapping[str, str], home: Path) -> Served | None:
    """Serve over STDIO until the client closes the connection; logs go to stderr.
    Returns what was served (None: the client left before the SDK was up).

    Work the session queued (embeddings) stays queued in the outbox for the next drain;
    a drain running in the background is cut off mid-transaction, which SQLite rolls
    back, and its tasks are taken up again by the next drain.
    """
    exit_on_signals()
    logging.basicConfig(stream=sys.stderr, level="DEBUG" if env.get("MARM_DEBUG") else "WARNING",
                        format="marm mcp: %(levelname)s %(name)s: %(message)s")
    wire_in, wire_out = _claim()
    inbox: queue.Queue[bytes | None] = queue.Queue()
    built: dict[str, Any] = {}

    def build() -> None:
        try:
            from marm import mcp_server  # start-up cost: the SDK, while the handshake is answered

            built["server"] = mcp_server.build(cwd, env)
        except BaseException as exc:  # noqa: BLE001 - reported by the main thread
            built["error"] = exc
        inbox.put(_READY)

    handshake = Handshake(home)  # before the builder takes the interpreter's lock
    threading.Thread(target=_read, args=(wire_in, inbox), name="marm-mcp-read", daemon=True).start()
    threading.Thread(target=build, name="marm-mcp-build", daemon=True).start()
    early: list[bytes] = []  # the lines the SDK reads first
    while (line := inbox.get()) != _READY:
        if line is None:
            return None  # the client is gone: nothing was served
        reply, forward = handshake.answer(line)
        if reply is not None:
            write_all(wire_out, reply)
        if forward:
            early.append(line)
    if "error" in built:
        raise built["error"]
    from marm import mcp_server

    server, served = built["server"]
    try:
        mcp_server.run(server, _ClientLines(early, inbox, handshake), _ClientWire(wire_out, handshake))
    finally:
        # Queued work stays queued; the drain thread (a daemon) and the connection kept
        # open end with the process: closing it would checkpoint the WAL, tens of ms.
        served.background.finish(timeout=0, run_pending=False)
    return served
