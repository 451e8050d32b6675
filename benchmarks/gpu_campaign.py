"""The GPU campaign's command line: ``python benchmarks/gpu_campaign.py COMMAND ...``.

The same as ``python -m benchmarks.campaign COMMAND ...``: the campaign is the package
``benchmarks/campaign/``, whose docstring says how it works (``--help`` prints it). This file is
its entry point as a script, so it runs from anywhere and the commands in the docs stay as they are.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run as a script from anywhere

from benchmarks.campaign.cli import exit_code, main  # noqa: E402
from benchmarks.common import script_main  # noqa: E402

if __name__ == "__main__":
    script_main(lambda: exit_code(main()))
