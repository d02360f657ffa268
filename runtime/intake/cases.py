"""test_cases.json: the pypto-gym format plus our multi-input extensions, validated."""
from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from runtime.intake.dtypes import ITEMSIZE, canonical_dtype
from runtime.errors import SubmissionError
from runtime.devices.pypto_api import check_version
from runtime.job.timing import TimingSpec, parse_spec

INIT_KINDS = ("randn", "rand", "ones", "zeros", "arange")
COMPARE_KINDS = ("strict", "ratio")
# The ratio-tolerant compare of large model ops: at most 0.5% of elements outside tolerance.
DEFAULT_MAX_MISMATCH_RATIO = 0.005
# The most a case may accept: beyond it "ratio" would pass garbage (a max_mismatch_ratio of 1 passes anything).
MAX_MISMATCH_RATIO_CAP = 0.1
SHAPE_SUFFIX = "_shape"
MIN_SEED, MAX_SEED = -(2**63), 2**64 - 1  # what torch.manual_seed accepts
MAX_DIMS = 64  # more dims than any tensor library supports


@dataclass
class InputSpec:
    name: str
    shape: list[int]
    dtype: str
    init: str = "randn"


@dataclass
class CaseSpec:
    id: str
    seed: int
    inputs: list[InputSpec]
    description: str = ""
    outputs: list[dict[str, Any]] = field(default_factory=list)
    rtol: float | None = None
    atol: float | None = None
    compare: str = "strict"
    max_mismatch_ratio: float = DEFAULT_MAX_MISMATCH_RATIO
    params: dict[str, Any] = field(default_factory=dict)
    output_args: list[int | str] | None = None  # kernel arguments that are outputs, when named
    verify_passes: bool = False
    timing: TimingSpec | None = None  # NPU runs time the kernel when asked (runtime/job/timing.py)


@dataclass
class CaseFile:
    op_name: str
    cases: list[CaseSpec]
    impl: str | None = None  # "file.py:function"
    golden: str | None = None
    requires_pypto: str | None = None  # the pypto version the kernel was written for (docs/versions.md §3)


MAX_CASES = 10_000  # per case file, whatever runs it; a server may take fewer (MAX_CASES_PER_SUBMISSION)


def load_case_file(path: Path, default_name: str) -> CaseFile:
    """Parse and validate test_cases.json; every problem raises SubmissionError naming it."""
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except UnicodeDecodeError as exc:
        raise SubmissionError(f"{path.name}: not UTF-8 text ({exc})") from None
    except json.JSONDecodeError as exc:
        raise SubmissionError(f"{path.name}: bad JSON at line {exc.lineno} column {exc.colno}: {exc.msg}") from None
    except RecursionError:
        raise SubmissionError(f"{path.name}: nested too deeply to be a case file") from None
    if not isinstance(raw, dict):
        raise SubmissionError(f"{path.name}: top level must be an object with 'op_name' and 'test_cases'")
    op_name = raw.get("op_name", default_name)
    if not isinstance(op_name, str) or not op_name.strip():
        raise SubmissionError(f"{path.name}: 'op_name' must be a non-empty string")
    raw_cases = raw.get("test_cases")
    if not isinstance(raw_cases, list) or not raw_cases:
        raise SubmissionError(f"{path.name}: 'test_cases' must be a non-empty list")
    if len(raw_cases) > MAX_CASES:
        # Counted before any case is parsed: 100,000 cases took 40 s to parse (docs/SECURITY.md).
        raise SubmissionError(f"{path.name}: {len(raw_cases)} cases; at most {MAX_CASES} per case file "
                              "(split the operator's cases into several submissions)")
    cases = [_parse_case(path.name, i, item) for i, item in enumerate(raw_cases)]
    seen: set[str] = set()
    for case in cases:
        if case.id in seen:
            raise SubmissionError(f"{path.name}: duplicate case id '{case.id}'")
        seen.add(case.id)
    return CaseFile(
        op_name=op_name.strip(),
        cases=cases,
        impl=_optional_ref(path.name, raw, "impl"),
        golden=_optional_ref(path.name, raw, "golden"),
        requires_pypto=_optional_version(path.name, raw),
    )


