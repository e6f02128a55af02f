"""GPU hardware tables: datasheet peaks with their sources, and measured ceilings kept apart.

The data lives in ``hardware/`` (found through ``coach.paths.hardware_dir()``, so it works from an
installed wheel too):

``sources.toml``                the documents cited, by id
``compute_capabilities.toml``   per-SM limits and per-SM rates by NVIDIA compute capability
``gpus/<id>.toml``              one GPU each: every value with its source, or why it is missing
``measured/<gpu>.{toml,json}``  ceilings measured by running a program (``coach.capture.calibrate``)

and the user's own calibrations (``coach calibrate``) in ``coach.paths.calibration_dir()``, which
take precedence: they were measured on the GPU at hand.

``gpus()`` gives typed, frozen ``GPU`` entries; ``table()`` the same as one Polars frame;
``match(name)`` finds the entry for a device name as tools print it; ``for_device(row)`` falls back
to an approximate entry built from a report's own device attributes (a ``coach.model.DEVICES``
row). ``ceilings(gpu)`` gives the bandwidths and compute rates the roofline and the predictions
use: measured where a calibration exists (the user's, else the shipped one), datasheet otherwise,
each saying which. With the shipped calibration the DRAM roof is also at least the best DRAM rate of
any read/write mix recorded on the GPU (``coach.best_rates``), which can exceed both the copy and
the read ceiling (a kernel that reads and writes a little); a user's own calibration stands alone.
"""

from __future__ import annotations

import functools
import json
import re
import tomllib
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any, Literal, Mapping

import polars as pl

from coach import arith, best_rates
from coach.capture.calibrate import MEASUREMENTS, SCHEMA
from coach.errors import CoachError, InputError
from coach.paths import calibration_dir, hardware_dir

# Published figures carry two to four significant digits (the B200's "37 TFLOPS" FP64 is 37.5 at the
# clock its FP32 figure implies), so a derived value must agree with its formula to within 2%.
DERIVED_TOLERANCE = 0.02

# Ratios between tensor rates that hold on every NVIDIA GPU of compute capability 8.0 and later in
# hardware/gpus (A100, A10, L4, L40S, H100, H200, B200 datasheets): TF32 runs at half the dense
# FP16/BF16 rate, INT8 at twice it, and FP8 (8.9 and later) at twice it. The fallback uses them.
TF32_PER_FP16 = 0.5
INT8_PER_FP16 = 2.0
FP8_PER_FP16 = 2.0
FP8_MIN_CC = (8, 9)
TENSOR_MIN_CC = (8, 0)  # TF32, BF16 and INT8-at-2x arrived with Ampere

#: Numeric fields of a GPU entry and their units. Every GPU file gives each one a value or says why
#: it is missing; the per-SM limits may come from the compute-capability table instead.
FIELDS: dict[str, str] = {
    "sm_count": "SMs (CUs on AMD)",
    "boost_clock_hz": "Hz",
    "peak_fp64_flop_per_s": "FLOP/s, FP64 non-tensor",
    "peak_fp64_tensor_flop_per_s": "FLOP/s, FP64 tensor (matrix) path",
    "peak_fp32_flop_per_s": "FLOP/s, FP32 non-tensor",
    "peak_tf32_tensor_flop_per_s": "FLOP/s, TF32 tensor, dense",
    "peak_bf16_tensor_flop_per_s": "FLOP/s, BF16 tensor, dense, FP32 accumulate",
    "peak_fp16_tensor_flop_per_s": "FLOP/s, FP16 tensor, dense, FP32 accumulate",
    "peak_fp16_flop_per_s": "FLOP/s, FP16 non-tensor",
    "peak_fp8_tensor_flop_per_s": "FLOP/s, FP8 tensor, dense",
    "peak_fp6_tensor_flop_per_s": "FLOP/s, FP6 tensor, dense",
    "peak_fp4_tensor_flop_per_s": "FLOP/s, FP4 tensor, dense",
    "peak_int8_tensor_op_per_s": "OP/s, INT8 tensor, dense",
    "dram_bytes": "bytes",
    "dram_bandwidth_bytes_per_s": "byte/s",
    "l2_bytes": "bytes",
    "l2_bandwidth_bytes_per_s": "byte/s",
    "shared_bandwidth_bytes_per_s": "byte/s, L1/shared memory, all SMs",
    "shared_mem_per_sm_bytes": "bytes",
    "registers_per_sm": "32-bit registers",
    "max_warps_per_sm": "warps (wavefronts on AMD)",
    "max_blocks_per_sm": "blocks",
    "max_threads_per_block": "threads",
    "pcie_generation": "",
    "pcie_bytes_per_s_per_direction": "byte/s",
    "peer_link_bytes_per_s_bidirectional": "byte/s",
    "peer_link_count": "links",
    "nvlink_domain_gpus": "GPUs in one NVLink domain",
}
PER_SM_LIMITS = ("shared_mem_per_sm_bytes", "registers_per_sm", "max_warps_per_sm", "max_blocks_per_sm",
                 "max_threads_per_block")
