"""What compute-sanitizer's text and XML outputs share: the kinds of record it prints, how a source
location is written, and how a kernel's name is shortened.

The wording comes from NVIDIA's Compute Sanitizer documentation (2025 releases: "Understanding
Memcheck Errors", "Racecheck Analysis/Hazard Reports", "Understanding Synccheck Reports", the
initcheck and leak-checking examples) and from reports of versions back to CUDA-MEMCHECK printed in
public issue threads. The spellings differ between versions, and each pattern below accepts the
ones seen:

    at buggy::transpose_tile(const float *, float *, int)+0x1b0 in transpose.cu:31      2023 on
    at unaligned_kernel():0x160 in memcheck_demo.cu:6                                   documentation
    at 0x00000170 in ./race.cu:4:test(int*, int*)                                       CUDA-MEMCHECK
    Access to 0xd67bffffc is out of bounds                                               2024 on
    Address 0x7f6510c00001 is misaligned                                                 earlier
    and is 1 bytes after the nearest allocation at 0xd67800000 of size 4,194,300 bytes  (commas: 2025.3)

Nothing here needs polars: the XML reader and the text reader both build their rows with it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

#: Which tool prints each record kind (API errors and tool problems come from any tool).
KIND_TOOL = {
    "memory-access": "memcheck",
    "hardware-exception": "memcheck",
    "leak": "memcheck",
    "device-malloc": "memcheck",
    "shared-race": "racecheck",
    "shared-hazard": "racecheck",
    "uninitialized-read": "initcheck",
    "uninitialized-copy": "initcheck",
    "barrier": "synccheck",
}
TOOLS = ("memcheck", "racecheck", "initcheck", "synccheck")

_INT = r"\d[\d,]*"
_HEX = r"0x[0-9a-fA-F]+"
_TRIPLE = r"\(\s*(\d+)\s*,\s*(\d+)\s*,\s*(\d+)\s*\)"


def number(text: str | None) -> int | None:
    """'4,194,300' -> 4194300 (2025.3 prints thousands separators, 2025.4 does not)."""
    if text is None:
        return None
    digits = text.replace(",", "").strip()
    return int(digits) if digits.isdigit() else None


def hex_number(text: str | None) -> int | None:
    if not text:
        return None
    try:
        return int(text, 16)
    except ValueError:
        return None


def triple(text: str) -> tuple[int, int, int] | None:
    m = re.search(_TRIPLE, text)
    return (int(m.group(1)), int(m.group(2)), int(m.group(3))) if m else None


# --------------------------------------------------------------------------------------------
# The first line of a record: what kind of record it is
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Headline:
    kind: str
    severity: str
    fields: dict


_SEVERITY_WORDS = {"error": "error", "warning": "warning", "warn": "warning", "info": "info"}
_SPACE = r"(?:__(?P<space>global|shared|local|generic|const|constant)__ )?"

_HEADLINES: list[tuple[str, str, re.Pattern[str]]] = [
    # memcheck: a precise access error (and racecheck's cluster "Potential invalid" accesses)
    ("memory-access", "error", re.compile(
        rf"^(?P<potential>Potential )?[Ii]nvalid {_SPACE}(?P<access>read|write|atomic(?: \w+)?) "
        rf"of size (?P<size>{_INT})(?: bytes?)?\.?$")),
    # initcheck
    ("uninitialized-read", "error", re.compile(
        rf"^Uninitiali[sz]ed {_SPACE}memory (?P<access>read) of size (?P<size>{_INT})(?: bytes?)?\.?$")),
    ("uninitialized-copy", "error", re.compile(
        rf"^Host API memory access error at host access to (?P<address>{_HEX}) of size (?P<size>{_INT})"
        rf"(?: bytes?)?\.?$")),
    # synccheck
    ("barrier", "error", re.compile(r"^Barrier error detected\.?\s*(?P<problem>.*?)\.?\s*$")),
    ("barrier", "error", re.compile(r"^Warpgroup MMA sequence error detected\.?\s*(?P<problem>.*?)\.?\s*$")),
    # racecheck: analysis reports (the default) and hazard reports (--racecheck-report hazard)
    ("shared-race", "", re.compile(
        r"^(?P<severity>Error|Warning|Info|ERROR|WARNING|WARN|INFO): Race reported between "
        r"(?P<access>Read|Write) access at\s*(?P<location>.*)$")),
    ("shared-hazard", "", re.compile(
        r"^(?P<severity>Error|Warning|Info|ERROR|WARNING|WARN|INFO): (?:\((?P<note>[^)]*)\) )?Potential "
        rf"(?P<hazard>RAW|WAR|WAW) hazard detected at {_SPACE}(?P<address>{_HEX}) in block "
        rf"(?P<block>{_TRIPLE})\s*:?$")),
    # memcheck: hardware exceptions, which the tool cannot always tie to one thread
    ("hardware-exception", "error", re.compile(
        r"^(?P<problem>(?:Warp |Lane |Device )?(?:Illegal Address|Misaligned Address|Out-of-range Address|"
        r"Out-of-range Shared or Local Address|Invalid Address Space|Illegal Instruction|Invalid PC|"
        r"Misaligned PC|Hardware Stack Overflow|User Stack Overflow|MMU Fault|Assert))\.?$")),
    ("device-malloc", "error", re.compile(r"^Malloc/Free error encountered\s*:\s*(?P<problem>.+?)\.?$")),
    ("leak", "error", re.compile(
        rf"^Leaked (?P<leaked>{_INT}) bytes at (?P<address>{_HEX})(?P<heap> on the device heap)?\.?$")),
    # any tool: a CUDA API call that returned an error
    ("api-error", "error", re.compile(
        rf"^Program hit (?P<error>.+?) \(error (?P<code>\d+)\)(?: due to \"?(?P<message>.*?)\"?)? on CUDA API "
        r"call to (?P<call>[\w:]+)\.?\s*$")),
    ("api-error", "error", re.compile(
        r"^Program hit CUDA API error (?P<code>\d+) on CUDA API call to (?P<call>[\w:]+)\.?\s*$")),
    ("api-error", "error", re.compile(r"^CUDA API Error:\s*(?P<message>.+?)\.?$")),
    # the tool itself
    ("sanitizer-error", "error", re.compile(
        r"^(?:Internal Sanitizer Error|Error): (?P<problem>(?!Race reported).+)$")),
    ("sanitizer-error", "warning", re.compile(r"^Warning: (?P<problem>(?!Race reported).+)$")),
]


def classify(line: str) -> Headline | None:
    """The record a line starts, or None if it continues one (or is not a record at all)."""
    for kind, severity, pattern in _HEADLINES:
        m = pattern.match(line)
        if m:
            fields = {k: v for k, v in m.groupdict().items() if v is not None}
            sev = _SEVERITY_WORDS.get(fields.pop("severity", "").lower(), severity or "error")
            if fields.get("potential") and kind == "memory-access":
                sev = "warning"  # racecheck's cluster accesses: a block that might have exited
            return Headline(kind, sev, fields)
    return None


# --------------------------------------------------------------------------------------------
# Source locations and names
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Location:
    function: str | None
    pc_offset: int | None
    file: str | None
    line: int | None
    hazards: int | None = None

    @property
    def kernel(self) -> str | None:
        return qualified_name(self.function) if self.function else None


_HAZARDS = re.compile(rf"\s*\[(?P<n>{_INT}) hazards?\]\s*$")
_FILE_LINE = re.compile(r"^(?P<file>.+?):(?P<line>\d+)(?::(?P<function>.+))?$")
_PC_FIRST = re.compile(rf"^(?P<pc>{_HEX}) in (?P<rest>.+)$")  # CUDA-MEMCHECK: "0x170 in ./race.cu:4:test(int*)"
_FUNC_PC = re.compile(rf"^(?P<function>.*?)\s*[+:](?P<pc>{_HEX})$")  # "f(int)+0x1b0", "f():0x160"


def location(text: str) -> Location:
    """Read 'FUNC+0xOFF in FILE:LINE [N hazards]' and the older spellings (module docstring)."""
    t = text.strip()
    hazards = None
    m = _HAZARDS.search(t)
    if m:
        hazards = number(m.group("n"))
        t = t[: m.start()].rstrip()
    m = _PC_FIRST.match(t)
    if m:
        rest = m.group("rest").strip()
        fl = _FILE_LINE.match(rest)
        if fl and fl.group("function"):
            return Location(fl.group("function").strip(), hex_number(m.group("pc")), fl.group("file"),
                            int(fl.group("line")), hazards)
        if fl and "(" not in fl.group("file"):
            return Location(None, hex_number(m.group("pc")), fl.group("file"), int(fl.group("line")), hazards)
        return Location(rest or None, hex_number(m.group("pc")), None, None, hazards)
    file = line = None
    head = t
    if " in " in t:
        before, after = t.rsplit(" in ", 1)
        fl = _FILE_LINE.match(after.strip())
        if fl and not fl.group("function"):
            head, file, line = before.strip(), fl.group("file"), int(fl.group("line"))
    fp = _FUNC_PC.match(head)
    if fp:
        function = fp.group("function").strip()
        return Location(function or None, hex_number(fp.group("pc")), file, line, hazards)
    return Location(head or None, None, file, line, hazards)


def _strip_balanced_suffix(text: str, open_: str, close: str) -> str:
    """Remove one trailing balanced group ('(...)' or '<...>') and what follows it at depth 0."""
    depth = 0
    for i in range(len(text) - 1, -1, -1):
        c = text[i]
        if c == close:
            depth += 1
        elif c == open_:
            depth -= 1
            if depth == 0:
                return text[:i].rstrip()
    return text


def qualified_name(function: str | None) -> str | None:
    """'void buggy::transpose_tile<(bool)0>(const float *, float *, int)' -> 'buggy::transpose_tile'.

    Drops the "[clone ...]" prefix of outlined code, the argument list, const qualifiers, the
    template arguments and the return type; keeps the namespaces.
    """
    if not function:
        return None
    s = function.strip()
    s = re.sub(r"^\[clone [^\]]*\]\s*", "", s)
    s = re.sub(r"\s+const$", "", s)
    if s.endswith(")"):
        s = _strip_balanced_suffix(s, "(", ")")
    if s.endswith(">"):
        s = _strip_balanced_suffix(s, "<", ">")
    # the return type: the last space outside any brackets
    depth = 0
    cut = -1
    for i, c in enumerate(s):
        if c in "<([":
            depth += 1
        elif c in ">)]":
            depth -= 1
        elif c == " " and depth == 0:
            cut = i
    s = s[cut + 1:] if cut >= 0 else s
    return s or None


def short_name(function: str | None) -> str | None:
    """The last component of a qualified name: 'buggy::transpose_tile' -> 'transpose_tile'."""
    q = qualified_name(function)
    return q.rsplit("::", 1)[-1] if q else None


#: Source files that are CUDA's own (a __syncwarp in sm_30_intrinsics.hpp): a record's location is
#: the first frame outside them.
_CUDA_HEADER = re.compile(r"(^|/)(sm_\d+\w*|cuda\w*|device_\w+|cooperative_groups\w*|crt/\w+|cub/.+|thrust/.+)"
                          r"\.(h|hpp|cuh)$")


def is_user_file(path: str | None) -> bool:
    if not path:
        return False
    return not (_CUDA_HEADER.search(path) or "/cuda/include/" in path or "/targets/" in path and "/include/" in path)


# --------------------------------------------------------------------------------------------
# Host frames
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class HostFrame:
    function: str | None
    module: str | None
    file: str | None
    line: int | None
    pc: int | None


_FRAME_PC = re.compile(rf"^(?P<body>.*?)\s*\[(?P<pc>{_HEX})\](?:\s+in\s+(?P<module>.+))?$")
_MODULE_FIRST = re.compile(r"^(?P<module>[./]\S+)(?:\s+\((?P<function>.+?)(?:\s*\+\s*0x[0-9a-fA-F]+)?\))?$")


def host_frame(text: str) -> HostFrame:
    """'main [0xabeb] in app', '[0x2dae6f] in libcuda.so.1', 'main in /src/app.cu:40 [0x9a9e] in app',
    '/lib64/libcuda.so.1 (cuLaunchKernel + 0x346) [0x297db6]', 'ParaFROST::simplify() [0x41ffd]'."""
    t = text.strip()
    module = pc = None
    m = _FRAME_PC.match(t)
    if m:
        t, pc, module = m.group("body").strip(), hex_number(m.group("pc")), (m.group("module") or "").strip() or None
    file = line = None
    mm = _MODULE_FIRST.match(t)
    if mm and (module is None):
        return HostFrame(mm.group("function"), mm.group("module"), None, None, pc)
    if " in " in t:
        before, after = t.rsplit(" in ", 1)
        fl = _FILE_LINE.match(after.strip())
        if fl and not fl.group("function"):
            t, file, line = before.strip(), fl.group("file"), int(fl.group("line"))
    return HostFrame(t or None, module, file, line, pc)


_RUNTIME_FUNCTION = re.compile(r"^(?:cuda[A-Z]\w*|cu[A-Z]\w*|libcudart_static\w*|__cudart\w*|_start|"
                               r"__libc_start_main|__libc_start_call_main|__device_stub_\w*)$")
_RUNTIME_MODULE = re.compile(r"(^|/)(libcuda\.so|libcudart\.so|libc\.so|ld-linux)")


def is_user_frame(frame: HostFrame) -> bool:
    """A frame of the application itself, not of the CUDA libraries or the C start-up code."""
    if frame.module and _RUNTIME_MODULE.search(frame.module):
        return False
    name = short_name(frame.function) if frame.function else None
    return bool(name) and not _RUNTIME_FUNCTION.match(name)