def _optional_version(where: str, raw: dict[str, Any]) -> str | None:
    value = raw.get("requires_pypto")
    if value is None:
        return None
    try:
        return check_version(value, f"{where}: 'requires_pypto'")
    except ValueError as exc:
        raise SubmissionError(str(exc)) from None


def _optional_ref(where: str, raw: dict[str, Any], key: str) -> str | None:
    value = raw.get(key)
    if value is None:
        return None
    if not isinstance(value, str) or value.count(":") != 1 or not all(value.split(":")):
        raise SubmissionError(f"{where}: '{key}' must look like \"file.py:function\", got {value!r}")
    return value


def _parse_case(where: str, index: int, item: Any) -> CaseSpec:
    if not isinstance(item, dict):
        raise SubmissionError(f"{where}: test_cases[{index}] must be an object")
    case_id = item.get("id", index + 1)
    if not isinstance(case_id, (str, int)) or isinstance(case_id, bool) or str(case_id).strip() == "":
        raise SubmissionError(f"{where}: test_cases[{index}] 'id' must be a string or an integer")
    label = f"{where}: case '{case_id}'"
    seed = item.get("seed", 0)
    if not isinstance(seed, int) or isinstance(seed, bool):
        raise SubmissionError(f"{label}: 'seed' must be an integer, got {seed!r}")
    if not MIN_SEED <= seed <= MAX_SEED:
        raise SubmissionError(f"{label}: 'seed' {seed} is outside torch.manual_seed's range [{MIN_SEED}, {MAX_SEED}]")
    if "inputs" in item:
        raw_inputs = item["inputs"]
        if not isinstance(raw_inputs, list) or not raw_inputs:
            raise SubmissionError(f"{label}: 'inputs' must be a non-empty list")
    elif "input" in item and _named_shapes(item["input"]):
        raw_inputs = _named_shapes(item["input"])  # {x1_shape, x2_shape, gamma_shape, dtype}, as the gym writes it
    elif "input" in item:
        raw_inputs = item["input"] if isinstance(item["input"], list) else [item["input"]]
    else:
        raise SubmissionError(f"{label}: needs 'input' ({{shape, dtype}}) or 'inputs' (a list)")
    inputs = [_parse_input(label, i, x) for i, x in enumerate(raw_inputs)]
    outputs = _parse_outputs(label, item)
    rtol = _optional_float(label, item, "rtol")
    atol = _optional_float(label, item, "atol")
    compare = item.get("compare", "strict")
    if compare not in COMPARE_KINDS:
        raise SubmissionError(f"{label}: 'compare' must be one of {', '.join(COMPARE_KINDS)}, got {compare!r}")
    ratio = _optional_float(label, item, "max_mismatch_ratio")
    if ratio is not None and not 0.0 <= ratio <= MAX_MISMATCH_RATIO_CAP:
        raise SubmissionError(f"{label}: 'max_mismatch_ratio' must be between 0 and {MAX_MISMATCH_RATIO_CAP} "
                              f"(at most {MAX_MISMATCH_RATIO_CAP:.0%} of the elements outside tolerance), got {ratio}")
    params = item.get("params", {})
    if not isinstance(params, dict):
        raise SubmissionError(f"{label}: 'params' must be an object of keyword arguments for the wrapper")
    output_args = item.get("output_args")
    if output_args is not None and not (
        isinstance(output_args, list) and all(isinstance(a, (int, str)) for a in output_args)
    ):
        raise SubmissionError(f"{label}: 'output_args' must be a list of argument indices or names")
    return CaseSpec(
        id=str(case_id).strip(),
        seed=seed,
        inputs=inputs,
        description=str(item.get("description", "")),
        outputs=outputs,
        rtol=rtol,
        atol=atol,
        compare=compare,
        max_mismatch_ratio=DEFAULT_MAX_MISMATCH_RATIO if ratio is None else ratio,
        params=params,
        output_args=output_args,
        verify_passes=bool(item.get("verify_passes", False)),
        timing=parse_spec(label, item.get("timing")),
    )


