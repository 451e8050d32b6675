"""The typer commands: thin wrappers that parse options, call library functions and own output.

Each public module holds an ``app``: its commands (``@app.command("x")`` over ``@cli_errors``, on
the command function itself), or a command group (a named ``typer.Typer``); ``polyglot_groc.cli``
mounts every one, so a new module needs no other edit. The options are declared once, in
``_options.py``; the library logs and raises errors from the ``groc_base.errors`` hierarchy, only this
package prints, and ``_common.cli_errors`` turns errors into a one-line message and exit code 2.

May import anything in the project. Nothing but ``polyglot_groc.cli`` imports it.
"""
