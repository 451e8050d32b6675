"""The device tool's limits (/work/.library/device/README.md) and what its GPU machine has."""

from __future__ import annotations

CARRY_LIMIT_MIB = 64.0  # the working tree and every carried path together
CALL_MAX_S = 600  # one command
COMMAND_MAX_CHARS = 2000
OUT_MAX_FILES = 8  # files back from $OUT (16 MiB each, at most 2 folders down)
MACHINE_START_S = 120.0  # a fresh machine: "1-2 minutes"; the worse is planned for
IDLE_AFTER_S = 30.0  # warm after the call, counted unless given back
CALL_MARGIN_S = 30.0  # between the last stage's deadline and the call's limit: last writes, $OUT back
DEADLINE_GRACE_S = 20.0  # a stage still busy this long past its deadline stops itself (SIGALRM)
INSTALL_S = 20.0  # the carried wheels' install at the call's start (stated; not measured yet)
#: What the GPU machine has (and so need not be carried), and what it lacks.
GPU_HAS = ("torch", "numpy", "scipy", "matplotlib", "typer", "rich", "filelock", "h5py", "hypothesis", "pytest",
           "tensorboard")
GPU_LACKS = {"gensim": "gensim", "wn": "wn", "faiss-cpu": "faiss", "nltk": "nltk", "stanza": "stanza"}
PIP_PLATFORM = ["--only-binary=:all:", "--python-version", "3.12", "--implementation", "cp",
                "--platform", "manylinux_2_28_x86_64", "--platform", "manylinux_2_17_x86_64",
                "--platform", "manylinux2014_x86_64"]
#: Environment markers of the GPU machine's interpreter, to resolve requirements.
GPU_MARKERS = {"python_version": "3.12", "python_full_version": "3.12.0", "sys_platform": "linux",
               "platform_system": "Linux", "platform_machine": "x86_64", "os_name": "posix",
               "implementation_name": "cpython", "platform_python_implementation": "CPython", "extra": ""}
