"""Inlined-call line information of the CUDA binaries an Nsight Compute report embeds.

An Nsight Compute report keeps each profiled module's binary (a CUDA ELF, machine 190) beside its
counters, and ``ncu_report`` maps an instruction to one file and line (``IAction.source_info``).
When a device function is inlined, the binary's line table (``.debug_line``, written for
``-lineinfo``) holds several rows at the instruction's address: first the line of the caller, then
the callee's line, tied to the row it is inlined at by NVIDIA's extended opcode 0x90 (operands: the
1-based number of the row it is inlined at, and the offset of the function's name in
``.debug_str``; a later row carries the same context until the next 0x90). ``nvdisasm -gi`` prints
this chain ("line 37 inlined at line 54"); ``source_info`` answers with the first row at the
address, which for an inlined ``switch`` is the line of the call, not of the switch.

This module reads the chain itself: the ELF images in the report's bytes, each one's line
programs (DWARF 2 line-number programs, one sequence per function, the function named by the
relocation of the sequence's start address), and for each address of a function the chain of the
last row there, innermost first. ``ncu_source`` uses it only where it agrees with ``source_info``
on every instruction (``source_info``'s line is the first row at the address): a binary that does
not decode so is not used, and the lines stay as Nsight Compute gives them.
"""

from __future__ import annotations

import bisect
import mmap
import struct
from dataclasses import dataclass
from pathlib import Path

ELF_MAGIC = b"\x7fELF"
EM_CUDA = 190
#: NVIDIA's extended line-program opcode: the rows that follow are inlined at the given row.
DW_LNE_INLINED_CALL = 0x90
_SHT_SYMTAB, _SHT_RELA = 2, 4
_STT_FUNC = 2


@dataclass(frozen=True)
class Row:
    address: int  # bytes from the function's first instruction
    file: str  # the path as the binary names it (directory joined to the file name)
    line: int
    context: int  # 1-based number (in the function's rows) of the row this one is inlined at; 0: none


Chain = tuple[tuple[str, int], ...]  # (file, line), innermost first


def elf_images(data: bytes) -> list[bytes]:
    """The 64-bit little-endian CUDA ELF images inside ``data`` (a report's bytes), each cut to its size."""
    out = []
    start = data.find(ELF_MAGIC)
    while start >= 0:
        image = _elf_at(data, start)
        if image is not None:
            out.append(image)
        start = data.find(ELF_MAGIC, start + (len(image) if image else 4))
    return out


def _elf_at(data: bytes, start: int) -> bytes | None:
    head = data[start:start + 64]
    if len(head) < 64 or head[4] != 2 or head[5] != 1:  # ELFCLASS64, little-endian
        return None
    machine, = struct.unpack_from("<H", head, 0x12)
    phoff, shoff = struct.unpack_from("<QQ", head, 0x20)
    phentsize, phnum, shentsize, shnum = struct.unpack_from("<HHHH", head, 0x36)
    if machine != EM_CUDA or shentsize != 64 or not shnum:
        return None
    size = max(shoff + shnum * shentsize, phoff + phnum * phentsize)
    if start + size > len(data):
        return None
    return data[start:start + size]


@dataclass(frozen=True)
class _Section:
    name: str
    type: int
    data: bytes
    link: int
    info: int


def _sections(elf: bytes) -> list[_Section]:
    shoff, = struct.unpack_from("<Q", elf, 0x28)
    shnum, shstrndx = struct.unpack_from("<HH", elf, 0x3C)
    raw = [struct.unpack_from("<IIQQQQIIQQ", elf, shoff + i * 64) for i in range(shnum)]
    names = raw[shstrndx]
    strtab = elf[names[4]:names[4] + names[5]]
    out = []
    for name, typ, _flags, _addr, off, size, link, info, _align, _entsize in raw:
        end = strtab.find(b"\0", name)
        data = elf[off:off + size] if typ != 8 else b""  # SHT_NOBITS has no bytes in the file
        out.append(_Section(strtab[name:end].decode(errors="replace"), typ, data, link, info))
    return out


def _cstr(blob: bytes, at: int) -> str:
    return blob[at:blob.find(b"\0", at)].decode(errors="replace")


@dataclass(frozen=True)
class _Symbol:
    name: str
    is_function: bool
    section: int
    value: int
    size: int


