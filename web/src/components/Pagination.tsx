import type { Pagination as PaginationMeta } from '../api/types.ts';
import { plural } from '../format.ts';
import { Link } from '../router.tsx';

interface PaginationProps {
  meta: PaginationMeta;
  /** The address of a page, keeping everything else in the URL. */
  hrefFor: (page: number) => string;
  /** What is counted, one of them ("entry"); `nouns` is more of them, by default `noun` + s. */
  noun: string;
  nouns?: string;
}

export function Pagination({ meta, hrefFor, noun, nouns = `${noun}s` }: PaginationProps) {
  const { current_page: page, total_pages: pages, total } = meta;
  return (
    <nav className="pagination" aria-label={`Pages of ${nouns}`}>
      {page > 1 ? (
        <Link to={hrefFor(page - 1)} rel="prev">
          ← Previous
        </Link>
      ) : (
        <span className="disabled" aria-hidden="true">
          ← Previous
        </span>
      )}
      <span className="page-status">
        Page {page} of {pages} · {plural(total, noun, nouns)}
      </span>
      {page < pages ? (
        <Link to={hrefFor(page + 1)} rel="next">
          Next →
        </Link>
      ) : (
        <span className="disabled" aria-hidden="true">
          Next →
        </span>
      )}
    </nav>
  );
}
