"""Judging: turn one job's evidence into a case's verdict and its diagnosis (outcome, the
diagnosis rules in rules/, version skew, SIM gaps, tolerance). The verdict names themselves are
the report contract (runtime.verdicts). docs/architecture.md.

May import: runtime.evidence, runtime.lint, runtime.fence, runtime.intake, runtime.devices and
the report contract; never the runner, the warm parent or the CLI.
"""
