"""``python -m benchmarks.campaign COMMAND ...``: the same as ``python benchmarks/gpu_campaign.py COMMAND ...``."""

from __future__ import annotations

from benchmarks.campaign.cli import exit_code, main
from benchmarks.common import script_main

script_main(lambda: exit_code(main()))
