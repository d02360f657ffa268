"""Dtype names accepted in test_cases.json and their default tolerances (docs/pypto.md §6)."""
from __future__ import annotations

# Canonical name -> aliases accepted in test_cases.json.
DTYPE_ALIASES: dict[str, tuple[str, ...]] = {
    "float32": ("float32", "fp32", "float", "torch.float32", "dt_fp32"),
    "float16": ("float16", "fp16", "half", "torch.float16", "dt_fp16"),
    "bfloat16": ("bfloat16", "bf16", "torch.bfloat16", "dt_bf16"),
    "int8": ("int8", "torch.int8", "dt_int8"),
    "int16": ("int16", "torch.int16", "dt_int16"),
    "int32": ("int32", "int", "torch.int32", "dt_int32"),
    "int64": ("int64", "long", "torch.int64", "dt_int64"),
    "uint8": ("uint8", "torch.uint8", "dt_uint8"),
    "bool": ("bool", "torch.bool", "dt_bool"),
}
ITEMSIZE = {"float32": 4, "float16": 2, "bfloat16": 2, "int8": 1, "int16": 2, "int32": 4, "int64": 8, "uint8": 1,
            "bool": 1}  # bytes per element
_LOOKUP = {alias: name for name, aliases in DTYPE_ALIASES.items() for alias in aliases}

# (rtol, atol) when a case gives none: fp32 1e-3 (elementwise/reductions); bf16 2^-7 / 1e-4;
# fp16 1e-3 / 5e-3 (LSTM-style fp16 outputs); integers and bool compare exactly.
DEFAULT_TOLERANCES: dict[str, tuple[float, float]] = {
    "float32": (1e-3, 1e-3),
    "float16": (1e-3, 5e-3),
    "bfloat16": (0.0078125, 1e-4),
}


def canonical_dtype(name: object) -> str | None:
    """The canonical dtype name, or None when unknown."""
    if not isinstance(name, str):
        return None
    return _LOOKUP.get(name.strip().lower())


def default_tolerance(dtype: str) -> tuple[float, float]:
    return DEFAULT_TOLERANCES.get(dtype, (0.0, 0.0))
