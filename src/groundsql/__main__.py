"""The command line's entry point (`groundsql`, `python -m groundsql`).

Ctrl-C is obeyed from the first instant: while the command line's modules are still being
imported, Python's own handler would end the program with a traceback. Once they are, the
command line installs its own (cli._stop_on_interrupt).
"""

from __future__ import annotations

import os
import signal


def _interrupted_while_starting(*_: object) -> None:
    os.write(2, b"interrupted\n")
    os._exit(130)


def main() -> None:
    signal.signal(signal.SIGINT, _interrupted_while_starting)
    from groundsql.cli import main as run

    run()


if __name__ == "__main__":
    main()