TEXT_FIELDS = ("id", "name", "vendor", "architecture", "form_factor", "memory_type", "peer_link")

#: Compute ceilings by precision name -> GPU field. "fp16_simt" is FP16 on the FMA pipe; "fp16",
#: "bf16", "tf32", "fp8", "fp6", "fp4", "int8" and "fp64_tensor" are tensor-core (matrix) rates.
PRECISION_FIELDS: dict[str, str] = {
    "fp64": "peak_fp64_flop_per_s",
    "fp64_tensor": "peak_fp64_tensor_flop_per_s",
    "fp32": "peak_fp32_flop_per_s",
    "fp16_simt": "peak_fp16_flop_per_s",
    "tf32": "peak_tf32_tensor_flop_per_s",
    "bf16": "peak_bf16_tensor_flop_per_s",
    "fp16": "peak_fp16_tensor_flop_per_s",
    "fp8": "peak_fp8_tensor_flop_per_s",
    "fp6": "peak_fp6_tensor_flop_per_s",
    "fp4": "peak_fp4_tensor_flop_per_s",
    "int8": "peak_int8_tensor_op_per_s",
}
#: Memory levels -> GPU field, outermost first.
LEVEL_FIELDS: dict[str, str] = {
    "dram": "dram_bandwidth_bytes_per_s",
    "l2": "l2_bandwidth_bytes_per_s",
    "shared": "shared_bandwidth_bytes_per_s",
}
#: The best DRAM rate of any read/write mix recorded on a GPU (``coach.recorded_rates.ANY``): with
#: the shipped calibration, the DRAM roof is at least this.
DRAM_ROOF = "dram_bandwidth_bytes_per_s"
#: Which measurement replaces which datasheet ceiling. DRAM takes the better of copy and read, and
#: with the shipped calibration at least the best recorded DRAM rate of any mix (``DRAM_ROOF``).
MEASURED_FOR: dict[str, tuple[str, ...]] = {
    "dram": ("dram_copy_bandwidth_bytes_per_s", "dram_read_bandwidth_bytes_per_s"),
    "fp32": ("fp32_simt_matmul_flop_per_s",),
    "tf32": ("tf32_tensor_matmul_flop_per_s",),
    "bf16": ("bf16_tensor_matmul_flop_per_s",),
    "fp8": ("fp8_tensor_matmul_flop_per_s",),
}

Origin = Literal["published", "recorded", "derived", "device", "measured", "missing"]


class UnknownGPUError(CoachError):
    """A GPU id that the tables do not have."""

    def __init__(self, gpu_id: str, known: list[str]):
        self.gpu_id = gpu_id
        self.known = known
        super().__init__(f"unknown GPU '{gpu_id}'; known ids: {', '.join(known)}")


@dataclass(frozen=True)
class Sourced:
    """Where one value comes from."""

    value: float | None
    origin: Origin
    source: str = ""  # document id in sources.toml, "" for device attributes and missing values
    at: str = ""  # where in the document, or which device attribute
    formula: str = ""  # for derived values
    note: str = ""
    approximate: bool = False

    def describe(self) -> str:
        """One line: the source and place, the formula for a derived value, or why it is missing."""
        if self.origin == "missing":
            return f"missing: {self.note}"
        parts = []
        if self.formula:
            parts.append(f"derived: {self.formula}")
        if self.source:
            parts.append(f"{self.source}, {self.at}" if self.at else self.source)
        elif self.at:
            parts.append(self.at)
        if self.approximate:
            parts.append("approximate")
        if self.note:
            parts.append(self.note)
        return "; ".join(parts)


