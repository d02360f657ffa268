"""Unusable input is rejected with a message naming the problem (exit code 2 in the CLI)."""
import io
import json
import tarfile
import zipfile
from pathlib import Path

import pytest

from runtime.errors import SubmissionError
from runtime.intake.submission import load

IMPL = "import torch\n\ndef op_wrapper(x):\n    return x\n"
GOLDEN = "import torch\n\ndef op_golden(x):\n    return x\n"


def make_package(tmp_path: Path, cases=None, impl=IMPL, golden=GOLDEN, raw_cases=None) -> Path:
    pkg = tmp_path / "op"
    pkg.mkdir(parents=True)
    body = raw_cases if raw_cases is not None else json.dumps({"op_name": "op", "test_cases": cases or [
        {"id": "c1", "seed": 1, "input": {"shape": [4, 8], "dtype": "float32"}, "rtol": 1e-3, "atol": 1e-3}]})
    (pkg / "test_cases.json").write_text(body)
    if impl is not None:
        (pkg / "op_impl.py").write_text(impl)
    if golden is not None:
        (pkg / "op_golden.py").write_text(golden)
    return pkg


def rejects(tmp_path: Path, pkg: Path, *fragments: str) -> None:
    with pytest.raises(SubmissionError) as info:
        load(pkg, tmp_path / "work")
    for fragment in fragments:
        assert fragment in str(info.value)


def test_gym_package_loads(tmp_path):
    sub = load(make_package(tmp_path), tmp_path / "work")
    assert sub.kind == "package" and sub.name == "op"
    assert str(sub.impl) == "op_impl.py:op_wrapper" and str(sub.golden) == "op_golden.py:op_golden"
    case = sub.case_file.cases[0]
    assert case.id == "c1" and case.inputs[0].shape == [4, 8] and case.inputs[0].init == "randn"
    assert len(sub.sha256) == 64


def test_multi_input_form_and_explicit_entries(tmp_path):
    pkg = make_package(tmp_path, impl="def run(a, b):\n    return a\n", golden="def ref(a, b):\n    return a\n",
                       raw_cases=json.dumps({"op_name": "op", "impl": "op_impl.py:run", "golden": "op_golden.py:ref",
                                             "test_cases": [{"id": 7, "seed": 3, "inputs": [
                                                 {"name": "a", "shape": [2, 2], "dtype": "fp16", "init": "ones"},
                                                 {"shape": [2], "dtype": "bf16"}]}]}))
    sub = load(pkg, tmp_path / "work")
    case = sub.case_file.cases[0]
    assert case.id == "7" and [i.dtype for i in case.inputs] == ["float16", "bfloat16"]
    assert case.inputs[0].init == "ones" and case.inputs[1].name == "input1"
    assert sub.impl.function == "run" and sub.golden.function == "ref"


def test_identical_content_same_sha(tmp_path):
    a = load(make_package(tmp_path / "a"), tmp_path / "w1")
    b = load(make_package(tmp_path / "b"), tmp_path / "w2")
    assert a.sha256 == b.sha256


@pytest.mark.parametrize("raw,fragment", [
    ("{not json", "bad JSON at line 1"),
    (json.dumps({"op_name": "op", "test_cases": []}), "'test_cases' must be a non-empty list"),
    (json.dumps({"op_name": "op", "test_cases": [{"id": "a", "input": {"shape": [4], "dtype": "float99"}}]}),
     "unknown dtype 'float99'"),
    (json.dumps({"op_name": "op", "test_cases": [{"id": "a", "input": {"shape": [4, 0], "dtype": "float32"}}]}),
     "shape must be a non-empty list of positive ints"),
    (json.dumps({"op_name": "op", "test_cases": [{"id": "a", "input": {"shape": "4x4", "dtype": "float32"}}]}),
     "shape must be a non-empty list of positive ints"),
    (json.dumps({"op_name": "op", "test_cases": [{"id": "a", "input": {"shape": [4.5], "dtype": "float32"}}]}),
     "shape must be a non-empty list of positive ints"),
    (json.dumps({"op_name": "op", "test_cases": [{"id": "a", "input": {"shape": [4], "dtype": "float32"}},
                                                 {"id": "a", "input": {"shape": [8], "dtype": "float32"}}]}),
     "duplicate case id 'a'"),
    (json.dumps({"op_name": "op", "test_cases": [{"id": "a", "input": {"shape": [4], "dtype": "float32"},
                                                  "init": "x"}], "impl": "nocolon"}), "'impl' must look like"),
])
def test_bad_case_files(tmp_path, raw, fragment):
    rejects(tmp_path, make_package(tmp_path, raw_cases=raw), fragment)


def test_missing_files_and_functions(tmp_path):
    rejects(tmp_path, make_package(tmp_path / "x", impl=None), "missing *_impl.py")
    rejects(tmp_path, make_package(tmp_path / "y", impl="def other():\n    pass\n"), "missing function 'op_wrapper'")
    empty = tmp_path / "empty"
    empty.mkdir()
    rejects(tmp_path, empty, "missing test_cases.json")
    rejects(tmp_path, tmp_path / "nope", "no such file or folder")


def _zip(path: Path, members: dict[str, bytes], link: str | None = None) -> Path:
    with zipfile.ZipFile(path, "w") as zf:
        for name, data in members.items():
            zf.writestr(name, data)
        if link:
            info = zipfile.ZipInfo(link)
            info.external_attr = (0o120777 << 16)
            zf.writestr(info, "/etc/passwd")
    return path


