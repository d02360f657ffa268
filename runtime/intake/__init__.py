"""Intake: turn what a kernel developer hands in (a folder, an archive, a test file, a checkout)
into a validated submission and its cases (docs/architecture.md).

May import: runtime.errors, runtime.modes and runtime.devices (the installed pypto's API) only.
"""
