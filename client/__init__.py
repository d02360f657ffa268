"""The client: what a developer's laptop or a CI job runs against a remote PTO Crosscheck server
(`crosscheck submit`, `crosscheck ci`, `crosscheck upload`), their HTTP client and JUnit output.
docs/architecture.md.

May import: the runtime (its report contract, exit codes, and intake to pack a checkout) and
jobqueue (where a single-host install keeps its data dir); never server, worker or web
(.importlinter), so it talks to the service over HTTP only.
"""