def _parse_input(label: str, index: int, raw: Any) -> InputSpec:
    if not isinstance(raw, dict):
        raise SubmissionError(f"{label}: input {index} must be an object with 'shape' and 'dtype'")
    name = raw.get("name", f"input{index}")
    where = f"{label}: input '{name}'"
    shape = validate_shape(where, raw.get("shape"))
    dtype = canonical_dtype(raw.get("dtype", "float32"))
    if dtype is None:
        raise SubmissionError(f"{where}: unknown dtype {raw.get('dtype')!r}")
    init = raw.get("init", "randn")
    if init not in INIT_KINDS:
        raise SubmissionError(f"{where}: unknown init {init!r}; use one of {', '.join(INIT_KINDS)}")
    return InputSpec(name=str(name), shape=shape, dtype=dtype, init=init)


def _named_shapes(raw: Any) -> list[dict[str, Any]]:
    """`{"x1_shape": [..], "gamma_shape": [..], "dtype": "bfloat16", "gamma_dtype": ..}` as a list of named specs.

    The dtype is `<name>_dtype` when given, else the shared `dtype`; [] when `raw` uses no `<name>_shape` keys.
    """
    if not isinstance(raw, dict) or "shape" in raw:
        return []
    names = [k[: -len(SHAPE_SUFFIX)] for k in raw if k.endswith(SHAPE_SUFFIX) and len(k) > len(SHAPE_SUFFIX)]
    specs = []
    for name in names:
        spec: dict[str, Any] = {"name": name, "shape": raw[name + SHAPE_SUFFIX]}
        dtype = raw.get(f"{name}_dtype", raw.get("dtype"))
        if dtype is not None:
            spec["dtype"] = dtype
        if "init" in raw:
            spec["init"] = raw["init"]
        specs.append(spec)
    return specs


def _parse_outputs(label: str, item: dict[str, Any]) -> list[dict[str, Any]]:
    single = item.get("output")
    if _named_shapes(single):
        single = _named_shapes(single)
    raw = item.get("outputs", single if isinstance(single, list) else ([single] if single is not None else []))
    if not isinstance(raw, list):
        raise SubmissionError(f"{label}: 'outputs' must be a list")
    outputs = []
    for i, out in enumerate(raw):
        if not isinstance(out, dict):
            raise SubmissionError(f"{label}: output {i} must be an object")
        spec: dict[str, Any] = {"name": str(out["name"])} if "name" in out else {}
        if "shape" in out:
            spec["shape"] = validate_shape(f"{label}: output {i}", out["shape"])
        if "dtype" in out:
            dtype = canonical_dtype(out["dtype"])
            if dtype is None:
                raise SubmissionError(f"{label}: output {i}: unknown dtype {out['dtype']!r}")
            spec["dtype"] = dtype
        outputs.append(spec)
    return outputs


def validate_shape(where: str, shape: Any) -> list[int]:
    ok = isinstance(shape, list) and shape and all(
        isinstance(d, int) and not isinstance(d, bool) and d > 0 for d in shape
    )
    if not ok:
        raise SubmissionError(f"{where}: shape must be a non-empty list of positive ints, got {_short(shape)}")
    if len(shape) > MAX_DIMS:
        raise SubmissionError(f"{where}: {len(shape)} dims; a tensor has at most {MAX_DIMS}")
    return list(shape)


def case_bytes(case: CaseSpec) -> int:
    """The bytes of a case's declared inputs and outputs: a floor on what running it needs."""
    tensors = [(i.shape, i.dtype) for i in case.inputs]
    tensors += [(o["shape"], o.get("dtype", "float32")) for o in case.outputs if "shape" in o]
    return sum(math.prod(shape) * ITEMSIZE.get(dtype, 8) for shape, dtype in tensors)


def check_memory(case_file: CaseFile, memory_bytes: int, flag: str = "--memory") -> None:
    """Refuse, before anything runs, a case whose tensors alone cannot fit its memory limit."""
    for case in case_file.cases:
        need = case_bytes(case)
        if need > memory_bytes:
            raise SubmissionError(
                f"case '{case.id}': its tensors alone need {need / 2**30:.1f} GiB, over the "
                f"{memory_bytes / 2**30:.1f} GiB memory limit per case ({flag} raises it)")


def _short(value: Any, limit: int = 200) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[:limit] + "..."


def _optional_float(label: str, item: dict[str, Any], key: str) -> float | None:
    value = item.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
        raise SubmissionError(f"{label}: '{key}' must be a non-negative number, got {value!r}")
    return float(value)
