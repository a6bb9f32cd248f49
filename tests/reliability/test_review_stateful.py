"""Item 11 of issue 15: random sequences of log, doubt, retract, supersede, restore,
forget, export and import against a simple model of the store. After every step recall
returns exactly the memories the model says are visible (so never a retracted,
superseded or forgotten one, and never misses a visible one), and an export imported
into an empty store answers the same."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from marm.context import Ctx
from marm.ops import review
from marm.ops.memory import recall, write_memory
from marm.ops.transfer import export, import_

WORD = "quokka"
VISIBLE = {"active", "doubted"}


def _ctx(home: Path, cwd: Path) -> Ctx:
    return Ctx(cwd=cwd, env={**os.environ, "MARM_HOME": str(home)})


def _seen(ctx: Ctx, include: str | None = None) -> dict[int, tuple[str, str]]:
    rows = recall(ctx, WORD, limit=500, mode="lexical", all_projects=True, include=include).results
    return {r.id: (r.status, r.content) for r in rows}


class ReviewMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.dir = Path(tempfile.mkdtemp(prefix="marm-stateful-"))
        (self.dir / "work").mkdir()
        self.ctx = _ctx(self.dir / "home", self.dir / "work")
        self.model: dict[int, str] = {}
        self.texts: dict[int, str] = {}
        self.n = 0
        self.imports = 0

    def teardown(self) -> None:
        self.ctx.close()
        shutil.rmtree(self.dir, ignore_errors=True)

    def _with(self, statuses: set[str]) -> list[int]:
        return sorted(i for i, s in self.model.items() if s in statuses)

    @rule()
    def log(self) -> None:
        self.n += 1
        text = f"NOTE: {WORD} memo number {self.n}"
        result = write_memory(self.ctx, text)
        assert result.created
        self.model[result.id] = "active"
        self.texts[result.id] = text

    @precondition(lambda self: self._with({"active"}))
    @rule(data=st.data())
    def doubt(self, data: st.DataObject) -> None:
        target = data.draw(st.sampled_from(self._with({"active"})))
        review.doubt(self.ctx, target)
        self.model[target] = "doubted"

    @precondition(lambda self: self._with({"active", "doubted"}))
    @rule(data=st.data())
    def retract(self, data: st.DataObject) -> None:
        target = data.draw(st.sampled_from(self._with({"active", "doubted"})))
        review.retract(self.ctx, target)
        self.model[target] = "retracted"

    @precondition(lambda self: len(self._with({"active"})) >= 2)
    @rule(data=st.data())
    def supersede(self, data: st.DataObject) -> None:
        old, by = data.draw(st.lists(st.sampled_from(self._with({"active"})), min_size=2, max_size=2,
                                     unique=True))
        review.supersede(self.ctx, old, by=by)
        self.model[old] = "superseded"

    @precondition(lambda self: self._with({"doubted", "retracted", "superseded"}))
    @rule(data=st.data())
    def restore(self, data: st.DataObject) -> None:
        target = data.draw(st.sampled_from(self._with({"doubted", "retracted", "superseded"})))
        review.restore(self.ctx, target)
        self.model[target] = "active"

    @precondition(lambda self: self._with({"active", "doubted", "retracted", "superseded"}))
    @rule(data=st.data())
    def forget(self, data: st.DataObject) -> None:
        target = data.draw(st.sampled_from(self._with({"active", "doubted", "retracted", "superseded"})))
        review.forget(self.ctx, target)
        self.model[target] = "forgotten"

    @rule()
    def export_and_import(self) -> None:
        self.imports += 1
        path = self.dir / f"export-{self.imports}.jsonl"
        path.write_text("".join(line + "\n" for line in export(self.ctx, all_projects=True).document()))
        other = _ctx(self.dir / f"imported-{self.imports}", self.dir / "work")
        try:
            import_(other, [str(path)])
            everything = "retracted,superseded"
            assert _seen(other, everything) == _seen(self.ctx, everything)
            assert _seen(other) == _seen(self.ctx)
        finally:
            other.close()

    @invariant()
    def recall_matches_the_model(self) -> None:
        seen = _seen(self.ctx)
        expected = {i: (s, self.texts[i]) for i, s in self.model.items() if s in VISIBLE}
        assert seen == expected
        hidden = {i for i, s in self.model.items() if s not in VISIBLE}
        assert not hidden & set(seen)


TestReviewMachine = ReviewMachine.TestCase
TestReviewMachine.settings = settings(max_examples=15, stateful_step_count=12, deadline=None,
                                      suppress_health_check=[HealthCheck.too_slow])
