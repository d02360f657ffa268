"""`crosscheck submit` inside a checkout packs what the job needs and only that (docs/realops.md §5)."""
from __future__ import annotations

import zipfile

import pytest

from runtime.intake import submission
from client.submit import Unusable, bundle
from tests.conftest import EXAMPLES

GYM = EXAMPLES / "gym-checkout"
AXPY = GYM / "tests/ops/vector/Axpy/test_axpy.py"


def test_submit_packs_only_what_the_job_needs_and_the_server_loader_reads_it_back(tmp_path):
    name, data = bundle(AXPY)
    (tmp_path / name).write_bytes(data)
    names = zipfile.ZipFile(tmp_path / name).namelist()
    assert "crosscheck_entry.json" in names and not any("row_square_mean" in n or "BigScale" in n for n in names)
    sub = submission.load(tmp_path / name, tmp_path / "work")  # what the server's upload check runs
    assert (sub.kind, sub.name, sub.script) == ("script", "axpy", "tests/ops/vector/Axpy/test_axpy.py")
    name, data = bundle(GYM, "InplaceAddNorm")
    (tmp_path / name).write_bytes(data)
    assert submission.load(tmp_path / name, tmp_path / "work2").impl.function == "npu_inplace_add_norm"
    with pytest.raises(Unusable, match="choose one with --operator NAME"):
        bundle(GYM)