@dataclass(frozen=True)
class GPU:
    """One GPU's datasheet numbers. Each numeric field is None where the value is missing;
    ``sources[field]`` says where each came from."""

    id: str
    name: str
    vendor: str
    architecture: str
    form_factor: str
    memory_type: str
    peer_link: str
    compute_capability: str | None
    sm_count: int | None
    boost_clock_hz: float | None
    peak_fp64_flop_per_s: float | None
    peak_fp64_tensor_flop_per_s: float | None
    peak_fp32_flop_per_s: float | None
    peak_tf32_tensor_flop_per_s: float | None
    peak_bf16_tensor_flop_per_s: float | None
    peak_fp16_tensor_flop_per_s: float | None
    peak_fp16_flop_per_s: float | None
    peak_fp8_tensor_flop_per_s: float | None
    peak_fp6_tensor_flop_per_s: float | None
    peak_fp4_tensor_flop_per_s: float | None
    peak_int8_tensor_op_per_s: float | None
    dram_bytes: float | None
    dram_bandwidth_bytes_per_s: float | None
    l2_bytes: int | None
    l2_bandwidth_bytes_per_s: float | None
    shared_bandwidth_bytes_per_s: float | None
    shared_mem_per_sm_bytes: int | None
    registers_per_sm: int | None
    max_warps_per_sm: int | None
    max_blocks_per_sm: int | None
    max_threads_per_block: int | None
    pcie_generation: int | None
    pcie_bytes_per_s_per_direction: float | None
    peer_link_bytes_per_s_bidirectional: float | None
    peer_link_count: int | None
    nvlink_domain_gpus: int | None
    sources: Mapping[str, Sourced] = field(repr=False, compare=False)
    device_names: tuple[str, ...] = ()
    aliases: tuple[str, ...] = ()
    approximate: bool = False  # built from a report's device attributes, not from a GPU file

    def source(self, name: str) -> Sourced:
        return self.sources[name]

    def value(self, name: str) -> float | None:
        return getattr(self, name)


_INT_FIELDS = {f.name for f in fields(GPU) if f.type in ("int | None",)}


# --------------------------------------------------------------------------------------------
# Loading
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Catalog:
    """Everything in one hardware/ folder."""

    root: Path
    sources: Mapping[str, Mapping[str, str]]
    compute_capabilities: Mapping[str, Mapping[str, Sourced]]
    architectures: Mapping[str, str]  # by compute capability
    gpus: Mapping[str, GPU]
    measured: Mapping[str, "Measurements"]  # by GPU id


def catalog() -> Catalog:
    """The tables in ``coach.paths.hardware_dir()`` (read once per folder)."""
    return _load_catalog(hardware_dir())


@functools.cache
def _load_catalog(root: Path) -> Catalog:
    if not (root / "gpus").is_dir():
        raise InputError(root, "no gpus/ folder: is COACH_DATA pointing at a folder with hardware/ in it?")
    sources = _read_toml(root / "sources.toml")
    cc_path = root / "compute_capabilities.toml"
    cc_raw = _read_toml(cc_path).get("cc", {})
    ccs = {cc: {k: _sourced(cc_path, f"cc {cc}.{k}", v, {}, sources) for k, v in entry.items() if isinstance(v, dict)}
           for cc, entry in cc_raw.items()}
    architectures = {cc: str(entry.get("architecture", "")) for cc, entry in cc_raw.items()}
    gpus: dict[str, GPU] = {}
    for path in sorted((root / "gpus").glob("*.toml")):
        gpu = _gpu_from_file(path, sources, ccs)
        if gpu.id in gpus:
            raise InputError(path, f"GPU id '{gpu.id}' is used twice")
        gpus[gpu.id] = gpu
    measured: dict[str, Measurements] = {}
    measured_dir = root / "measured"
    for path in sorted([*measured_dir.glob("*.toml"), *measured_dir.glob("*.json")]) if measured_dir.is_dir() else []:
        m = read_measurements(path)
        gpu = _match(m.gpu_name, gpus)
        if gpu is None:
            raise InputError(path, f"measured on '{m.gpu_name}', which matches no GPU in {root / 'gpus'}")
        if gpu.id not in measured or m.date > measured[gpu.id].date:
            measured[gpu.id] = m
    return Catalog(root=root, sources=sources, compute_capabilities=ccs, architectures=architectures, gpus=gpus,
                   measured=measured)


def _read_toml(path: Path) -> dict[str, Any]:
    try:
        with open(path, "rb") as f:
            return tomllib.load(f)
    except FileNotFoundError:
        raise InputError(path, "missing") from None
    except tomllib.TOMLDecodeError as err:
        raise InputError(path, f"not valid TOML: {err}") from None


def _gpu_from_file(path: Path, sources: Mapping[str, Any], ccs: Mapping[str, Mapping[str, Sourced]]) -> GPU:
    raw = _read_toml(path)
    for key in TEXT_FIELDS:
        if not isinstance(raw.get(key), str):
            raise InputError(path, f"needs a text field '{key}'")
    if raw["id"] != path.stem:
        raise InputError(path, f"id '{raw['id']}' differs from the file name")
    cc = raw.get("compute_capability")
    inherited: dict[str, Sourced] = {}
    if cc is not None:
        if cc not in ccs:
            raise InputError(path, f"compute capability {cc} is not in compute_capabilities.toml")
        inherited = {k: ccs[cc][k] for k in PER_SM_LIMITS if k in ccs[cc]}
    entries = {k: v for k, v in raw.items() if k in FIELDS}
    unknown = [k for k, v in raw.items() if isinstance(v, dict) and k not in FIELDS]
    if unknown:
        raise InputError(path, f"unknown fields {unknown}; the fields are {list(FIELDS)}")
    values: dict[str, float] = {k: s.value for k, s in inherited.items() if s.value is not None}
    for k, v in entries.items():
        if isinstance(v, dict) and "value" in v and "derived" not in v:
            values[k] = v["value"]
    resolved = dict(inherited)
    for k, v in entries.items():  # in file order, so a formula may use a value derived above it
        resolved[k] = _sourced(path, k, v, values, sources)
        if resolved[k].value is not None:
            values[k] = resolved[k].value  # type: ignore[assignment]
    absent = [k for k in FIELDS if k not in resolved]
    if absent:
        raise InputError(path, f"no value or reason for {absent}")
    return _make_gpu(
        {k: raw[k] for k in TEXT_FIELDS},
        compute_capability=cc,
        sources=resolved,
        device_names=tuple(raw.get("device_names", ())),
        aliases=tuple(raw.get("aliases", ())),
    )


