"""``python -m marm.completion [DIR]``: rewrite the shell scripts in DIR (default
``completions``) and the package's ``table.json``, after a command or option changed."""

import sys
from pathlib import Path

from marm.completion.build import write

for path in write(Path(sys.argv[1] if len(sys.argv) > 1 else "completions")):
    print(path)
