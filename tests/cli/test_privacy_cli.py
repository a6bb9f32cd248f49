"""Finding 2 of issue 15, end to end: the secrets a probe stored in the clear, written
through the CLI (in this process), are in no byte of any file under MARM_HOME nor in the export,
while the innocent words around them are."""

from __future__ import annotations

from pathlib import Path

from tests.helpers import invoke_marm

SECRETS = {
    "password=hunter2 for the staging box": "hunter2",
    "export AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMIK7MDENGbPxRfiCYzz9": "wJalrXUtnFEMIK7MDENGbPxRfiCYzz9",
    "the app reads postgres://app:pgS3cretPw@db.internal/app": "pgS3cretPw",
    "curl with token=tk4821q against the api": "tk4821q",
}
SESSION_SECRET = "sessTok7741"


def _every_byte(home: Path) -> bytes:
    return b"".join(p.read_bytes() for p in sorted(home.rglob("*")) if p.is_file())


def test_no_secret_reaches_any_file_or_the_export(tmp_path, marm_home):
    for text in SECRETS:
        assert invoke_marm("log", text, "--session", f"token={SESSION_SECRET}").code == 0
    assert invoke_marm("notebook", "add", f"deploy password={SESSION_SECRET}x", "keep it short").code == 0
    assert invoke_marm("log", "2026-11-30-apikey=topicSecret9-switched the key").code == 0
    assert invoke_marm("retract", "1", "--reason", "leaked password=reasonPw88").code == 0
    export = invoke_marm("export")
    assert export.code == 0
    disk = _every_byte(marm_home) + export.out.encode()
    # the innocent words did arrive (the negative below is against a populated store)
    for word in (b"staging box", b"db.internal/app", b"against the api", b"the key", b"keep it short"):
        assert word in disk
    for secret in [*SECRETS.values(), SESSION_SECRET, "topicSecret9", "reasonPw88"]:
        assert secret.encode() not in disk, secret
    assert b"[REDACTED:" in disk


def test_an_imported_file_is_redacted_too(tmp_path, marm_home):
    import json

    assert invoke_marm("log", "the import carries this line").code == 0
    lines = invoke_marm("export").out.splitlines()
    records = [json.loads(line) for line in lines]
    for r in records:
        if r.get("type") == "memory":
            r["content"] += " and password=importPw7"
            r["session"] = "token=importSess8"
    path = tmp_path / "hand-made.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in records) + "\n")
    other = tmp_path / "other-home"
    assert invoke_marm("import", str(path), env={"MARM_HOME": str(other)}).code == 0
    disk = _every_byte(other)
    assert b"the import carries this line and password=[REDACTED:" in disk
    assert b"importPw7" not in disk and b"importSess8" not in disk
