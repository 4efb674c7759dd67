"""``python -m spark_stream.cli``: the ``fluvio`` command line."""

from __future__ import annotations

import sys

from spark_stream.cli.app import main

if __name__ == "__main__":
    sys.exit(main())
