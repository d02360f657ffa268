"""The fence: keep the kernel in its job (namespaces, limits, cgroup, private dirs and environment,
the pipe the job reports on, safe reads of the files the kernel controls, the harness integrity
check). docs/SECURITY.md says why each wall is there; docs/architecture.md where it stands.

May import: the standard library only.
"""
