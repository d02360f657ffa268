"""PTO Crosscheck runtime: run ONE submission on THIS host and report per-case verdicts.

The runtime has no database, web or queue code; `crosscheck run` and the worker both call
`runtime.runner.run_submission`.
"""
__version__ = "0.1.0"
