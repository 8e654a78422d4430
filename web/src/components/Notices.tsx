import { createContext, useCallback, useContext, useState, type ReactNode } from 'react';

type Kind = 'info' | 'error';
type Notify = (text: string, kind?: Kind) => void;

const NoticeContext = createContext<Notify>(() => undefined);

interface Notice {
  id: number;
  text: string;
  kind: Kind;
}

let next = 0;

/** Short messages after an action ("Backup started"), announced politely, gone after a while. */
export function NoticeProvider({ children }: { children: ReactNode }) {
  const [notices, setNotices] = useState<Notice[]>([]);
  const notify = useCallback<Notify>((text, kind = 'info') => {
    next += 1;
    const id = next;
    setNotices((list) => [...list.slice(-3), { id, text, kind }]);
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
