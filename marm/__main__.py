"""``python -m marm`` and the ``marm`` console script.

``marm hook ...`` goes straight to the hook runner, without building the CLI (typer
and every op module): an agent waits on each hook, so it pays only for what it uses.
``marm hook --help`` and everything else is the generated CLI.
"""

import sys


def main() -> None:
    args = sys.argv[1:]
    if args[:1] == ["hook"] and not {"-h", "--help"} & set(args):
        from marm.hooks.run import main as hook_main

        sys.exit(hook_main(args[1:]))
    from marm.cli import main as cli_main

    cli_main()


if __name__ == "__main__":
    main()
