"""The `crosscheck run` and `crosscheck calculator` commands: arguments, help, and the report on
the terminal. docs/architecture.md.

May import: anything of the runtime (it is the top layer).
"""
