"""Rewrites clang 14's pre-standard relaxed-SIMD instructions into the standard ones the kernels mean.

Debian's Emscripten 3.1.6 (clang 14) compiles `__builtin_wasm_fma_f32x4(a, b, c)` to the
prototype opcode bytes `fd af 01`, which no engine accepts any more. The standard
`f32x4.relaxed_madd` (a * b + c, opcode 0x105) is `fd 85 02`: the same length, so the instruction
can be replaced in place without moving anything else in the file.

clang 14 has no builtin at all for the 8-bit dot product (cpp/src/kernels/q8.cpp): the kernel writes
`__builtin_wasm_relaxed_min_f64x2(w, x)`, whose pre-standard bytes `fd d4 01` become the standard
`i16x8.relaxed_dot_i8x16_i7x16_s` (opcode 0x112, `fd 92 02`; wabt 1.0.32 prints it as
`i16x8.dot_i8x16_i7x16_s`). Both take two v128 and give one, in the same operand order, so the rest
of the code is unchanged. Nothing else in the project uses relaxed_min_f64x2.

The instructions are located with `wasm-objdump -d` (wabt), never by searching bytes (the same
bytes can occur inside constants or data): the disassembler stops decoding a function at the first
opcode it does not know, so the offset right after the last instruction it printed is where the
next unknown instruction starts. That offset must hold `fd af 01`; it is rewritten, and the
disassembly is repeated until every function decodes to its final `end`. The result is checked
with `wasm-validate --enable-relaxed-simd --enable-threads` (threads: a shared-memory module, the
threaded build, validates as one; a single-threaded module is unaffected).

wasm-objdump stops the whole disassembly at the first unknown opcode, so that loop disassembles
the file once per multiply-add (144 in the test suite's binary: six minutes). So first a fast path:
every `fd af 01` inside a function body (the code section's bodies, found from their sizes, not by
decoding) is rewritten, and one disassembly must then decode every function to its end with exactly
as many standard instructions of each kind as were rewritten. A match inside an immediate (a constant) would be
rewritten without being an instruction, so the counts would differ: the file is then restored and
the exact loop runs instead.

Usage: /usr/bin/python3 scripts/codegen/wasm_relaxed_opcodes.py FILE.wasm   (rewrites in place; prints a count)
"""

import re
import subprocess
import sys

# pre-standard bytes -> (standard bytes, the name wasm-objdump prints for the standard instruction)
REWRITES = {
    bytes([0xFD, 0xAF, 0x01]): (bytes([0xFD, 0x85, 0x02]), "f32x4.relaxed_madd"),
    bytes([0xFD, 0xD4, 0x01]): (bytes([0xFD, 0x92, 0x02]), "i16x8.dot_i8x16_i7x16_s"),
}
NAMES = {name for _, name in REWRITES.values()}
LINE = re.compile(r"^ ([0-9a-f]+): ((?:[0-9a-f]{2} )+)\s*\|(\s*)(.*)$")
FUNC = re.compile(r"^([0-9a-f]+) func\[(\d+)\]")


def truncated_offsets(path, madds=None):
    """Offsets where a function's disassembly stops before its final `end`. With `madds` (a list),
    also appends the name of each decoded standard instruction this script writes."""
    # wasm-objdump exits with 1 when it meets an opcode it does not know: that is expected here
    r = subprocess.run(["wasm-objdump", "-d", path], capture_output=True, text=True)
    out = r.stdout
    if "Code Disassembly" not in out:
        sys.exit(f"wasm_relaxed_opcodes.py: wasm-objdump -d {path} failed: {r.stderr.strip()}")
    offsets = []
    last = None  # (offset, length, indent, text) of the current function's last decoded instruction
    in_func = False

    def close():
        if in_func and last is not None:
            off, length, indent, text = last
            if not (text == "end" and indent == " "):  # the final `end` has no nesting indent
                offsets.append(off + length)

    for line in out.splitlines():
        if FUNC.match(line):
            close()
            in_func, last = True, None
            continue
        m = LINE.match(line)
        if m and in_func:
            last = (int(m.group(1), 16), len(m.group(2).split()), m.group(3), m.group(4).strip())
            if madds is not None and last[3] in NAMES:
                madds.append(last[3])
    close()
    return offsets


def leb(data, at):
    """An unsigned LEB128 at `at`: (value, offset after it)."""
    value, shift = 0, 0
    while True:
        b = data[at]
        at += 1
        value |= (b & 0x7F) << shift
        shift += 7
        if b < 0x80:
            return value, at


def function_bodies(data):
    """(start, end) of every function body in the code section (id 10), from the sizes the binary
    format puts before each: nothing is decoded."""
    at = 8  # magic and version
    while at < len(data):
        section, at = data[at], at + 1
        size, at = leb(data, at)
        if section == 10:
            count, p = leb(data, at)
            bodies = []
            for _ in range(count):
                n, p = leb(data, p)
                bodies.append((p, p + n))
                p += n
            return bodies
        at += size
    return []


def fast_path(path, data):
    """Rewrites with one disassembly to check (see the module's comment); the count, or None."""
    trial = bytearray(data)
    rewritten = {}
    for start, end in function_bodies(trial):
        for old, (new, name) in REWRITES.items():
            at = trial.find(old, start, end)
            while at >= 0:
                trial[at : at + 3] = new
                rewritten[name] = rewritten.get(name, 0) + 1
                at = trial.find(old, at + 3, end)
    if not rewritten:
        return None
    open(path, "wb").write(trial)
    decoded = {}
    names = []
    stops = truncated_offsets(path, names)
    for name in names:
        decoded[name] = decoded.get(name, 0) + 1
    if stops or decoded != rewritten:
        open(path, "wb").write(data)  # not what was expected: back to the original for the exact loop
        return None
    data[:] = trial
    return rewritten


def report(path, rewritten):
    counts = ", ".join(f"{n} {name}" for name, n in sorted(rewritten.items()))
    print(f"{path}: rewritten to the standard opcodes: {counts}; validates")


def main():
    path = sys.argv[1]
    data = bytearray(open(path, "rb").read())
    rewritten = fast_path(path, data)
    if rewritten is not None:
        subprocess.run(["wasm-validate", "--enable-relaxed-simd", "--enable-threads", path], check=True)
        report(path, rewritten)
        return
    rewritten = {}
    while True:
        offsets = truncated_offsets(path)
        if not offsets:
            break
        for off in offsets:
            old = bytes(data[off : off + 3])
            if old not in REWRITES:
                sys.exit(
                    f"wasm_relaxed_opcodes.py: {path}: disassembly stops at 0x{off:x} on bytes "
                    f"{old.hex(' ')}, none of the pre-standard instructions this script rewrites"
                )
            new, name = REWRITES[old]
            data[off : off + 3] = new
            rewritten[name] = rewritten.get(name, 0) + 1
        open(path, "wb").write(data)
    subprocess.run(["wasm-validate", "--enable-relaxed-simd", "--enable-threads", path], check=True)
    report(path, rewritten)


if __name__ == "__main__":
    main()