def _make_gpu(text: Mapping[str, str], *, compute_capability: str | None, sources: Mapping[str, Sourced],
              device_names: tuple[str, ...] = (), aliases: tuple[str, ...] = (), approximate: bool = False) -> GPU:
    numbers = {k: (None if s.value is None else (int(s.value) if k in _INT_FIELDS else float(s.value)))
               for k, s in sources.items()}
    return GPU(**text, compute_capability=compute_capability, **numbers, sources=dict(sources),
               device_names=device_names, aliases=aliases, approximate=approximate)


def _sourced(path: Path, key: str, v: Any, values: Mapping[str, float], sources: Mapping[str, Any]) -> Sourced:
    """Validate one ``{ value, src, at, derived, note, approximate }`` or ``{ missing }`` table."""
    if not isinstance(v, dict):
        raise InputError(path, f"{key}: expected an inline table {{ value = ..., src = ..., at = ... }}")
    allowed = {"value", "src", "at", "derived", "note", "approximate", "missing"}
    if set(v) - allowed:
        raise InputError(path, f"{key}: unknown keys {sorted(set(v) - allowed)}")
    if "missing" in v:
        if "value" in v:
            raise InputError(path, f"{key}: has both a value and a reason it is missing")
        return Sourced(None, "missing", note=str(v["missing"]))
    if not isinstance(v.get("value"), (int, float)) or isinstance(v.get("value"), bool):
        raise InputError(path, f"{key}: needs a numeric value (or missing = \"why\")")
    src, at, formula = v.get("src", ""), v.get("at", ""), v.get("derived", "")
    if not src and not formula:
        raise InputError(path, f"{key}: a value needs a source (src and at) or a formula (derived)")
    if src and src not in sources:
        raise InputError(path, f"{key}: source '{src}' is not in sources.toml")
    if src and not at:
        raise InputError(path, f"{key}: source '{src}' needs 'at' (page, table or row)")
    if formula:
        expected = evaluate(formula, values)
        if not _close(v["value"], expected):
            raise InputError(path, f"{key}: value {v['value']:g} disagrees with its formula {formula} = {expected:g}")
        origin: Origin = "derived"
    else:
        origin = "recorded" if sources[src].get("kind") == "recorded" else "published"
    # A derived value is used as the file writes it (per-SM rates are exact integers; the formula,
    # over rounded published figures, checks it).
    return Sourced(float(v["value"]), origin, src, at, formula, v.get("note", ""), bool(v.get("approximate", False)))


def _close(a: float, b: float) -> bool:
    return abs(a - b) <= DERIVED_TOLERANCE * max(abs(a), abs(b))




def evaluate(formula: str, names: Mapping[str, float]) -> float:
    """Evaluate a derived value's formula: numbers, names of other values, + - * / and parentheses."""
    try:
        return float(arith.evaluate(formula, lambda parts: float(names[parts[0]]), operators=arith.BASIC))
    except arith.NotParsed:
        raise ValueError(f"formula {formula!r} is not an arithmetic expression") from None
    except arith.UnknownName as err:
        raise ValueError(f"unknown name '{err.parts[0]}' in formula {formula!r}") from None
    except arith.DividesByZero:
        raise ValueError(f"formula {formula!r} divides by zero") from None
    except arith.NotAllowed:
        raise ValueError(f"formula {formula!r}: only numbers, names and + - * / are allowed") from None


# --------------------------------------------------------------------------------------------
# Access
# --------------------------------------------------------------------------------------------


def gpus() -> dict[str, GPU]:
    """Every GPU in the tables, by id."""
    return dict(catalog().gpus)


def get(gpu_id: str) -> GPU:
    """The GPU with this id or alias (case-insensitive); ``UnknownGPUError`` lists the known ids."""
    key = gpu_id.strip().lower()
    for gpu in catalog().gpus.values():
        if key == gpu.id or key in gpu.aliases:
            return gpu
    raise UnknownGPUError(gpu_id, sorted(catalog().gpus))


