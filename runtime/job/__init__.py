"""The job process: the code that runs inside the sandboxed job, beside the kernel (the child
that runs one case, and the NPU timing loop). docs/architecture.md.

May import: runtime.evidence, runtime.fence, runtime.intake and runtime.devices; never judging
or the runner (the job only reports; the harness decides).
"""
