"""What a Claude Code transcript's turns hold when a request failed: the harness's own
error message ("API Error: 500 ...", a usage limit) is no answer of the agent's, so the
turn is kept as cut short, and the error never becomes a conclusion, a highlight or a
summary's line."""

from __future__ import annotations

import pytest

from marm.capture import episode
from marm.capture.transcript import turns_of


def _user(text: str) -> dict:
    return {"type": "user", "message": {"role": "user", "content": text}, "timestamp": "2026-06-01T10:00:00Z"}


def _assistant(text: str, **extra: object) -> dict:
    message = {"role": "assistant", "model": extra.pop("model", "claude-opus-4"),
               "content": [{"type": "text", "text": text}]}
    return {"type": "assistant", "message": message, "timestamp": "2026-06-01T10:01:00Z", **extra}


@pytest.mark.parametrize("error", [
    _assistant("API Error: 500 Internal server error. This is a server-side issue, usually temporary.",
               isApiErrorMessage=True, error="server_error"),
    _assistant("You've hit your limit · resets 1am (Europe/Paris)", isApiErrorMessage=True, error="rate_limit"),
    _assistant("API Error: Request timed out.", model="<synthetic>"),  # older versions: no flag
], ids=["server error", "usage limit", "synthetic model"])
def test_a_turn_that_ended_in_an_api_error_is_cut_short_and_keeps_no_error_text(error):
    records = [_user("rename the config loader"), _assistant("I'll start with src/config.ts."), error,
               _user("add a gitignore file"), _assistant("Added .gitignore for build output and .env files.")]
    failed, answered = turns_of(records)
    assert failed.interrupted and failed.messages == ["I'll start with src/config.ts."]
    assert not answered.interrupted and answered.messages == ["Added .gitignore for build output and .env files."]
    said = error["message"]["content"][0]["text"]
    texts = [episode.text(episode.TurnRecord(t.prompt, t.messages[-1] if t.messages else "", t.messages,
                                             interrupted=t.interrupted)) or "" for t in (failed, answered)]
    assert "Stopped at: I'll start with src/config.ts." in texts[0] and said not in texts[0]
    assert "Concluded: Added .gitignore" in texts[1]


def test_a_turn_whose_only_reply_is_an_api_error_says_it_was_interrupted():
    records = [_user("deploy it"), _assistant("API Error: 529 Overloaded", isApiErrorMessage=True)]
    (turn,) = turns_of(records)
    assert turn.interrupted and turn.messages == []
    assert episode.text(episode.TurnRecord(turn.prompt, interrupted=True)) == \
        "Asked: deploy it\n(interrupted before an answer)"