def _symbols(sections: list[_Section]) -> list[_Symbol]:
    table = next((s for s in sections if s.type == _SHT_SYMTAB), None)
    if table is None:
        return []
    names = sections[table.link].data
    out = []
    for at in range(0, len(table.data) - 23, 24):
        name, info, _other, shndx, value, size = struct.unpack_from("<IBBHQQ", table.data, at)
        out.append(_Symbol(_cstr(names, name), info & 0xF == _STT_FUNC, shndx, value, size))
    return out


def _uleb(b: bytes, i: int, signed: bool = False) -> tuple[int, int]:
    """The LEB128 number at ``b[i]`` (unsigned, or signed with ``signed``) and the index after it."""
    value = shift = 0
    while True:
        byte = b[i]
        i += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if byte < 0x80:
            return (value - (1 << shift) if signed and byte & 0x40 else value), i


def _sleb(b: bytes, i: int) -> tuple[int, int]:
    return _uleb(b, i, signed=True)


def function_rows(elf: bytes) -> dict[str, list[Row]]:
    """The line-table rows of each function of a CUDA ELF (by its symbol, the mangled name), in
    program order, addresses from the function's first instruction; empty where the binary has no
    line table (built without ``-lineinfo``). A kernel's rows cover its whole section, the
    subroutines it calls included (``$kernel$__internal_trig_reduction_slowpathd``, a
    ``__noinline__`` function: code after the kernel's own, in the same section)."""
    sections = _sections(elf)
    line_index = next((i for i, s in enumerate(sections) if s.name == ".debug_line"), None)
    if line_index is None:
        return {}
    symbols = _symbols(sections)
    relocated: dict[int, tuple[int, int]] = {}  # offset in .debug_line -> (section index, address in it)
    for s in sections:
        if s.type == _SHT_RELA and s.info == line_index:
            for at in range(0, len(s.data) - 23, 24):
                offset, info, addend = struct.unpack_from("<QQq", s.data, at)
                sym = symbols[info >> 32] if info >> 32 < len(symbols) else None
                if sym is not None:
                    relocated[offset] = (sym.section, sym.value + addend)
    functions = [s for s in symbols if s.is_function]
    by_section: dict[int, list[Row]] = {}  # rows by code section, addresses from the section's start
    b = sections[line_index].data
    unit = 0
    while unit + 4 <= len(b):
        length, = struct.unpack_from("<I", b, unit)
        if length in (0, 0xFFFFFFFF):  # padding, or 64-bit DWARF (not written for CUDA binaries)
            break
        for section, rows in _unit_rows(b, unit, unit + 4 + length, relocated, functions).items():
            by_section.setdefault(section, []).extend(rows)
        unit += 4 + length
    out: dict[str, list[Row]] = {}
    for f in functions:
        rows = by_section.get(f.section, [])
        if rows:
            out[f.name] = [Row(r.address - f.value, r.file, r.line, r.context) for r in rows] if f.value else rows
    return out


