"""Identical bundles uploaded at the same moment (issue 36): each request gets its answer, none a 500.

Bundles are stored once per sha256 through a temp file renamed into place (server/blobs.py); two
threads of one API process writing the same bundle must not share that temp file.
"""
from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

from fastapi.testclient import TestClient

from tests.server.conftest import make_tokens

URL = "/api/v1/submissions"
THREADS = 8
ROUNDS = 6


def test_identical_bundles_uploaded_at_once_are_all_accepted(make_app, settings, hdr, files_of, make_zip):
    app = make_app(settings.model_copy(update={"max_upload_bytes": 8 << 20}))
    with TestClient(app) as client:
        headers = {"Authorization": f"Bearer {make_tokens(app)['submit']}"}
        statuses: list[int] = []
        for round_ in range(ROUNDS):
            # A big file in the package makes the write long enough for the threads to overlap; a new
            # bundle per round, so every round writes the bundle afresh.
            files = {**files_of("scale_add"), "padding.txt": f"round {round_}\n" + "x" * (4 << 20)}
            bundle = make_zip(files, top="scale_add")
            start = threading.Barrier(THREADS)

            def upload(_: int, bundle: bytes = bundle, start: threading.Barrier = start) -> int:
                start.wait()
                return client.post(URL, headers=headers, files={"file": ("scale_add.zip", bundle)}).status_code

            with ThreadPoolExecutor(THREADS) as pool:
                statuses.extend(pool.map(upload, range(THREADS)))
        assert statuses == [202] * (THREADS * ROUNDS)
        assert not list((settings.blob_dir / "bundles").rglob("*.tmp"))  # no temp file left behind