def test_archives_unpack_and_reject_escapes(tmp_path):
    cases = make_package(tmp_path / "src") / "test_cases.json"
    good = {"op/test_cases.json": cases.read_bytes(), "op/op_impl.py": IMPL.encode(), "op/op_golden.py": GOLDEN.encode()}
    sub = load(_zip(tmp_path / "ok.zip", good), tmp_path / "w-ok")
    assert sub.name == "op" and sub.kind == "package"
    rejects(tmp_path, _zip(tmp_path / "dots.zip", {**good, "../evil.py": b"x"}), "escapes the folder: it contains '..'")
    rejects(tmp_path, _zip(tmp_path / "abs.zip", {**good, "/etc/evil.py": b"x"}), "escapes the folder: it has an absolute path")
    rejects(tmp_path, _zip(tmp_path / "link.zip", good, link="op/link.py"), "is a link")


def test_tar_rejects_links_and_oversize(tmp_path, monkeypatch):
    path = tmp_path / "pkg.tar.gz"
    with tarfile.open(path, "w:gz") as tf:
        info = tarfile.TarInfo("op/evil")
        info.type = tarfile.SYMTYPE
        info.linkname = "/etc/shadow"
        tf.addfile(info)
    rejects(tmp_path, path, "is a link")
    from runtime.intake import archive

    monkeypatch.setattr(archive, "MAX_UNPACKED_BYTES", 100)
    big = tmp_path / "big.tar.gz"
    with tarfile.open(big, "w:gz") as tf:
        data = b"0" * 1000
        info = tarfile.TarInfo("op/data.bin")
        info.size = len(data)
        tf.addfile(info, io.BytesIO(data))
    rejects(tmp_path, big, "oversized archive")


def test_not_an_archive(tmp_path):
    bad = tmp_path / "junk.zip"
    bad.write_bytes(b"this is not a zip")
    rejects(tmp_path, bad, "not a valid zip archive")
    other = tmp_path / "notes.txt"
    other.write_text("hi")
    rejects(tmp_path, other, "expected an operator package")


def test_script_submission(tmp_path):
    script = tmp_path / "k.py"
    script.write_text("print('hi')\n")
    sub = load(script, tmp_path / "w")
    assert sub.kind == "script" and sub.script == "k.py" and sub.name == "k"


def test_the_zip_writer_is_deterministic_and_compresses():
    from runtime.intake import archive

    files = [("op/b.py", b"x = 1\n" * 2000), ("op/a.py", b"y = 2\n")]
    data = archive.write_zip(files)
    assert data == archive.write_zip(list(reversed(files)))  # order and times do not change the bytes
    with zipfile.ZipFile(io.BytesIO(data)) as zf:
        assert [i.filename for i in zf.infolist()] == ["op/a.py", "op/b.py"]
        assert all(i.compress_type == zipfile.ZIP_DEFLATED for i in zf.infolist())
        assert zf.read("op/b.py") == files[0][1]
    assert len(data) < len(files[0][1]) // 10


def test_reading_in_memory_follows_the_same_rules(tmp_path):
    from runtime.intake import archive

    evil = _zip(tmp_path / "evil.zip", {"op/a.py": b"x", "../b.py": b"y"}).read_bytes()
    with pytest.raises(archive.UnsafeArchive, match="escapes the folder"):
        archive.read_files(evil, "evil.zip", lambda p: True, 1024, 10)
    good = archive.write_zip([("op/a.py", b"x"), ("op/big.py", b"y" * 2048), ("op/c.json", b"{}")])
    assert archive.read_files(good, "good.zip", lambda p: p.suffix == ".py", 1024, 10) == {"op/a.py": b"x"}


def test_named_shapes_take_their_own_dtype_over_the_shared_one(tmp_path):
    """gym case files: `<name>_shape` inputs share `dtype` unless `<name>_dtype` says otherwise."""
    from runtime.intake.cases import load_case_file

    path = tmp_path / "test_cases.json"
    path.write_text(json.dumps({"op_name": "add_norm", "test_cases": [{"id": "c1", "seed": 1, "input": {
        "x1_shape": [4, 64], "x2_shape": [4, 64], "gamma_shape": [64],
        "dtype": "bfloat16", "gamma_dtype": "float32"}}]}))
    [case] = load_case_file(path, "add_norm").cases
    assert [(i.name, i.shape, i.dtype) for i in case.inputs] == [
        ("x1", [4, 64], "bfloat16"), ("x2", [4, 64], "bfloat16"), ("gamma", [64], "float32")]
    path.write_text(path.read_text().replace('"gamma_dtype": "float32"', '"gamma_dtype": "float99"'))
    with pytest.raises(SubmissionError, match="float99"):
        load_case_file(path, "add_norm")


def test_a_script_outside_a_checkout_takes_what_it_imports_from_its_own_folder(tmp_path):
    # Python puts a script's folder first on sys.path: `import rope_impl` and `from helpers.fmt import pick`
    # resolve there in a plain run, so they travel with the script; files it does not import stay behind.
    from runtime.intake.submission import load_script

    (tmp_path / "rope_impl.py").write_text("import pypto\nfrom helpers.fmt import pick\n")
    (tmp_path / "helpers").mkdir()
    (tmp_path / "helpers" / "fmt.py").write_text("def pick():\n    return 1\n")
    (tmp_path / "unrelated.py").write_text("x = 1\n")
    script = tmp_path / "run_rope.py"
    script.write_text("import torch\nimport rope_impl\n\nif __name__ == '__main__':\n    pass\n")
    sub = load_script(script)
    assert sub.root == tmp_path.resolve() and sub.script == "run_rope.py"
    assert sub.files == ["helpers/fmt.py", "rope_impl.py", "run_rope.py"]
