"""This host's pypto and devices: the installed pypto's API, the host fingerprint, the NPU
probe and npu-smi, where a job's tensors live, and the torch_npu stand-in for SIM jobs.
docs/architecture.md.

May import: runtime.errors, runtime.version and the report contract; nothing else of the runtime.
"""
