"""Concept entities that name a code symbol link to its definition in the code graph."""

from __future__ import annotations

import pytest

from marm import drain
from marm.ops.code import code_index
from marm.ops.concepts import concept_recall
from marm.ops.memory import write_memory
from tests.helpers import git_init


@pytest.mark.slow
def test_a_concept_naming_a_symbol_links_to_its_definition(ctx, tmp_path):
    repo = git_init(tmp_path / "svc")
    (repo / "config.py").write_text("import tomllib\n\n\ndef parse_config(path):\n"
                                    "    return tomllib.load(open(path, 'rb'))\n")
    (repo / "other.py").write_text("def unrelated_helper():\n    return 2\n")
    ctx.cwd = repo
    code_index(ctx, path=str(repo))
    write_memory(ctx, "Fixed parse_config to open the TOML file in binary mode")
    write_memory(ctx, "The deploy runbook lives in the wiki")
    drain.run(ctx, kinds=["concepts"], sweeps=False)
    result = concept_recall(ctx, "parse_config")
    assert [(c.concept, c.path, c.line) for c in result.code] == [("parse_config", "config.py", 4)]
    unrelated = concept_recall(ctx, "deploy runbook")
    assert unrelated.entities and unrelated.code == []
