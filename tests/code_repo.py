"""A small repository for code-graph tests: Python and TypeScript, with imports,
aliases, a class hierarchy, a star import with ``__all__``, typed fields, and a name
(``helper`` / ``format``) that two modules define. Twelve files."""

from __future__ import annotations

import subprocess
from pathlib import Path

from tests.helpers import git_init

FILES = {
    "pkg/__init__.py": "",
    "pkg/util.py": """\
__all__ = ["helper", "Base"]


def helper(x):
    return x + 1


def _hidden():
    return 0


class Base:
    def run(self):
        return self.step()

    def step(self):
        return helper(1)
""",
    "pkg/other.py": """\
def helper(x):
    return x * 2


def unrelated():
    return helper(0)
""",
    "pkg/models.py": """\
from pkg.util import Base


class Child(Base):
    def step(self):
        return super().step()

    def go(self):
        return self.run()
""",
    "pkg/app.py": """\
from pkg.util import helper as h
from pkg.models import Child


def main():
    h(2)
    c = Child()
    return c.go()
""",
    "pkg/starred.py": """\
from pkg.util import *


def use_star():
    return helper(5)
""",
    "web/src/lib.ts": """\
export function format(x: number): string {
  return String(x);
}

export class Greeter {
  greet(name: string): string {
    return format(name.length);
  }
}
""",
    "web/src/other.ts": """\
export function format(x: number): string {
  return "other" + x;
}
""",
    "web/src/main.ts": """\
import { format as fmt, Greeter } from "./lib";

export function run(): string {
  const g = new Greeter();
  g.greet("x");
  return fmt(1);
}
""",
    "web/src/view.tsx": """\
import { run } from "./main";

export function View() {
  return <div>{run()}</div>;
}
""",
    "pkg/service.py": """\
from pkg.models import Child


class Service:
    helper: Child

    def __init__(self):
        self.child = Child()

    def work(self):
        self.child.go()
        return self.helper.step()
""",
    "web/src/service.ts": """\
import { Greeter } from "./lib";

export class Service {
  constructor(private greeter: Greeter) {}

  hello(): string {
    return this.greeter.greet("x");
  }
}
""",
}


def write_repo(root: Path, commit: bool = True) -> Path:
    git_init(root)
    for path, text in FILES.items():
        target = root / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
    if commit:
        git(root, "add", "-A")
        git(root, "commit", "-q", "-m", "fixture")
    return root.resolve()


def git(root: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-C", str(root), "-c", "user.name=t", "-c", "user.email=t@example.com", *args],
        check=True,
        capture_output=True,
    )
