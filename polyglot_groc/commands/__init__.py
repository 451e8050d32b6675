"""The typer commands: thin wrappers that parse options, call library functions and own output.

Each module owns one command or command group. The library logs and raises errors from the
``groc_base.errors`` hierarchy; only this package prints, and ``_common.cli_errors`` turns errors
into a one-line message and exit code 2.

May import anything in the project. Nothing but ``polyglot_groc.cli`` imports it.
"""