def _unit_rows(b: bytes, start: int, end: int, relocated: dict[int, tuple[int, int]],
               functions: list[_Symbol]) -> dict[int, list[Row]]:
    i = start + 4
    version, = struct.unpack_from("<H", b, i)
    i += 2
    if version > 4:  # DWARF 5 headers describe their tables by form: not written for CUDA binaries
        return {}
    header_length, = struct.unpack_from("<I", b, i)
    i += 4
    program = i + header_length
    min_inst = b[i]
    i += 2 if version < 4 else 3  # DWARF 4 adds maximum_operations_per_instruction
    line_base, = struct.unpack_from("<b", b, i)
    line_range, opcode_base = b[i + 1], b[i + 2]
    i += 3
    arg_counts = list(b[i:i + opcode_base - 1])
    i += opcode_base - 1
    dirs = [""]
    while b[i]:
        dirs.append(_cstr(b, i))
        i = b.index(0, i) + 1
    i += 1
    files = [""]
    while b[i]:
        name = _cstr(b, i)
        i = b.index(0, i) + 1
        d, i = _uleb(b, i)
        _, i = _uleb(b, i)
        _, i = _uleb(b, i)
        folder = dirs[d] if d < len(dirs) else ""
        files.append(name if name.startswith("/") or not folder else f"{folder.rstrip('/')}/{name}")
    out: dict[int, list[Row]] = {}
    i = program
    address, file, line, context = 0, 1, 1, 0
    # the code section a sequence covers, from its start address's relocation; without one, the
    # section of the binary's only function
    section: int | None = functions[0].section if len(functions) == 1 else None

    def emit() -> None:
        if section is not None and 0 < file < len(files):
            out.setdefault(section, []).append(Row(address, files[file], line, context))

    while i < end:
        op = b[i]
        i += 1
        if op >= opcode_base:
            adjusted = op - opcode_base
            address += (adjusted // line_range) * min_inst
            line += line_base + adjusted % line_range
            emit()
        elif op == 0:
            n, i = _uleb(b, i)
            sub, args, operand = b[i], b[i + 1:i + n], i + 1
            i += n
            if sub == 1:  # end_sequence
                address, file, line, context = 0, 1, 1, 0
            elif sub == 2:  # set_address: relocated against the section (or a function in it)
                address = int.from_bytes(args, "little")
                if operand in relocated:
                    section, at = relocated[operand]
                    address += at
            elif sub == DW_LNE_INLINED_CALL:
                context, _ = _uleb(args, 0)
        elif op == 1:  # copy
            emit()
        elif op == 2:
            v, i = _uleb(b, i)
            address += v * min_inst
        elif op == 3:
            v, i = _sleb(b, i)
            line += v
        elif op == 4:
            file, i = _uleb(b, i)
        elif op == 8:  # const_add_pc
            address += ((255 - opcode_base) // line_range) * min_inst
        elif op == 9:  # fixed_advance_pc
            v, = struct.unpack_from("<H", b, i)
            i += 2
            address += v
        else:  # set_column, negate_stmt, basic_block, prologue/epilogue, isa, and unknown ones
            for _ in range(arg_counts[op - 1] if op - 1 < len(arg_counts) else 0):
                _, i = _uleb(b, i)
    return out


@dataclass(frozen=True)
class LineMap:
    """The rows of one function, asked by instruction address."""

    rows: list[Row]

    def __post_init__(self) -> None:
        last: dict[int, int] = {}
        first: dict[int, int] = {}
        for n, r in enumerate(self.rows):
            last[r.address] = n
            first.setdefault(r.address, n)
        object.__setattr__(self, "_addresses", sorted(last))
        object.__setattr__(self, "_last", last)
        object.__setattr__(self, "_first", first)

    def _at(self, pc: int) -> int | None:
        addresses = self._addresses  # type: ignore[attr-defined]
        k = bisect.bisect_right(addresses, pc) - 1
        return addresses[k] if k >= 0 else None

    def chain(self, pc: int) -> Chain:
        """The instruction's (file, line), innermost first, then each line it is inlined at."""
        at = self._at(pc)
        if at is None:
            return ()
        out, n, seen = [], self._last[at], set()  # type: ignore[attr-defined]
        while n is not None and n not in seen and 0 <= n < len(self.rows):
            seen.add(n)
            r = self.rows[n]
            out.append((r.file, r.line))
            n = r.context - 1 if r.context else None
        return tuple(out)

    def first(self, pc: int) -> tuple[str, int] | None:
        """The first row at the instruction's address: the line ``ncu_report``'s ``source_info`` gives."""
        at = self._at(pc)
        if at is None:
            return None
        r = self.rows[self._first[at]]  # type: ignore[attr-defined]
        return (r.file, r.line)


def line_maps(data: bytes) -> dict[str, list[LineMap]]:
    """Every function with line information in the binaries of ``data``, by mangled name; a name
    may have several maps (one module loaded twice, or two modules with a function of one name)."""
    out: dict[str, list[LineMap]] = {}
    for image in elf_images(data):
        try:
            rows = function_rows(image)
        except (IndexError, struct.error, ValueError):  # a damaged or unforeseen image: skipped
            continue
        for name, function_rows_ in rows.items():
            out.setdefault(name, []).append(LineMap(function_rows_))
    return out


def report_line_maps(path: Path) -> dict[str, list[LineMap]]:
    """``line_maps`` of a report file (mapped, not read into memory); empty where it cannot be read."""
    try:
        with path.open("rb") as fh, mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as data:
            return line_maps(data)  # type: ignore[arg-type]  # find and slicing work on a mapping as on bytes
    except (OSError, ValueError):  # unreadable, or empty (an empty file cannot be mapped)
        return {}
