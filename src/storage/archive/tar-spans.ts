/**
 * Where each entry of a tar stream lies in it: from its first header block (a pax or GNU long-name
 * header before it included) to the end of its padded content. Fed the same bytes as the tar
 * parser (archive-reader.ts), block by block, it decodes the headers with node-tar's own Header
 * and Pax, and so finds the entries the parser hands on, in the same order: the n-th span is the
 * n-th entry's. A caller checks that they agree (`agrees`) before relying on a span.
 *
 * A span read alone is parsed without what came before it. A global pax header that changes how
 * later entries read (anything but a comment) makes the spans unusable (`usable` false), as does
 * anything the parser would refuse.
 */
import { Header, Pax, type HeaderData, type ReadEntry } from 'tar';

const BLOCK = 512;
/** The largest extended header node-tar reads (larger ones fail the archive). */
const MAX_META_BYTES = 1024 * 1024;
const META = new Set([
  'ExtendedHeader',
  'OldExtendedHeader',
  'GlobalExtendedHeader',
  'NextFileHasLongPath',
  'OldGnuLongPath',
  'NextFileHasLongLinkpath',
]);

/** One entry's place in the tar: [start, end), and what its header says (to check it is the parser's). */
export interface TarSpan {
  start: number;
  end: number;
  path: string;
  type: string;
  blocks: number;
}

export class TarSpans {
  /** False once the spans cannot be relied on (the caller then keeps none). */
  usable = true;
  private readonly found: TarSpan[] = [];
  private at = 0;
  private readonly block = Buffer.alloc(BLOCK);
  private filled = 0;
  private skip = 0;
  private meta: { type: string; remain: number; padding: number; chunks: Buffer[] } | null = null;
  private ex: HeaderData | undefined;
  private gex: HeaderData | undefined;
  private pendingStart: number | null = null;
  private sawNullBlock = false;
  private ended = false;

  write(chunk: Buffer): void {
    for (let i = 0; i < chunk.length && this.usable && !this.ended;) {
      if (this.skip > 0) {
        const taken = Math.min(this.skip, chunk.length - i);
        this.skip -= taken;
        this.at += taken;
        i += taken;
      } else if (this.meta !== null) {
        const meta = this.meta;
        const taken = Math.min(meta.remain, chunk.length - i);
        meta.chunks.push(Buffer.from(chunk.subarray(i, i + taken)));
        meta.remain -= taken;
        this.at += taken;
        i += taken;
        if (meta.remain === 0) {
          this.meta = null;
          this.skip = meta.padding;
          this.applyMeta(meta.type, Buffer.concat(meta.chunks).toString());
        }
      } else {
        const taken = Math.min(BLOCK - this.filled, chunk.length - i);
        chunk.copy(this.block, this.filled, i, i + taken);
        this.filled += taken;
        this.at += taken;
        i += taken;
        if (this.filled === BLOCK) {
          this.filled = 0;
          this.header(this.at - BLOCK);
        }
      }
    }
  }

  /** The span of the next entry the parser hands on; undefined if there is none (spans unusable). */
  next(): TarSpan | undefined {
    // Those of one chunk of tar at most wait here: the parser is fed what this is, and hands
    // them on in order.
    const span = this.found.shift();
    if (span === undefined) this.usable = false;
    return span;
  }

  /** Whether `span` is the entry the parser gave (same path, type and content blocks). */
  static agrees(span: TarSpan | undefined, entry: ReadEntry): boolean {
    return (
      span !== undefined &&
      span.path === entry.header.path &&
      span.type === entry.type &&
      span.blocks === entry.startBlockSize
    );
  }

  private header(start: number): void {
    let header: Header;
    try {
      header = new Header(this.block, 0, this.ex, this.gex);
    } catch {
      this.usable = false;
      return;
    }
    if (header.nullBlock) {
      // Two in a row end the archive for the parser: it reads nothing after them.
      if (this.sawNullBlock) this.ended = true;
      this.sawNullBlock = true;
      return;
    }
    this.sawNullBlock = false;
    if (!header.cksumValid || !header.path) {
      this.usable = false;
      return;
    }
    const entryStart = this.pendingStart ?? start;
    const size = header.size ?? 0;
    const blocks = BLOCK * Math.ceil(size / BLOCK);
    if (META.has(header.type)) {
      if (size > MAX_META_BYTES) {
        this.usable = false;
        return;
      }
      this.pendingStart = entryStart;
      // An empty one changes nothing, as for the parser.
      if (size > 0) this.meta = { type: header.type, remain: size, padding: blocks - size, chunks: [] };
      return;
    }
    this.ex = undefined;
    this.pendingStart = null;
    this.found.push({
      start: entryStart,
      end: start + BLOCK + blocks,
      path: header.path,
      type: header.type,
      blocks,
    });
    this.skip = blocks;
  }

  /** What an extended header says, kept for the entry after it, as the parser keeps it. */
  private applyMeta(type: string, body: string): void {
    switch (type) {
      case 'ExtendedHeader':
      case 'OldExtendedHeader':
        this.ex = Pax.parse(body, this.ex, false);
        break;
      case 'GlobalExtendedHeader': {
        this.gex = Pax.parse(body, this.gex, true);
        const fields = Object.entries(this.gex).filter(
          ([key, value]) => value !== undefined && key !== 'global' && key !== 'comment',
        );
        if (fields.length > 0) this.usable = false;
        break;
      }
      case 'NextFileHasLongPath':
      case 'OldGnuLongPath':
        this.ex = { ...this.ex, path: body.replace(/\0.*/, '') };
        break;
      case 'NextFileHasLongLinkpath':
        this.ex = { ...this.ex, linkpath: body.replace(/\0.*/, '') };
        break;
    }
  }
}
