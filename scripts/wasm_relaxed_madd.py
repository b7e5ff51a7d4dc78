"""Rewrites clang 14's pre-standard relaxed-SIMD multiply-add into the standard f32x4.relaxed_madd.

Debian's Emscripten 3.1.6 (clang 14) compiles `__builtin_wasm_fma_f32x4(a, b, c)` to the
prototype opcode bytes `fd af 01`, which no engine accepts any more. The standard
`f32x4.relaxed_madd` (a * b + c, opcode 0x105) is `fd 85 02`: the same length, so the instruction
can be replaced in place without moving anything else in the file.

The instructions are located with `wasm-objdump -d` (wabt), never by searching bytes (the same
bytes can occur inside constants or data): the disassembler stops decoding a function at the first
opcode it does not know, so the offset right after the last instruction it printed is where the
next unknown instruction starts. That offset must hold `fd af 01`; it is rewritten, and the
disassembly is repeated until every function decodes to its final `end`. The result is checked
with `wasm-validate --enable-relaxed-simd`.

Usage: /usr/bin/python3 scripts/wasm_relaxed_madd.py FILE.wasm   (rewrites in place; prints a count)
"""
import re
import subprocess
import sys

OLD = bytes([0xFD, 0xAF, 0x01])
NEW = bytes([0xFD, 0x85, 0x02])
LINE = re.compile(r"^ ([0-9a-f]+): ((?:[0-9a-f]{2} )+)\s*\|(\s*)(.*)$")
FUNC = re.compile(r"^([0-9a-f]+) func\[(\d+)\]")


def truncated_offsets(path):
    """Offsets where a function's disassembly stops before its final `end`."""
    # wasm-objdump exits with 1 when it meets an opcode it does not know: that is expected here
    r = subprocess.run(["wasm-objdump", "-d", path], capture_output=True, text=True)
    out = r.stdout
    if "Code Disassembly" not in out:
        sys.exit(f"wasm_relaxed_madd.py: wasm-objdump -d {path} failed: {r.stderr.strip()}")
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
    close()
    return offsets


def main():
    path = sys.argv[1]
    data = bytearray(open(path, "rb").read())
    rewritten = 0
    while True:
        offsets = truncated_offsets(path)
        if not offsets:
            break
        for off in offsets:
            if data[off:off + 3] != OLD:
                sys.exit(f"wasm_relaxed_madd.py: {path}: disassembly stops at 0x{off:x} on bytes "
                         f"{data[off:off + 3].hex(' ')}, not the pre-standard f32x4 multiply-add (fd af 01)")
            data[off:off + 3] = NEW
            rewritten += 1
        open(path, "wb").write(data)
    subprocess.run(["wasm-validate", "--enable-relaxed-simd", path], check=True)
    print(f"{path}: {rewritten} f32x4.relaxed_madd instructions rewritten to the standard opcode; validates")


if __name__ == "__main__":
    main()
