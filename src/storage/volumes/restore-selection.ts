/**
 * The paths a partial restore brings back. The restore is staged as a whole one is (the swap,
 * the crash recovery, the disk budget are the same): the backup's chosen paths are written into
 * staging, with the directories above them, and the live volume is merged around them. What is
 * chosen ends as the backup has it (with truncate, exactly: what the live volume has under a
 * chosen path and the backup does not is left out); everything else stays as the live volume has
 * it, the directories above a chosen path keeping their own mode and times.
 */

export class RestoreSelection {
  private readonly chosen: ReadonlySet<string>;
  /** Every directory above a chosen path ('' is the volume's root). */
  private readonly above = new Set<string>();

  /**
   * `paths`: relative to the volume, `/`-separated, normalized (no `.`, `..` or empty parts);
   * none of them the volume itself (a restore of everything is not a partial one).
   */
  constructor(paths: readonly string[]) {
    if (paths.length === 0 || paths.some((rel) => rel === '' || rel.startsWith('/') || rel.endsWith('/')))
      throw new Error('a partial restore names paths inside the volume');
    const given = new Set(paths);
    // A path under another chosen one adds nothing.
    this.chosen = new Set([...given].filter((rel) => !ancestors(rel).some((up) => given.has(up))));
    for (const rel of this.chosen) for (const up of ancestors(rel)) this.above.add(up);
  }

  /** The chosen paths, none under another, sorted. */
  get paths(): string[] {
    return [...this.chosen].sort();
  }

  /** Whether `rel` is chosen, or lies under a chosen path: it ends as the backup has it. */
  restores(rel: string): boolean {
    return this.chosen.has(rel) || ancestors(rel).some((up) => this.chosen.has(up));
  }

  /** Whether `rel` is a directory above a chosen path: written only to hold what is chosen. */
  holds(rel: string): boolean {
    return this.above.has(rel);
  }

  /** Whether the backup's entry at `rel` is written into staging. */
  wants(rel: string): boolean {
    return this.holds(rel) || this.restores(rel);
  }
}

/** The directories above `rel`, nearest last: `a/b/c` → '', 'a', 'a/b'. */
function ancestors(rel: string): string[] {
  const found = [''];
  for (let at = rel.indexOf('/'); at !== -1; at = rel.indexOf('/', at + 1)) found.push(rel.slice(0, at));
  return found;
}
