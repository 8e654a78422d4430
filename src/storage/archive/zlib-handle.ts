/**
 * The native stream of a Node zlib object (gzip, zstd, ...), as the object holds it. Not a
 * documented API: `writeSync` works from one buffer straight into another, leaving what was left
 * of each in the object's `_writeState` (output left, then input left). Used where one context
 * serves block after block without zlib's own API allocating an output buffer for each.
 */
export interface ZlibHandle {
  reset(): void;
  /** Called (synchronously, during writeSync) when the data is not valid. */
  onerror?: (message: string, errno: number) => void;
  writeSync(
    flush: number,
    input: Uint8Array,
    inputOffset: number,
    inputLength: number,
    output: Uint8Array,
    outputOffset: number,
    outputLength: number,
  ): void;
}

/** A zlib object's native handle and write state, or null where zlib does not hold them so. */
export function nativeZlib(engine: unknown): { handle: ZlibHandle; state: Uint32Array } | null {
  const { _handle: handle, _writeState: state } = engine as {
    _handle?: Partial<ZlibHandle>;
    _writeState?: unknown;
  };
  const usable =
    typeof handle?.writeSync === 'function' &&
    typeof handle.reset === 'function' &&
    state instanceof Uint32Array;
  return usable ? { handle: handle as ZlibHandle, state } : null;
}
