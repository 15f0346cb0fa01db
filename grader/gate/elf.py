"""Just enough of ELF64 to inspect a relocatable object: sections, symbols, relocations.

The gate reads the student's objects itself rather than parsing readelf's
human-readable output. It also pulls the device code (cubin, an ELF of its
own) out of nvcc's fat binary in the `.nv_fatbin` section.
"""
from __future__ import annotations

import struct
from dataclasses import dataclass
from pathlib import Path

SHN_UNDEF = 0
SHT_SYMTAB, SHT_RELA = 2, 4
STB_LOCAL = 0
STT_SECTION, STT_FUNC, STT_GNU_IFUNC = 3, 2, 10
SYMBOL_TYPES = {0: "NOTYPE", 1: "OBJECT", 2: "FUNC", 3: "SECTION", 4: "FILE", 5: "COMMON", 6: "TLS",
                10: "IFUNC"}
SHF_EXECINSTR = 0x4
# x86-64 relocation types relative to the patched field: PC32, PLT32, GOTPCREL, GOTPCRELX, REX_GOTPCRELX.
PC_RELATIVE = {2, 4, 9, 41, 42}
FATBIN_MAGIC = 0xBA55ED50
FATBIN_ELF = 2


class ElfError(ValueError):
    pass


@dataclass(frozen=True)
class Section:
    index: int
    name: str
    type: int
    flags: int
    offset: int
    size: int
    link: int
    info: int

    @property
    def executable(self) -> bool:
        return bool(self.flags & SHF_EXECINSTR)


@dataclass(frozen=True)
class Symbol:
    name: str
    value: int
    size: int
    type: int
    bind: int
    visibility: int
    section: int  # index; 0 = undefined

    @property
    def defined(self) -> bool:
        return self.section != SHN_UNDEF

    @property
    def local(self) -> bool:
        return self.bind == STB_LOCAL


@dataclass(frozen=True)
class Relocation:
    section: int  # the section the relocation patches
    offset: int
    type: int
    symbol: Symbol
    addend: int

    @property
    def points_at(self) -> int:
        """The offset in the symbol's section that the relocation means: PC-relative fields are
        computed from the end of the 4-byte field, so their addend is 4 short."""
        return self.addend + 4 if self.type in PC_RELATIVE else self.addend


class Elf:
    def __init__(self, data: bytes, what: str = "object"):
        self.data, self.what = data, what
        if data[:4] != b"\x7fELF" or len(data) < 64:
            raise ElfError(f"{what} is not an ELF file")
        if data[4] != 2 or data[5] != 1:
            raise ElfError(f"{what} is not a little-endian 64-bit ELF file")
        shoff, = struct.unpack_from("<Q", data, 0x28)
        shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3A)
        raw = [struct.unpack_from("<IIQQQQIIQQ", data, shoff + i * shentsize) for i in range(shnum)]
        names = raw[shstrndx]
        self.sections = [Section(i, self._string(names[4], r[0]), r[1], r[2], r[4], r[5], r[6], r[7])
                         for i, r in enumerate(raw)]
        self.symbols: list[Symbol] = []
        symtab = next((s for s in self.sections if s.type == SHT_SYMTAB), None)
        if symtab is not None:
            strtab = self.sections[symtab.link].offset
            for i in range(symtab.size // 24):
                name, info, other, shndx, value, size = struct.unpack_from("<IBBHQQ", data, symtab.offset + 24 * i)
                self.symbols.append(Symbol(self._string(strtab, name), value, size, info & 0xF, info >> 4,
                                           other & 0x3, shndx))

    def _string(self, table: int, index: int) -> str:
        end = self.data.index(b"\0", table + index)
        return self.data[table + index:end].decode("utf-8", "replace")

    def section_bytes(self, section: Section) -> bytes:
        return self.data[section.offset:section.offset + section.size]

    def relocations(self) -> list[Relocation]:
        out = []
        for sec in self.sections:
            if sec.type != SHT_RELA:
                continue
            for i in range(sec.size // 24):
                offset, info, addend = struct.unpack_from("<QQq", self.data, sec.offset + 24 * i)
                out.append(Relocation(sec.info, offset, info & 0xFFFFFFFF, self.symbols[info >> 32], addend))
        return out

    def function_at(self, section: int, offset: int) -> Symbol | None:
        """The function (or other sized symbol) covering offset in section, preferring named functions."""
        best = None
        for s in self.symbols:
            if s.section == section and s.type != STT_SECTION and s.name and \
                    s.value <= offset < s.value + max(s.size, 1):
                if best is None or (s.type == STT_FUNC and best.type != STT_FUNC):
                    best = s
        return best

    def target(self, rel: Relocation) -> str:
        """The name a relocation points at: the symbol, or for a section symbol the symbol at that offset."""
        sym = rel.symbol
        if sym.type != STT_SECTION:
            return sym.name
        hit = self.function_at(sym.section, rel.points_at)
        return hit.name if hit else f"{self.sections[sym.section].name}+{rel.points_at:#x}"


def device_images(obj: Elf) -> tuple[list[Elf], int]:
    """The device-code ELF images in an nvcc object's fat binary, and how many images could not be read
    (compressed). PTX entries are skipped: the GPU runs the SASS built for its architecture."""
    fatbin = next((s for s in obj.sections if s.name == ".nv_fatbin"), None)
    if fatbin is None:
        return [], 0
    data = obj.section_bytes(fatbin)
    images, unreadable, pos = [], 0, 0
    while pos + 16 <= len(data):
        magic, _version, header, size = struct.unpack_from("<IHHQ", data, pos)
        if magic != FATBIN_MAGIC:
            break
        entry, end = pos + header, pos + header + size
        while entry + 16 <= end:
            kind, _v, entry_header, payload = struct.unpack_from("<HHIQ", data, entry)
            body = data[entry + entry_header:entry + entry_header + payload]
            if kind == FATBIN_ELF:
                if body[:4] == b"\x7fELF":
                    images.append(Elf(body, "device code"))
                else:
                    unreadable += 1
            entry += entry_header + payload
        pos = end
        pos = (pos + 7) // 8 * 8  # fat binaries in one section are 8-byte aligned
    return images, unreadable


def read(path: Path) -> Elf:
    return Elf(Path(path).read_bytes(), Path(path).name)