def table() -> pl.DataFrame:
    """All GPUs as one frame: text fields, then every numeric field (units in the names)."""
    rows = [{**{k: getattr(g, k) for k in TEXT_FIELDS}, "compute_capability": g.compute_capability,
             **{k: (None if g.value(k) is None else float(g.value(k))) for k in FIELDS}}
            for g in catalog().gpus.values()]
    schema = {**{k: pl.Utf8 for k in (*TEXT_FIELDS, "compute_capability")}, **{k: pl.Float64 for k in FIELDS}}
    return pl.DataFrame(rows, schema=schema)


def sources_table() -> pl.DataFrame:
    """One row per GPU and field: the value, its origin, and where it comes from."""
    rows = [{"gpu_id": g.id, "field": k, "value": None if g.value(k) is None else float(g.value(k)),
             "origin": g.source(k).origin, "source": g.source(k).source, "where": g.source(k).describe()}
            for g in catalog().gpus.values() for k in FIELDS]
    return pl.DataFrame(rows, schema={"gpu_id": pl.Utf8, "field": pl.Utf8, "value": pl.Float64,
                                      "origin": pl.Utf8, "source": pl.Utf8, "where": pl.Utf8})


def normalise_name(device_name: str) -> str:
    """'NVIDIA  H100 80GB HBM3' -> 'h100 80gb hbm3': lower case, single spaces, vendor prefix dropped."""
    name = re.sub(r"\s+", " ", device_name.strip().lower())
    return re.sub(r"^(nvidia|amd) ", "", name)


def match(device_name: str) -> GPU | None:
    """The GPU whose ``device_names`` patterns fully match this name as a tool prints it
    ("NVIDIA H100 80GB HBM3", "Tesla V100-SXM2-16GB", "AMD Instinct MI300X"), or None."""
    return _match(device_name, catalog().gpus)


def _match(device_name: str, table: Mapping[str, GPU]) -> GPU | None:
    name = normalise_name(device_name)
    for gpu in table.values():
        if any(re.fullmatch(p, name) for p in gpu.device_names):
            return gpu
    return None


def for_device(device: Mapping[str, Any]) -> GPU:
    """The entry for a report's device (a ``coach.model.DEVICES`` row): the table's entry when the
    name matches one, else an approximate one built from the row's own attributes."""
    name = device.get("name")
    known = match(name) if name else None
    return known if known is not None else fallback(device)


