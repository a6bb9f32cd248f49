"""Parity: the MCP tools are exactly the registered ops with an MCP name, with the same
parameters (names, required-ness, defaults) as their CLI commands, and honest metadata."""

from __future__ import annotations

import subprocess
import sys

import typer.main

from marm.cli import build_app
from marm.ops import load


def _cli_command(path: tuple[str, ...]):
    command = typer.main.get_command(build_app())
    for word in path:
        command = command.commands[word]
    return command


def test_tool_set_is_the_registry(srv):
    ops = [o for o in load().values() if o.mcp]
    tools = {t.name for t in srv.tools()}
    assert tools == {o.mcp for o in ops}
    # The core's names follow MARM's, so its users feel at home.
    assert {"marm_smart_recall", "marm_log_entry", "marm_log_show", "marm_delete",
            "marm_summary", "marm_notebook"} <= tools
    assert all(name.startswith("marm_") for name in tools)
    assert len(tools) == len(ops)  # no two ops share a tool name


def test_cli_only_ops_are_not_tools(srv):
    tools = {t.name for t in srv.tools()}
    registry = load()
    assert registry[("mcp",)].mcp is None
    assert "mcp" not in tools and "marm_mcp" not in tools
    assert _cli_command(("mcp",)).name == "mcp"


def test_parameters_match_the_cli(srv):
    by_name = {t.name: t for t in srv.tools()}
    for o in (o for o in load().values() if o.mcp):
        tool = by_name[o.mcp]
        schema = tool.input_schema
        props = schema.get("properties", {})
        cli = {p.name: p for p in _cli_command(o.path).params if p.name != "json_"}
        assert set(props) == set(cli), o.mcp
        assert set(schema.get("required", [])) == {n for n, p in cli.items() if p.required}, o.mcp
        for spec in o.params():
            prop, param = props[spec.name], cli[spec.name]
            assert prop["description"] == spec.meta.tool_help, (o.mcp, spec.name)
            if not spec.required:
                assert prop["default"] == param.default == spec.default, (o.mcp, spec.name)


def test_descriptions_annotations_and_output_schemas(srv):
    by_name = {t.name: t for t in srv.tools()}
    for o in (o for o in load().values() if o.mcp):
        tool = by_name[o.mcp]
        assert tool.description == o.tool_help and tool.description
        a = tool.annotations
        assert a.read_only_hint is o.read_only, o.mcp
        assert a.destructive_hint is (o.destructive and not o.read_only), o.mcp
        assert a.idempotent_hint is o.idempotent, o.mcp
        assert a.open_world_hint is False, o.mcp
        assert tool.output_schema["type"] == "object", o.mcp
        fields = set(o.return_type().__dataclass_fields__)
        assert set(tool.output_schema["properties"]) == fields, o.mcp
    assert by_name["marm_delete"].annotations.destructive_hint is True
    assert by_name["marm_smart_recall"].annotations.read_only_hint is True
    assert by_name["marm_log_entry"].annotations.read_only_hint is False


def test_help_and_writes_do_not_import_mcp(tmp_path):
    """`marm --help` and `marm log` stay light: the SDK is imported only by `marm mcp`."""
    probe = (
        "import sys, runpy\n"
        "sys.argv = ['marm'] + sys.argv[1:]\n"
        "try:\n"
        "    runpy.run_module('marm', run_name='__main__')\n"
        "except SystemExit:\n"
        "    pass\n"
        "loaded = any(m == 'mcp' or m.startswith('mcp.') for m in sys.modules)\n"
        "print('MCP-LOADED' if loaded else 'MCP-ABSENT', file=sys.stderr)\n"
    )
    for args in (["--help"], ["log", "the build uses ninja"], ["recall", "ninja"]):
        proc = subprocess.run([sys.executable, "-c", probe, *args], cwd=tmp_path,
                              capture_output=True, text=True, timeout=60)
        assert "MCP-ABSENT" in proc.stderr, (args, proc.stderr)


def test_structured_results_are_the_cli_json(srv, marm, work):
    """A tool's structured content is what `marm <command> --json` prints for the same call."""
    srv.ok("marm_log_entry", text="DECISION: one registry, two surfaces")
    srv.ok("marm_log_entry", text="2026-11-30-mcp-the server is generated from the registry")
    for tool, argv in (("marm_summary", ["summary"]), ("marm_log_show", ["log-show"]),
                       ("marm_smart_recall", ["recall", "registry"])):
        arguments = {"query": "registry"} if tool == "marm_smart_recall" else {}
        structured = srv.ok(tool, **arguments)
        cli = marm(*argv, "--json", cwd=work)
        assert cli.code == 0, cli.err
        assert structured == cli.json(), tool
        assert structured != {} and any(v for v in structured.values() if isinstance(v, list))
