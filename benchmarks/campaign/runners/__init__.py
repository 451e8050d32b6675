"""The stages' runners, one module each, in the campaign's priority order (that of ``stages.STAGES``).

A runner says what each part of its stage runs and how the figures add up (``summary``) and what
is drawn (``render``); the loop, the deadline and the stage JSON are ``runtime.Runner``'s. A new
stage is its ``Stage`` line in ``stages.STAGES`` plus a module here, registered below.
"""

from __future__ import annotations

from benchmarks.campaign.runners.cuda import CudaTests
from benchmarks.campaign.runners.elmo import ElmoInit
from benchmarks.campaign.runners.family import Family
from benchmarks.campaign.runners.ptb import PtbPaper
from benchmarks.campaign.runners.thesis import ThesisAlign
from benchmarks.campaign.runners.throughput import Throughput
from benchmarks.campaign.runners.vocab import VocabScaling
from benchmarks.campaign.runtime import Runner

RUNNERS: dict[str, Runner] = {r.name: r for r in (CudaTests(), VocabScaling(), Throughput(), ThesisAlign(),
                                                  PtbPaper(), ElmoInit(), Family())}
#: The summary keys of each stage: the real run and the dry run write exactly these.
SUMMARY_KEYS: dict[str, tuple[str, ...]] = {name: r.summary_keys for name, r in RUNNERS.items()}
#: Top-level keys of every stage's JSON.
RESULT_KEYS = ("stage", "title", "campaign", "parts", "timings", "summary", "invocations", "results")
