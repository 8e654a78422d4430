/**
 * Reads a walk's next files from the disk before the walk gets to them, so that its own reads,
 * which are synchronous, find them in the page cache. A walk that reads, cuts and hashes in one
 * thread otherwise waits on the disk at the start of every file, and the disk and the CPU take
 * turns: on a volume read cold, about as long again as the reads alone.
 *
 * The walk says which directory it is in and what it will read there, in its order
 * (`enter`), and how far it has got (`reached`); reads run on libuv's pool, a few at a time, into
 * one scratch buffer whose content nobody looks at (the point is the page cache, which is not
 * this process's memory), and never more than `aheadBytes` ahead of the walk. The warmer never
 * goes past a subdirectory the walk has not entered yet: what comes next in the walk's order is
 * in there, and not known until then. Everything it opens goes through the walk's own open
 * directories (VolumeDir.child) with the walk's flags: it reads no file the walk would not.
 * Failures are the walk's to find: a file the warmer cannot read is skipped.
 */
import { constants as fsc } from 'node:fs';
import { open } from 'node:fs/promises';
import type { VolumeDir } from './volume-dir.ts';

const FLAGS = fsc.O_RDONLY | fsc.O_NOFOLLOW | fsc.O_NONBLOCK;
/** One read's size (each a turn of the walk thread's event loop); the scratch buffer's size. */
const PIECE = 1024 * 1024;

/** What the walk does with an entry of a directory, in its order. */
export type WalkStep = 'read' | 'directory' | 'skip';

/** A directory's entries in the walk's order (asked for by index: a huge directory is not copied). */
export interface WalkPlan {
  length: number;
  name(index: number): string;
  step(index: number): WalkStep;
}

export interface WarmerOptions {
  /** At most this many bytes read ahead of the walk (files it has not reached). */
  aheadBytes: number;
  /** Files read at once. */
  reading: number;
}

/** One directory on the walk's path: its entries in order, and how far the walk and the warmer are. */
export class WarmFrame {
  /** The entry the walk is at (-1: none yet). */
  walked = -1;
  /** The next entry the warmer looks at. */
  next = 0;
  closed = false;
  /** Bytes the warmer read of each entry. */
  readonly warmed = new Map<number, number>();

  constructor(
    private readonly warmer: ReadWarmer,
    readonly dir: VolumeDir,
    readonly plan: WalkPlan,
  ) {}

  /** The walk is at entry `index` now: what the warmer read of the entries before it is used. */
  reached(index: number): void {
    for (const [i, bytes] of this.warmed) {
      if (i < index) {
        this.warmed.delete(i);
        this.warmer.release(bytes);
      }
    }
    this.walked = index;
    this.warmer.pump();
  }

  /** The walk left this directory. */
  close(): void {
    this.closed = true;
    for (const bytes of this.warmed.values()) this.warmer.release(bytes);
    this.warmed.clear();
    this.warmer.leave(this);
  }
}

export class ReadWarmer {
  private readonly frames: WarmFrame[] = [];
  private ahead = 0;
  private running = 0;
  private readonly scratch = Buffer.allocUnsafe(PIECE);
  /** Reads waiting for room ahead, or for the walk to pass them. */
  private waiting: (() => void)[] = [];

  constructor(private readonly options: WarmerOptions) {}

  /** The walk entered `dir`, and will take its entries in this order. */
  enter(dir: VolumeDir, plan: WalkPlan): WarmFrame {
    const frame = new WarmFrame(this, dir, plan);
    this.frames.push(frame);
    this.pump();
    return frame;
  }

  /** Bytes read ahead that the walk has not used yet. */
  get bytesAhead(): number {
    return this.ahead;
  }

  /** Resolves once every read has ended or waits for the walk to move on. */
  async whenIdle(): Promise<void> {
    while (this.running > this.waiting.length) await new Promise((resolve) => setTimeout(resolve, 5));
  }

  /** @internal */
  leave(frame: WarmFrame): void {
    const at = this.frames.lastIndexOf(frame);
    if (at >= 0) this.frames.splice(at, 1);
    this.pump();
  }

  /** @internal */
  release(bytes: number): void {
    this.ahead -= bytes;
  }

  /** @internal Starts reads while there is room for them. */
  pump(): void {
    while (this.running < this.options.reading && this.ahead < this.options.aheadBytes) {
      const next = this.nextFile();
      if (next === null) return;
      this.running += 1;
      void this.warm(next.frame, next.index).finally(() => {
        this.running -= 1;
        this.pump();
      });
    }
    const waiting = this.waiting;
    this.waiting = [];
    for (const wake of waiting) wake();
  }

  /**
   * The next file the walk will read that the warmer has not started: in the innermost
   * directory, then, once that has nothing left, after it in the directories around it. A
   * subdirectory the walk has not entered stops the search.
   */
  private nextFile(): { frame: WarmFrame; index: number } | null {
    for (let k = this.frames.length - 1; k >= 0; k--) {
      const frame = this.frames[k]!;
      frame.next = Math.max(frame.next, frame.walked + 1);
      while (frame.next < frame.plan.length) {
        const index = frame.next;
        const step = frame.plan.step(index);
        if (step === 'directory') return null;
        frame.next += 1;
        if (step === 'read') return { frame, index };
      }
    }
    return null;
  }

  /** Reads entry `index` of `frame` through, unless the walk gets there first. */
  private async warm(frame: WarmFrame, index: number): Promise<void> {
    const passed = () => frame.closed || frame.walked >= index;
    let handle;
    try {
      handle = await open(frame.dir.child(frame.plan.name(index)), FLAGS);
    } catch {
      return;
    }
    try {
      const stats = await handle.stat();
      if (!stats.isFile()) return;
      for (let position = 0; position < stats.size;) {
        while (this.ahead >= this.options.aheadBytes && !passed())
          await new Promise<void>((wake) => this.waiting.push(wake));
        if (passed()) return;
        const { bytesRead } = await handle.read(this.scratch, 0, PIECE, position);
        if (bytesRead === 0) return;
        position += bytesRead;
        if (passed()) return;
        this.ahead += bytesRead;
        frame.warmed.set(index, (frame.warmed.get(index) ?? 0) + bytesRead);
      }
    } catch {
      // The walk will meet whatever this was, and decide.
    } finally {
      await handle.close().catch(() => undefined);
    }
  }
}
