"""Evidence: what a case measured and how the harness checks it outside the kernel's reach
(instrumentation, output dumps, the SIM cost model, corroboration, graph verify and its
calculator, metrics, artifacts). docs/architecture.md.

May import: runtime.fence, runtime.intake, runtime.devices and the report contract; never judging.
"""
