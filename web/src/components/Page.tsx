import { useEffect, useRef, type ReactNode } from 'react';

interface PageProps {
  title: string;
  /** Shown beside the heading (a status, an action). */
  aside?: ReactNode;
  children: ReactNode;
}

/**
 * A page: sets the document title and, when it is opened, moves focus to its heading, so a
 * keyboard or screen-reader user starts reading at the new page rather than at the old link.
 */
export function Page({ title, aside, children }: PageProps) {
  const heading = useRef<HTMLHeadingElement>(null);
  useEffect(() => {
    document.title = `${title} · Aerie`;
  }, [title]);
  useEffect(() => {
    heading.current?.focus({ preventScroll: true });
  }, []);
  return (
    <>
      <div className="page-head">
        <h1 ref={heading} tabIndex={-1}>
          {title}
        </h1>
        {aside}
      </div>
      {children}
    </>
  );
}

export function Loading({ what }: { what: string }) {
  return (
    <p className="muted" role="status">
      Loading {what}…
    </p>
  );
}
