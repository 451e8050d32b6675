"""The GPU campaign: every figure that needs an accelerator, one device window at a time.

The unit is ONE call of the device tool. A GPU is lent to some tasks only, as at most 15 minutes
of machine time per session, every call together: a fresh machine costs 1-2 minutes to start, one
command runs at most 10 minutes, and the machine is given back 30 s after a command ends, with
everything on it; the next call starts a bare one. A call receives the working tree plus the
git-ignored ``carry`` paths (64 MiB together), has no network, lacks gensim, wn, faiss-cpu, nltk
and stanza, and returns at most 8 files of 16 MiB from ``$OUT``. So:

* ``plan --minutes 12`` prints the single device command (at most 2,000 characters) that runs the
  owed work in priority order inside one call of ``12 - 2 (start) - 0.5 (warm after it)`` = 9.5
  minutes, and its carry (``.campaign/carry``, assembled by ``plan`` and measured with the working
  tree). The command sets one absolute deadline ``D`` (seconds since the epoch) when it starts,
  and gives each stage ``--deadline`` (D less the budgets of the stages after it) and its
  ``--minutes`` budget. No outer ``timeout`` kills a stage: each stage checks the deadline before
  each sub-run, passes what is left down (``train.max_minutes``, a child's deadline), and stops
  itself (SIGALRM) if a sub-run overruns it by ``DEADLINE_GRACE_S``.
* Nothing learnt is lost: a stage writes ``$OUT/<stage>.json`` atomically (temporary name, then
  rename) when it starts and after every sub-run ("part": a throughput configuration, a trained
  model, an alignment, a vocabulary-scaling child), so a stage killed at any point (SIGTERM,
  SIGKILL, the call's limit) leaves a valid JSON saying which parts are done. ``record`` files it
  (``partial``) and the ledger keeps each part's status and measured seconds; the next ``plan``
  runs only what is still owed.
* Stages are sized from measured times: each part's seconds (and a stage's setup and overhead)
  are in its JSON and the ledger, and ``plan`` (and the stage itself, from the ledger that travels
  with the tree) decides what fits from the last measured figures, or from the stated conservative
  defaults (``Runner.default_s``) where nothing was measured yet.
* Everything that can be done on the CPU beforehand is: ``prepare`` builds the wordnet database
  (imported here and carried as ``wn/wn.db.xz``; importing it on the GPU machine took 28.5 s),
  tokenises the corpora and counts their vocabularies, and downloads the wheels.
* Checkpoints cannot come back through ``$OUT``, so no stage relies on a later call: a training
  stage trains what fits in its call (``ptb-paper``: as many epochs as fit, with the paper's
  configuration) and its JSON says so.

Stages, in priority order (each reuses the benchmark scripts' own code; the parts in brackets)::

  cuda-tests     pytest -m cuda tests/test_cuda.py                                   [pytest]
  vocab-scaling  vocab_scaling.py at paper size: tied and GroC, full and sampled softmax, at ~140k,
                 ~40k and ~10k words, one child process per part            [140k.tied_full, ...]
  throughput     throughput.py at paper size on PTB: fp32, tf32 and bf16 named explicitly
                 (train.precision defaults to bf16 on CUDA), compile, the grouped char-CNN
                                                 [fp32, tf32, bf16, fp32+compile, bf16+compile, fp32-grouped]
  thesis-align   polyglot_table.py + align_polyglot.py (Tables 5.2 and 5.4): GroC and tied on en+fr
                 and en+es at thesis sizes, sampled training softmax; an alignment needs both
                 models trained in the same call        [en-fr.groc, en-fr.lookup, en-fr.align, en-es...]
  ptb-paper      ptb_convergence.py with seed 000's PTB configuration (ptb_paper.toml), full softmax:
                 tied, GroC, GroC+lex (full updates: the headline rows) and GroC p = 0.3 (B.4's
                 sparse updates), trained together for as many epochs as fit   [tied, groc, groc-lex, groc-p0.3]
  elmo-init      elmo_init.py (Table 5.6) on en+es, sampled softmax; B sized from measured speed
                                                                  [elmo, finetune, groc_scratch]
  family         output_family.py (Table 2) at its PAPER sizes, each row capped      [untied, conv, ...]

Workflow (``python benchmarks/gpu_campaign.py ...``; every command prints one JSON object)::

    prepare [STAGE...] [--wheels] [--toy]  # CPU machine (PyPI reachable), once: .campaign/data, .campaign/whl
    status                                  # the ledger: per stage, the parts done, owed, failed
    plan --minutes 12                       # the next window: device command, carry, timeout_s, budgets
    run STAGE --deadline T --parts P,...    # what the command runs on the GPU, per stage
    record FILES_AT [--reason TEXT]         # CPU machine: file what came back; the ledger moves on
    reset STAGE [--part P]                  # a failed part is retried only after this
    run STAGE --full                        # your own CUDA machine: the whole stage at full length

``--dry-run`` (``prepare --toy`` first) does the same on CPU at toy sizes: ``plan --dry-run`` prints
a command that runs the toy stages locally, ``record --dry-run`` files toy results into a toy
ledger (``.campaign/toy/ledger.json``); neither a CPU run nor a dry run can mark a GPU part done.
On your own CUDA machine none of the tool's limits apply: ``prepare``, then ``run STAGE --full``
(no deadline, the stage's full length; docs/gpu.md).

Bad input (unknown stage or part, missing prepared data, a carry over 64 MiB, a GPU stage
without CUDA) is one ``error:`` line and exit status 2 (``benchmarks.common.script_main``).

Modules, one job each (dependencies run down this list)::

  device     the device tool's limits and what its GPU machine has or lacks
  stages     the stage table, the campaign's sizes, its folders
  data       the data slices: prepared and carried (CPU machine), unpacked on the device
  wheels     the wheels a stage carries (its imports' requirement closure less the GPU machine's)
  flags      a config file's values as a script's flags; the dry run's toy sizes
  plots      the figures, drawn from a stage's JSON
  runtime    one stage's run: Ctx, the stage JSON (StageRecord), Runner, the deadline, time caps,
             and ``call_benchmark`` (a script's ``run(parse_args(argv))`` in this process)
  runners/   one module per stage (its parts, summary and figure), RUNNERS in priority order
  ledger     the ledger: per stage, its parts' status and measured seconds, its runs
  run        ``run STAGE``        record   ``record FILES_AT``        planner   ``plan``
  cli        status, reset, prepare, the argument parser and ``main`` (``gpu_campaign.py``,
             ``python -m benchmarks.campaign``)

Every JSON (stage files, the ledger) is written by ``groc_base.fileio.write_json``: atomically,
strict JSON, a NaN or an infinity as the string "nan", "inf" or "-inf".
"""
