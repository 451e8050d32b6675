"""Typer sub-commands; each module owns one command group and stays thin (compose library calls)."""
