"""``python -m marm`` runs the same CLI as the ``marm`` console script."""

from marm.cli import main

if __name__ == "__main__":
    main()
