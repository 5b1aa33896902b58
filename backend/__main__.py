"""`python -m backend`: the command line of backend/cli.py, with the stop signals held from the first moment.

The imports behind the CLI take a second or two on a busy host: a Ctrl-C meanwhile would otherwise end in
a KeyboardInterrupt stack trace from inside some import (backend/stop_request.py says how it is held).
"""

import sys

from backend.stop_request import StopRequest


def _main() -> None:
    stop = StopRequest.install()
    from backend.cli import main

    sys.exit(main(stop=stop))


if __name__ == "__main__":
    _main()
