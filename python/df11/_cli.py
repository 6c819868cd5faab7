"""The `df11` console command that `pip install` puts on PATH: it runs the command-line tool
the wheel carries (df11/bin/df11, the same binary as a build tree's build/cli/df11), with the
same arguments, output and exit status. Python is only the launcher: it replaces itself with
the tool (os.execv), so signals and the terminal reach the tool directly."""

import os
import sys


def binary_path() -> str:
    """The tool's path: the package's own bin/ folder, where the wheel puts it."""
    return os.path.join(os.path.dirname(os.path.abspath(__file__)), "bin", "df11")


def main() -> int:
    path = binary_path()
    if not os.access(path, os.X_OK):
        sys.stderr.write(f"df11: the command-line tool is missing: {path} (this installation "
                         "was built without it; reinstall with `pip install .`)\n")
        return 2
    os.execv(path, [path, *sys.argv[1:]])
    return 2  # not reached: execv returns only by raising OSError


if __name__ == "__main__":
    sys.exit(main())
