"""``python -m marm`` and the ``marm`` console script.

A shell's TAB (``_MARM_COMPLETE`` set) is answered from the completion table
(``marm.completion``), ``marm hook ...`` goes straight to the hook runner, and a bare
``marm mcp`` straight to its op, all without building the CLI (typer): a person waits
on each TAB, an agent on each hook and on the server's start, so each pays only for
what it uses. ``--help`` and everything else is the generated CLI.
"""

import os
import sys


def main() -> None:
    if os.environ.get("_MARM_COMPLETE"):  # empty, as for typer: not a completion request
        from marm.completion import respond

        sys.exit(respond(os.environ))
    # numpy's import starts an OpenBLAS thread per core, half its import time (~60 ms of
    # CPU); marm does no BLAS work that needs them (vector scans use ``vecdot``).
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    args = sys.argv[1:]
    if args[:1] == ["hook"] and not {"-h", "--help"} & set(args):
        from marm.hooks.run import main as hook_main

        sys.exit(hook_main(args[1:]))
    if args == ["mcp"]:
        # A client may stop the server while it is still starting: before anything is
        # imported (a KeyboardInterrupt raised inside orjson's module init crashes the
        # process), as ``marm.mcp_stdio`` does once it runs.
        import signal

        for signum in (signal.SIGINT, signal.SIGTERM):
            signal.signal(signum, lambda signum, frame: os._exit(128 + signum))
        code = _serve()
        # The client is gone: skip the interpreter's teardown of the server's threads
        # and modules (half a second), so the process is over as soon as it is told.
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    from marm.cli import main as cli_main

    cli_main()


def _serve() -> int:
    """Run the ``mcp`` op as the CLI would (its summary on stderr: stdout is the protocol)."""
    from marm.context import Ctx
    from marm.errors import MarmError
    from marm.ops.serve import mcp

    ctx = Ctx(source="cli")
    try:
        result = mcp(ctx)
    except MarmError as exc:
        print(f"error: {exc.message}", file=sys.stderr)
        return exc.exit_code
    finally:
        ctx.close()
    print(result.text(), file=sys.stderr)
    return 0


if __name__ == "__main__":
    main()