def fallback(device: Mapping[str, Any]) -> GPU:
    """An approximate entry from a report's device attributes: SM count, clocks, memory bus, cc.

    Values the report states are marked ``device``; rates computed from them and the per-SM rates
    of its compute capability are marked ``derived`` with their formula, and the entry as a whole
    is ``approximate``. What cannot be computed is missing, with the reason.
    """
    d = {k: v for k, v in device.items() if v is not None}
    name = str(d.get("name") or "unknown GPU")
    cc_key, cc_note = _nearest_cc(d.get("cc_major"), d.get("cc_minor"))
    per_sm = catalog().compute_capabilities.get(cc_key, {}) if cc_key else {}
    src: dict[str, Sourced] = {}
    values: dict[str, float] = {}

    def reported(k: str, column: str) -> None:
        if column in d:
            src[k] = Sourced(float(d[column]), "device", at=f"the report's device attribute {column}", approximate=True)
            values[k] = float(d[column])

    def derive(k: str, formula: str, because: str, **extra: float) -> None:
        names = {**values, **extra}
        try:
            v = evaluate(formula, names)
        except ValueError:
            return
        src[k] = Sourced(v, "derived", formula=formula, note=because, approximate=True)
        values[k] = v

    for k, column in (("sm_count", "sm_count"), ("boost_clock_hz", "sm_clock_hz"), ("dram_bytes", "memory_bytes"),
                      ("dram_bandwidth_bytes_per_s", "memory_bandwidth_bytes_per_s"), ("l2_bytes", "l2_bytes"),
                      *((k, k) for k in PER_SM_LIMITS)):
        reported(k, column)
    if "dram_bandwidth_bytes_per_s" not in values and {"memory_clock_hz", "memory_bus_width_bits"} <= d.keys():
        derive("dram_bandwidth_bytes_per_s", "2 * memory_clock_hz * memory_bus_width_bits / 8",
               "double data rate, as CUDA's deviceQuery computes peak bandwidth",
               memory_clock_hz=float(d["memory_clock_hz"]), memory_bus_width_bits=float(d["memory_bus_width_bits"]))
    rates = {k: s.value for k, s in per_sm.items() if s.value is not None}
    for k in PER_SM_LIMITS:
        if k not in src and k in per_sm:
            src[k] = replace(per_sm[k], note=f"compute capability {cc_key}{cc_note}")
            values[k] = per_sm[k].value  # type: ignore[assignment]
    basis = f"per-SM rate of compute capability {cc_key}{cc_note} (compute_capabilities.toml)"
    if "fp32_results_per_clk_per_sm" in rates:
        derive("peak_fp32_flop_per_s", "sm_count * fp32_results_per_clk_per_sm * 2 * boost_clock_hz", basis, **rates)
    if "fp64_results_per_clk_per_sm" in rates:
        derive("peak_fp64_flop_per_s", "sm_count * fp64_results_per_clk_per_sm * 2 * boost_clock_hz", basis, **rates)
    cc = (int(d.get("cc_major", 0)), int(d.get("cc_minor", 0)))
    if "tensor_fp16_flop_per_clk_per_sm" in rates:
        derive("peak_fp16_tensor_flop_per_s", "sm_count * tensor_fp16_flop_per_clk_per_sm * boost_clock_hz", basis, **rates)
        if cc >= TENSOR_MIN_CC and "peak_fp16_tensor_flop_per_s" in values:
            fp16 = {"fp16": values["peak_fp16_tensor_flop_per_s"]}
            derive("peak_bf16_tensor_flop_per_s", "fp16", "BF16 runs at the FP16 tensor rate from cc 8.0", **fp16)
            derive("peak_tf32_tensor_flop_per_s", f"fp16 * {TF32_PER_FP16}", "TF32 at half the FP16 tensor rate (cc >= 8.0)", **fp16)
            derive("peak_int8_tensor_op_per_s", f"fp16 * {INT8_PER_FP16}", "INT8 at twice the FP16 tensor rate (cc >= 8.0)", **fp16)
            if cc >= FP8_MIN_CC:
                derive("peak_fp8_tensor_flop_per_s", f"fp16 * {FP8_PER_FP16}", "FP8 at twice the FP16 tensor rate (cc >= 8.9)", **fp16)
    derive("shared_bandwidth_bytes_per_s", "sm_count * 32 * 4 * boost_clock_hz", "32 banks x 4 bytes per clock per SM (CUDA guide)")
    for k in FIELDS:
        if k not in src:
            src[k] = Sourced(None, "missing", note="not derivable from the report's device attributes")
    text = {"id": device_id(name), "name": name, "vendor": "NVIDIA" if cc_key else "unknown",
            "architecture": catalog().architectures.get(cc_key, "unknown") if cc_key else "unknown",
            "form_factor": "unknown", "memory_type": "unknown", "peer_link": "unknown"}
    cc_text = f"{d['cc_major']}.{d['cc_minor']}" if {"cc_major", "cc_minor"} <= d.keys() else None
    return _make_gpu(text, compute_capability=cc_text, sources=src, approximate=True)


def device_id(device_name: str) -> str:
    """The id of the approximate entry ``fallback`` builds for a device the tables lack."""
    return "device-" + (re.sub(r"[^a-z0-9]+", "-", normalise_name(device_name)).strip("-") or "unknown")


def _nearest_cc(major: Any, minor: Any) -> tuple[str | None, str]:
    """The table's compute capability for (major, minor), or the highest one below it with the same
    major version, and a note when it is not exact."""
    if major is None:
        return None, ""
    want = (int(major), int(minor or 0))
    known = sorted(tuple(int(x) for x in k.split(".")) for k in catalog().compute_capabilities)
    same_major = [k for k in known if k[0] == want[0] and k <= want]
    if not same_major:
        return None, ""
    best = same_major[-1]
    key = f"{best[0]}.{best[1]}"
    return key, "" if best == want else f", standing in for {want[0]}.{want[1]}"


# --------------------------------------------------------------------------------------------
# Measured ceilings
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Measurements:
    """Ceilings measured by running a program (``coach.capture.calibrate``), with provenance.

    ``provenance`` is the run the file was written by. A measurement merged in from a later run on the
    same GPU (without replacing the others) carries that run's provenance in its own entry
    (``measurements.<name>.provenance``, the same keys): ``describe(name)`` names the run each value
    comes from."""

    path: Path
    provenance: Mapping[str, Any]
    values: Mapping[str, float]  # measurement name -> value, in MEASUREMENTS units
    #: measurement name -> the provenance of the run it comes from, where not the file's own
    merged_from: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    #: measurement name -> why a run's value of it was not kept (``withheld`` in the file)
    withheld: Mapping[str, str] = field(default_factory=dict)

    @property
    def gpu_name(self) -> str:
        return str(self.provenance.get("gpu_name", ""))

    @property
    def date(self) -> str:
        return str(self.provenance.get("date", ""))

    def provenance_of(self, name: str | None = None) -> Mapping[str, Any]:
        """The provenance of the run that measured ``name`` (the file's own run if not merged)."""
        return self.merged_from.get(name, self.provenance) if name else self.provenance

    def describe(self, name: str | None = None) -> str:
        p = self.provenance_of(name)
        tools = ", ".join(f"{k} {p[k]}" for k in ("driver", "cuda", "torch", "triton") if p.get(k))
        merged = ", merged into" if name in self.merged_from else ";"
        gpu = p.get("gpu_name") or self.gpu_name
        return f"measured on {gpu} {p.get('date', '')} ({tools}{merged} {self.path.name})"


