import { createContext, useCallback, useContext, useState, type ReactNode } from 'react';

type Kind = 'info' | 'error';
/**
 * Shows a notice. One given a `key` takes the place of the notice shown under that key, if any:
 * the end of an operation replaces the notice of its start, which never stays beside it.
 */
type Notify = (text: string, kind?: Kind, key?: string) => void;

const NoticeContext = createContext<Notify>(() => undefined);

interface Notice {
  id: number;
  text: string;
  kind: Kind;
  key: string | undefined;
}

let next = 0;

/** Short messages after an action ("Backup started"), announced politely, gone after a while. */
export function NoticeProvider({ children }: { children: ReactNode }) {
  const [notices, setNotices] = useState<Notice[]>([]);
  const notify = useCallback<Notify>((text, kind = 'info', key) => {
    next += 1;
    const id = next;
    setNotices((list) => [
      ...list.filter((notice) => key === undefined || notice.key !== key).slice(-3),
      { id, text, kind, key },
    ]);
    setTimeout(() => setNotices((list) => list.filter((notice) => notice.id !== id)), 6000);
  }, []);
  return (
    <NoticeContext.Provider value={notify}>
      {children}
      <div className="notices" role="status" aria-live="polite">
        {notices.map((notice) => (
          <p key={notice.id} className={`notice notice-${notice.kind}`}>
            {notice.text}
          </p>
        ))}
      </div>
    </NoticeContext.Provider>
  );
}

export function useNotify(): Notify {
  return useContext(NoticeContext);
}
