"""The job's forbidden-act reports (runtime.fence.audit): written with references taken at install, readable by
the leader's parser whatever the text, and only for acts outside the harness. Run in a child process, as a job
is: an audit hook cannot be removed from the process that added it."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap

from runtime.fence import events

CHILD = textwrap.dedent('''
    import ctypes, json, os, sys
    from runtime.fence import audit
    fd, guarded = int(sys.argv[1]), sys.argv[2]
    audit.emitter(fd)("probe", {"text": 'quote " backslash \\\\ newline \\n nul \\x00 \\u00e9', "n": 3, "ok": True})
    audit.install(fd, [guarded])
    json.dumps = lambda *a, **k: "patched"  # the hook uses nothing looked up later
    os.write = lambda *a: 0
    with open(os.path.join(guarded, "verify_result_brief.csv"), "w") as f:
        f.write("PASS")
    ctypes.string_at(id(fd), 1)
''')


def test_acts_outside_the_harness_are_reported_as_they_happen(tmp_path):
    guarded = tmp_path / "output"
    guarded.mkdir()
    r, w = os.pipe()
    proc = subprocess.run([sys.executable, "-c", CHILD, str(w), str(guarded)], pass_fds=(w,), capture_output=True,
                          text=True, timeout=120)
    os.close(w)
    with os.fdopen(r, "rb") as f:
        got = events.parse(f.read())
    assert proc.returncode == 0, proc.stderr
    probe, *tampers = got
    assert probe == {"event": "probe", "text": 'quote " backslash \\ newline \n nul \x00 \u00e9', "n": 3, "ok": True}
    whats = [t["what"] for t in tampers]
    assert any("verify_result_brief.csv for writing" in w for w in whats), whats
    assert any("used ctypes" in w for w in whats), whats
    assert all(t["file"] == "<string>" for t in tampers), tampers