def read_measurements(path: str | Path) -> Measurements:
    """Read a calibration JSON (or the same shape in TOML)."""
    path = Path(path)
    try:
        raw = _read_toml(path) if path.suffix == ".toml" else json.loads(path.read_text())
    except FileNotFoundError:
        raise InputError(path, "missing") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as err:
        raise InputError(path, f"not valid JSON: {err}") from None
    if not isinstance(raw, dict) or raw.get("schema") != SCHEMA:
        raise InputError(path, f"not a calibration file (expected schema '{SCHEMA}')")
    provenance, measurements = raw.get("provenance"), raw.get("measurements")
    if not isinstance(provenance, dict) or not provenance.get("gpu_name"):
        raise InputError(path, "provenance with gpu_name is missing")
    if not isinstance(measurements, dict):
        raise InputError(path, "no measurements")
    values = {}
    merged: dict[str, Mapping[str, Any]] = {}
    for name, m in measurements.items():
        if name not in MEASUREMENTS:
            raise InputError(path, f"unknown measurement '{name}'")
        value = m.get("value") if isinstance(m, dict) else None
        if not isinstance(value, (int, float)) or value <= 0:
            raise InputError(path, f"{name}: needs a positive value")
        values[name] = float(value)
        own = m.get("provenance")
        if own is not None:
            if not isinstance(own, dict) or not own.get("date"):
                raise InputError(path, f"{name}: its own provenance needs at least a date")
            if own.get("gpu_name") and own["gpu_name"] != provenance["gpu_name"]:
                raise InputError(path, f"{name}: measured on {own['gpu_name']}, but the file is for "
                                       f"{provenance['gpu_name']}")
            merged[name] = own
    withheld = raw.get("withheld") or {}
    if not isinstance(withheld, dict) or not all(isinstance(k, str) and k in MEASUREMENTS and isinstance(v, str) and v
                                                 for k, v in withheld.items()):
        raise InputError(path, "'withheld' must map measurement names to the reason each was not kept")
    return Measurements(path=path, provenance=provenance, values=values, merged_from=merged,
                        withheld={k: v for k, v in withheld.items() if k not in values})


def user_calibrations() -> dict[str, Measurements]:
    """The calibrations the user ran (``coach calibrate``), the newest per GPU id: the JSON files in
    ``coach.paths.calibration_dir()``. A GPU the tables lack is keyed by its approximate entry's id."""
    folder = calibration_dir()
    files = sorted(folder.glob("*.json")) if folder.is_dir() else []
    return _read_user_calibrations(tuple((p, p.stat().st_mtime_ns) for p in files))


@functools.cache
def _read_user_calibrations(files: tuple[tuple[Path, int], ...]) -> dict[str, Measurements]:
    out: dict[str, Measurements] = {}
    for path, _ in files:
        m = read_measurements(path)
        known = _match(m.gpu_name, catalog().gpus)
        key = known.id if known is not None else device_id(m.gpu_name)
        if key not in out or m.date > out[key].date:
            out[key] = m
    return out


def measured(gpu: GPU) -> Measurements | None:
    """The calibration this GPU's ceilings use: the user's own (``coach calibrate``) if there is one,
    else the newest stored in hardware/measured/."""
    return user_calibrations().get(gpu.id) or catalog().measured.get(gpu.id)


# --------------------------------------------------------------------------------------------
# Ceilings
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Ceiling:
    """One roof: the value in use, the datasheet and measured values behind it, and where from."""

    name: str
    unit: str  # "byte/s", "flop/s", "op/s"
    value: float | None
    origin: Origin
    source: str  # the full reference: document and place, formula, or calibration and measurement
    datasheet: float | None
    measured: float | None = None
    ref: str = ""  # short reference: a document id in sources.toml or a calibration file name


