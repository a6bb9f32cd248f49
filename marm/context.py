"""The invocation context an op receives: who is calling, from where, and a lazily
opened store. One ``Ctx`` per CLI process, per MCP tool call, per hook event."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from marm import config, scope
from marm.errors import BadInput
from marm.store import Actor, Store, flags
from marm.text import clean_name


@dataclass
class Ctx:
    source: str = "cli"                       # cli | mcp | hook:<event> | import
    platform: str | None = None               # claude | codex | gemini | ...
    cwd: Path = field(default_factory=Path.cwd)
    env: Mapping[str, str] = field(default_factory=lambda: dict(os.environ))
    interactive: bool = False                 # a person at a terminal (progress bars)
    _store: Store | None = None
    _files: dict[str, tuple[dict[str, str], str | None]] = field(default_factory=dict)

    @property
    def home(self) -> Path:
        return config.home_dir(self.env)

    def store(self) -> Store:
        if self._store is None:
            self._store = Store.open(config.database_path(self.home), Actor(self.source, self.platform))
        return self._store

    def close(self) -> None:
        if self._store is not None:
            self._store.close()
            self._store = None

    def project(self, explicit: str | None = None) -> str | None:
        return scope.resolve_project(explicit, self.env, self.cwd)

    def setting(self, key: str) -> str:
        """A runtime setting for this invocation's project (see ``resolved``)."""
        return self.resolved(key).value

    def number(self, key: str, lenient: bool = False) -> float:
        """A numeric setting (``config.Setting.bounds``) for this invocation's project. A
        value out of its bounds (from the environment: ``config set`` refuses one) is
        refused naming the setting and where the value came from; ``lenient`` (hooks and
        drains, which must not fail on it) takes the default instead."""
        got = self.resolved(key)
        spec = config.SETTINGS[key]
        if lenient:
            return spec.number_or_default(got.value)
        try:
            return spec.number(got.value)
        except ValueError as e:
            raise BadInput(f"{e} (from {got.source})") from None

    def resolved(self, key: str, project: str | None = None) -> config.Resolved:
        """A runtime setting and its source: project > repository file > global >
        environment > default (``config.resolve``), for ``project`` (default: this one)."""
        if project is None:
            project = self.project()
        store = self.store()
        saved = flags.get(store, key)
        return config.resolve(key, {} if saved is None else {key: saved}, self.env,
                              flags.project_saved(store, project), self.project_file(project)[0])

    def project_file(self, project: str | None) -> tuple[dict[str, str], str | None]:
        """What the project's ``.marm.toml`` says and a problem with it (read once per Ctx)."""
        directory = scope.file_directory(project, self.cwd)
        key = str(directory)
        if key not in self._files:
            self._files[key] = scope.read_file(directory, config.PROJECT_FILE)
        return self._files[key]

    def session(self, explicit: str | None = None) -> str:
        """The session a write is tagged with: explicit > saved/env setting > 'default'."""
        if explicit is not None:
            if not explicit.strip():
                raise BadInput("a session name cannot be empty")
            return clean_name(explicit)
        return clean_name(self.setting("session"))

    @contextmanager
    def progress(self, total: int | None, description: str) -> Iterator[Any]:
        """A progress bar on a person's terminal; a silent counter elsewhere."""
        if not (self.interactive and sys.stderr.isatty()):
            yield _Silent()
            return
        from rich.console import Console
        from rich.progress import Progress

        with Progress(transient=True, console=Console(stderr=True)) as bar:
            task = bar.add_task(description, total=total)
            yield _Bar(bar, task)


class _Silent:
    def advance(self, n: int = 1) -> None:
        pass

    def update(self, **_: Any) -> None:
        pass


class _Bar:
    def __init__(self, bar: Any, task: Any) -> None:
        self.bar, self.task = bar, task

    def advance(self, n: int = 1) -> None:
        self.bar.advance(self.task, n)

    def update(self, **kwargs: Any) -> None:
        self.bar.update(self.task, **kwargs)
