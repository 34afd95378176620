"""`python -m crashlab`, and the `crashlab` script: the command line, whose imports a Ctrl-C may interrupt too.

The script calls `main` with nothing of crashlab's imported (the package imports nothing itself), so
an interrupt while the command line imports is one line here, as one while it runs is in
`crashlab.cli.main`: a traceback of half an import is no answer to Ctrl-C.
"""

import sys


def main() -> None:
    try:
        from crashlab.cli import main as command_line
    except KeyboardInterrupt:
        sys.stderr.write("\naborted\n")  # on a line of its own, after the ^C a terminal echoes
        sys.exit(130)  # 128 + SIGINT, the shell's code for a death by it, as the command line's
    command_line()


if __name__ == "__main__":
    main()
