/** What a command prints: one JSON object with --json, readable lines otherwise. */
export function printRecord(json: boolean, record: Record<string, unknown>, lines: string[]): void {
  process.stdout.write(json ? `${JSON.stringify(record)}\n` : `${lines.join('\n')}\n`);
}

export function collect(value: string, previous: string[] = []): string[] {
  return [...previous, value];
}

export function positiveInteger(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0) throw new Error(`"${value}" is not a whole number`);
  return n;
}

/**
 * Progress on a terminal (files and bytes so far, redrawn in place); nothing when the output
 * is JSON or not a terminal, so scripts read only the record.
 */
export function progressPrinter(json: boolean): {
  update: (p: { files: number; bytes: number }) => void;
  done: () => void;
} {
  const live = !json && process.stderr.isTTY;
  let shown = false;
  return {
    update: (p) => {
      if (!live) return;
      shown = true;
      process.stderr.write(`\r${p.files} files, ${(p.bytes / 1024 / 1024).toFixed(1)} MiB`);
    },
    done: () => {
      if (shown) process.stderr.write('\n');
    },
  };
}
