"""WGSL source loading with a small, documented preprocessor.

Kernels live in ``wgsl/<family>/<name>.wgsl``. Before compilation a source passes through:

``#include "common/lookback.wgsl"``
    Replaced by that file (paths relative to the ``wgsl/`` root), once per kernel: a second
    include of the same file is dropped, so shared snippets can include what they need.
``#if NAME`` / ``#elif NAME`` / ``#else`` / ``#endif``
    Keep a block when define ``NAME`` is truthy. ``#if !NAME`` negates. Blocks nest.
``{{NAME}}``
    Replaced by ``str(defines[NAME])``; an unknown name is an error, never left in the source.
``#unroll I COUNT`` / ``#endunroll``
    Repeats the block COUNT times (a number or a define's name) with ``{{I}}`` = 0, 1, ...; so
    that private-array indices become constants and the driver keeps the arrays in registers.
    Blocks nest.

Specialisation that WGSL can express itself (numbers used in expressions) should prefer
``override`` constants; the template step is for types, operators and array sizes.
"""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path

_HERE = Path(__file__).resolve().parent


def wgsl_root() -> Path:
    """Directory holding the WGSL sources: inside the installed package, or the checkout's."""
    for candidate in (_HERE / "wgsl", _HERE.parent / "wgsl"):
        if (candidate / "common").is_dir():
            return candidate
    raise FileNotFoundError("pywgpuprims: WGSL sources not found next to the package")


@cache
def _read(relpath: str) -> str:
    return (wgsl_root() / relpath).read_text()


_INCLUDE = re.compile(r'^\s*#include\s+"([^"]+)"\s*$')
_DIRECTIVE = re.compile(r"^\s*#(if|elif|else|endif)\b\s*(!?)\s*(\w*)\s*$")
_UNROLL = re.compile(r"^\s*#unroll\s+(\w+)\s+(\w+)\s*$")
_ENDUNROLL = re.compile(r"^\s*#endunroll\s*$")
_PLACEHOLDER = re.compile(r"\{\{\s*(\w+)\s*\}\}")


def preprocess(relpath: str, defines: dict | None = None) -> str:
    """Return the WGSL of ``relpath`` with includes, conditionals and placeholders resolved."""
    defines = dict(defines or {})
    seen: set[str] = set()
    out: list[str] = []

    def emit(path: str) -> None:
        if path in seen:
            return
        seen.add(path)
        loop_vars: list[str] = []
        # Stack of (this branch active, some branch already taken, parent active).
        stack: list[tuple[bool, bool, bool]] = []
        active = True
        for lineno, line in enumerate(_read(path).splitlines(), 1):
            m = _DIRECTIVE.match(line)
            if m:
                kind, neg, name = m.groups()
                if kind in ("if", "elif") and not name:
                    raise SyntaxError(f"{path}:{lineno}: #{kind} needs a define name")
                value = bool(defines.get(name)) != bool(neg) if name else False
                if kind == "if":
                    stack.append((active and value, value, active))
                elif not stack:
                    raise SyntaxError(f"{path}:{lineno}: #{kind} without #if")
                elif kind == "elif":
                    _, taken, parent = stack[-1]
                    stack[-1] = (parent and value and not taken, taken or value, parent)
                elif kind == "else":
                    _, taken, parent = stack[-1]
                    stack[-1] = (parent and not taken, True, parent)
                else:
                    stack.pop()
                active = stack[-1][0] if stack else True
                continue
            if not active:
                continue
            inc = _INCLUDE.match(line)
            if inc:
                emit(inc.group(1))
                continue
            um = _UNROLL.match(line)
            if um:
                loop_vars.append(um.group(1))
            elif _ENDUNROLL.match(line) and loop_vars:
                loop_vars.pop()
            out.append(_substitute(line, defines, path, lineno, frozenset(loop_vars)))
        if stack:
            raise SyntaxError(f"{path}: unterminated #if")

    emit(relpath)
    return "\n".join(_expand_unroll(out, defines, relpath)) + "\n"


def _expand_unroll(lines: list[str], defines: dict, path: str) -> list[str]:
    result: list[str] = []
    i = 0
    while i < len(lines):
        m = _UNROLL.match(lines[i])
        if not m:
            if _ENDUNROLL.match(lines[i]):
                raise SyntaxError(f"{path}: #endunroll without #unroll")
            result.append(lines[i])
            i += 1
            continue
        name, count = m.groups()
        count = int(defines[count]) if count in defines else int(count)
        depth, j = 1, i + 1
        while j < len(lines) and depth:
            depth += bool(_UNROLL.match(lines[j])) - bool(_ENDUNROLL.match(lines[j]))
            j += 1
        if depth:
            raise SyntaxError(f"{path}: unterminated #unroll {name}")
        body = lines[i + 1:j - 1]
        pat = re.compile(r"\{\{\s*" + name + r"\s*\}\}")
        for k in range(count):
            result.extend(_expand_unroll([pat.sub(str(k), line) for line in body], defines, path))
        i = j
    return result


def _substitute(line: str, defines: dict, path: str, lineno: int, loop_vars: frozenset = frozenset()) -> str:
    def repl(m: re.Match) -> str:
        name = m.group(1)
        if name in loop_vars:
            return m.group(0)
        if name not in defines:
            raise KeyError(f"{path}:{lineno}: template value {{{{{name}}}}} was not given")
        return str(defines[name])

    return _PLACEHOLDER.sub(repl, line)


_BINDING = re.compile(
    r"@group\(\s*0\s*\)\s*@binding\(\s*(\d+)\s*\)\s*var<\s*(storage|uniform)\s*(?:,\s*(read_write|read))?\s*>\s*(\w+)"
)
_PARAMS = re.compile(r"struct\s+Params\s*\{([^}]*)\}", re.S)
_FIELD = re.compile(r"(\w+)\s*:\s*(u32|i32|f32)")


def parse_bindings(source: str) -> list[tuple[int, str, str]]:
    """``(binding, kind, name)`` for each group-0 binding; kind is uniform, read or read_write."""
    result = []
    for num, space, access, name in _BINDING.findall(source):
        kind = "uniform" if space == "uniform" else (access or "read")
        result.append((int(num), kind, name))
    return sorted(result)


def parse_params(source: str) -> list[tuple[str, str]]:
    """Fields of ``struct Params`` (scalars only) in declaration order."""
    m = _PARAMS.search(source)
    if not m:
        return []
    fields = _FIELD.findall(m.group(1))
    body = re.sub(r"//[^\n]*", "", m.group(1))
    if len(fields) != body.count(":"):
        raise SyntaxError("struct Params may hold only u32, i32 and f32 fields")
    return fields
