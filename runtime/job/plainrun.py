"""In the job process: what a script finds around it as in a plain run (docs/realops.md §9).

A plain `python script.py` leaves pypto's call folders in `./output` (its default output dir) beside
where it runs, and scripts read them there (pypto's cost_model example opens the newest folder of
`./output`). The job points pypto at its own output dir; `./output` names that dir, inside the job.
The simulator files inside (merged_swimlane.json) are pypto's stock ones when the run's warm parent
was started with `stock_simulator` (runtime/warm/client.py), as `crosscheck run` does for scripts.
"""
from __future__ import annotations

import os
from pathlib import Path

PLAIN_OUTPUT = "output"  # pypto's default TILE_FWK_OUTPUT_DIR, relative to where the script runs


def present_output_dir(here: Path) -> bool:
    """Make `here/output` the job's pypto output dir when the submission has no `output` of its own."""
    target = os.environ.get("TILE_FWK_OUTPUT_DIR")
    link = here / PLAIN_OUTPUT
    if not target or os.path.lexists(link):
        return False
    try:
        link.symlink_to(target, target_is_directory=True)
    except OSError:
        return False
    return True

