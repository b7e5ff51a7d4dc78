// Reading tensors from a .safetensors file, for the tests that check the engine's numbers against the
// weights themselves (the JavaScript twin of safetensors_io.py's reader): an 8-byte header length, a
// JSON header, then the tensors, F32 or F16.

/** IEEE half precision to float (the shipped models store their weights in F16; float32 holds every F16 value exactly). */
export function halfToFloat(h) {
  const e = (h >> 10) & 0x1f;
  const m = h & 0x3ff;
  const v = e === 0 ? m * 2 ** -24 : e === 31 ? (m ? NaN : Infinity) : (1 + m / 1024) * 2 ** (e - 15);
  return h & 0x8000 ? -v : v;
}

/**
 * The tensors `names` of the file's bytes as Float32Arrays (F16 ones widened), each found under its
 * name or as transformer.<name>; an Error for a missing name or another dtype.
 */
export function tensorsOf(bytes, names) {
  const n = Number(new DataView(bytes.buffer, bytes.byteOffset).getBigUint64(0, true));
  const header = JSON.parse(new TextDecoder().decode(bytes.subarray(8, 8 + n)));
  const out = {};
  for (const name of names) {
    const info = header[name] ?? header[`transformer.${name}`];
    if (info?.dtype !== 'F32' && info?.dtype !== 'F16') throw new Error(`${name}: dtype ${info?.dtype}`);
    const [a, b] = info.data_offsets;
    const raw = bytes.slice(8 + n + a, 8 + n + b).buffer;
    out[name] = info.dtype === 'F32' ? new Float32Array(raw) : Float32Array.from(new Uint16Array(raw), halfToFloat);
  }
  return out;
}
