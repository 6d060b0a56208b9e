// NumPy .npy files (format version 1.0, NEP 1) of an argument's stored bytes, for download.

const DESCR: Record<string, string> = {
  f64: "<f8", f32: "<f4", f16: "<f2", i64: "<i8", i32: "<i4", i16: "<i2", i8: "|i1", i1: "|b1",
  // numpy has no bfloat16 or float8: their bit patterns, as `tilescope run --save` writes them
  bf16: "<u2",
};

export function npyDescr(dtype: string): string {
  return DESCR[dtype] ?? "|u1";
}

/// A .npy file holding `data` as an array of `shape` (C order) of `dtype` (MLIR spelling).
export function npy(data: ArrayBuffer, dtype: string, shape: number[]): Blob {
  const dims = shape.length === 1 ? `(${shape[0]},)` : `(${shape.join(", ")})`;
  let header = `{'descr': '${npyDescr(dtype)}', 'fortran_order': False, 'shape': ${dims}, }`;
  // The magic (6) + version (2) + length (2) + header + "\n" is a multiple of 64.
  const total = 10 + header.length + 1;
  header += " ".repeat((64 - (total % 64)) % 64) + "\n";
  const head = new Uint8Array(10 + header.length);
  head.set([0x93, ...Array.from("NUMPY").map((c) => c.charCodeAt(0)), 1, 0, header.length & 255, header.length >> 8]);
  for (let i = 0; i < header.length; i++) head[10 + i] = header.charCodeAt(i);
  return new Blob([head, data], { type: "application/octet-stream" });
}