@dataclass(frozen=True)
class Ceilings:
    """The rates a roofline and a prediction use for one GPU."""

    gpu: GPU
    bandwidth: Mapping[str, Ceiling]  # "dram", "l2", "shared"
    compute: Mapping[str, Ceiling]  # PRECISION_FIELDS keys
    launch: Mapping[str, Ceiling]  # "stream", "graph" (seconds per launch), measured only
    measurements: Measurements | None = None

    def rate(self, precision: str) -> float | None:
        return self.compute[precision].value

    def ridge_point(self, precision: str, level: str = "dram") -> float | None:
        """Arithmetic intensity (FLOP per byte of ``level``) where ``precision``'s compute roof meets
        the ``level`` bandwidth roof: kernels below it are bound by bandwidth, above it by compute."""
        flops, bw = self.compute[precision].value, self.bandwidth[level].value
        return None if flops is None or not bw else flops / bw

    def frame(self) -> pl.DataFrame:
        """One row per ceiling: kind, name, value in use, unit, origin, datasheet, measured, ref, source."""
        rows = [{"kind": kind, "name": c.name, "value": c.value, "unit": c.unit, "origin": c.origin,
                 "datasheet": c.datasheet, "measured": c.measured, "ref": c.ref, "source": c.source}
                for kind, group in (("bandwidth", self.bandwidth), ("compute", self.compute), ("launch", self.launch))
                for c in group.values()]
        return pl.DataFrame(rows, schema={"kind": pl.Utf8, "name": pl.Utf8, "value": pl.Float64, "unit": pl.Utf8,
                                          "origin": pl.Utf8, "datasheet": pl.Float64, "measured": pl.Float64,
                                          "ref": pl.Utf8, "source": pl.Utf8})


_calibration_of = measured  # ``ceilings`` takes a parameter of the same name


def measured_ceiling(gpu: GPU, m: Measurements, key: str) -> tuple[float, str]:
    """The measured ceiling of one calibration measurement ``key`` of ``m``: its value, raised to the
    best rate recorded on ``gpu`` when ``m`` is the shipped calibration (the shipped calibration goes
    with the shipped recordings; a user's own calibration stands alone), and a note saying so ("" when
    the calibration stands). Every page that prints a measured ceiling calls this."""
    if m is catalog().measured.get(gpu.id):
        value, raised = best_rates.ceiling_for(gpu.id, key, m.values[key])
        return float(value), raised
    return m.values[key], ""


def ceilings(gpu: GPU | str, measured: bool | Measurements | str | Path = True) -> Ceilings:
    """The ceilings of ``gpu``: measured where a calibration exists (``measured=True`` takes the
    user's own calibration, else hardware/measured/; pass a ``Measurements`` or a calibration file to
    use that one), datasheet otherwise. ``measured=False`` gives datasheet numbers only."""
    gpu = get(gpu) if isinstance(gpu, str) else gpu
    if measured is True:
        m = _calibration_of(gpu)
    elif measured is False:
        m = None
    elif isinstance(measured, Measurements):
        m = measured
    else:
        m = read_measurements(measured)

    def roof(name: str, field_name: str, unit: str) -> Ceiling:
        s = gpu.source(field_name)
        sheet = gpu.value(field_name)
        keys = [k for k in MEASURED_FOR.get(name, ()) if m is not None and k in m.values]
        if keys and m is not None:
            # a measured ceiling is never below a rate recorded on the same GPU (coach.best_rates): the
            # shipped calibration goes with the shipped recordings; a user's own calibration stands alone
            raised_by = {k: measured_ceiling(gpu, m, k) for k in keys}
            best = max(keys, key=lambda k: raised_by[k][0] or 0.0)
            value, raised = raised_by[best]
            source = f"{m.describe()}: {best}" + (f"; raised to {raised}" if raised else "")
            if name == "dram" and m is catalog().measured.get(gpu.id):
                # the roof is the attainable DRAM bandwidth, whatever the mix: no kernel recorded on
                # the GPU moves DRAM bytes faster (coach.recorded_rates ANY), though neither the copy
                # nor the read ceiling may count it (those stay the floors' that name them)
                entry = best_rates.read(gpu.id)["rates"].get(DRAM_ROOF) or {}
                any_mix = entry.get("value")
                if isinstance(any_mix, (int, float)) and any_mix > value:
                    value = float(any_mix)
                    source = (f"{m.describe()}: {best}" + (f" ({raised})" if raised else "")
                              + "; the DRAM roof raised to the best DRAM rate of any read/write mix recorded on this GPU "
                              f"({entry.get('where', 'a recording')})")
            return Ceiling(name, unit, value, "measured", source, sheet, value, ref=m.path.name)
        return Ceiling(name, unit, sheet, s.origin, s.describe(), sheet, ref=s.source)

    bandwidth = {level: roof(level, f, "byte/s") for level, f in LEVEL_FIELDS.items()}
    compute = {p: roof(p, f, "op/s" if p == "int8" else "flop/s") for p, f in PRECISION_FIELDS.items()}
    launch = {}
    for name, key in (("stream", "launch_latency_s"), ("graph", "graph_launch_latency_s")):
        if m is not None and key in m.values:
            launch[name] = Ceiling(name, "s", m.values[key], "measured", f"{m.describe()}: {key}", None, m.values[key],
                                   ref=m.path.name)
    return Ceilings(gpu=gpu, bandwidth=bandwidth, compute=compute, launch=launch, measurements=m)
