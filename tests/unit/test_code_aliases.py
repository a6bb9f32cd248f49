"""Import path aliases from tsconfig/jsconfig: lenient JSON, longest pattern first."""

from __future__ import annotations

from marm.code import aliases


def test_config_with_comments_and_slashes_in_strings(tmp_path):
    (tmp_path / "jsconfig.json").write_text(
        '{"compilerOptions": {"baseUrl": "app//", // where sources live\n'
        ' "paths": {"@/*": ["./*"], "@ui/*": ["ui/*"], "/*odd*/": ["x/*"], "config": ["cfg/main.ts"]}}}'
    )
    got = aliases.load(tmp_path)
    # "app//" and "/*odd*/" are strings, not comments; the longest pattern comes first
    assert [a[0] for a in got] == ["config", "@ui/", "@/", "/"]
    assert aliases.rewrite("@ui/button", got) == "app/ui/button"
    assert aliases.rewrite("@/lib/math", got) == "app/lib/math"
    assert aliases.rewrite("config", got) == "app/cfg/main.ts"
    assert aliases.rewrite("configs", got) is None and aliases.rewrite("react", got) is None


def test_a_broken_or_missing_config_means_no_aliases(tmp_path):
    assert aliases.load(tmp_path) == ()
    (tmp_path / "tsconfig.json").write_text('{"compilerOptions": {"paths": ')
    assert aliases.load(tmp_path) == ()
    (tmp_path / "tsconfig.json").write_text('{"compilerOptions": {"paths": {"@/*": "src/*"}}}')
    assert aliases.load(tmp_path) == ()  # a target must be a list
