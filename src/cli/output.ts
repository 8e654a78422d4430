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
