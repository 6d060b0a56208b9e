// Element values of an argument's stored bytes (little-endian), by its MLIR dtype.

function f16(bits: number): number {
  const s = bits & 0x8000 ? -1 : 1;
  const e = (bits >> 10) & 0x1f;
  const m = bits & 0x3ff;
  if (e === 0) return s * m * 2 ** -24;
  if (e === 31) return m ? NaN : s * Infinity;
  return s * (1 + m / 1024) * 2 ** (e - 15);
}

function bf16(bits: number): number {
  const b = new DataView(new ArrayBuffer(4));
  b.setUint32(0, bits << 16, true);
  return b.getFloat32(0, true);
}

/// The size in bytes of one element of `dtype` (MLIR spelling: f32, bf16, i8, i1, f8E4M3FN, ...).
export function elemBytes(dtype: string): number {
  if (/^(f64|i64)$/.test(dtype)) return 8;
  if (/^(f32|i32|tf32)$/.test(dtype)) return 4;
  if (/^(f16|bf16|i16)$/.test(dtype)) return 2;
  return 1;
}

/// Element `i` of `buf` as a number (NaN when outside the buffer). 8-bit floats are shown as their bits.
export function valueAt(buf: DataView | null, dtype: string, i: number): number {
  if (!buf) return NaN;
  const n = elemBytes(dtype);
  const off = i * n;
  if (i < 0 || off + n > buf.byteLength) return NaN;
  switch (dtype) {
    case "f64": return buf.getFloat64(off, true);
    case "f32": return buf.getFloat32(off, true);
    case "f16": return f16(buf.getUint16(off, true));
    case "bf16": return bf16(buf.getUint16(off, true));
    case "i64": return Number(buf.getBigInt64(off, true));
    case "i32": return buf.getInt32(off, true);
    case "i16": return buf.getInt16(off, true);
    case "i8": return buf.getInt8(off);
    case "i1": return buf.getUint8(off);
    default: return buf.getUint8(off);
  }
}

export function formatValue(v: number): string {
  if (Number.isNaN(v)) return "NaN";
  if (Number.isInteger(v)) return String(v);
  const a = Math.abs(v);
  return a !== 0 && (a < 1e-3 || a >= 1e5) ? v.toExponential(4) : v.toPrecision(6);
}

/// Bytes with a binary unit: "812 B", "3.5 KiB", "75 KiB".
export function fmtBytes(n: number): string {
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let i = 0;
  while (n >= 1024 && i < units.length - 1) (n /= 1024), i++;
  return `${i ? n.toFixed(n < 10 ? 1 : 0) : n} ${units[i]}`;
}
