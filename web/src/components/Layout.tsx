import { useQueryClient } from '@tanstack/react-query';
import { useState, useSyncExternalStore, type ReactNode } from 'react';
import { api } from '../api/client.ts';
import type { Account } from '../api/types.ts';
import { Link, navigate, useLocation } from '../router.tsx';
import { chooseTheme, effectiveTheme, subscribeTheme } from '../theme.ts';

const NAV = [
  { to: '/servers', label: 'Servers' },
  { to: '/activity', label: 'Activity' },
  { to: '/account/api-keys', label: 'API keys' },
  { to: '/account', label: 'Account' },
];

function ThemeToggle() {
  const theme = useSyncExternalStore(subscribeTheme, effectiveTheme);
  const next = theme === 'dark' ? 'light' : 'dark';
  return (
    <button
      type="button"
      className="theme-toggle"
      aria-pressed={theme === 'dark'}
      title={`Switch to the ${next} theme`}
      onClick={() => chooseTheme(next)}
    >
      <span aria-hidden="true">{theme === 'dark' ? '☾' : '☀'}</span> Dark mode
    </button>
  );
}

export function Layout({ account, children }: { account: Account; children: ReactNode }) {
  const location = useLocation();
  const client = useQueryClient();
  // The phone menu is open on the page it was opened on; going to another page closes it.
  const [menuOpenAt, setMenuOpenAt] = useState<string | null>(null);
  const menuOpen = menuOpenAt === location.pathname;

  const current = (to: string) =>
    to === '/account'
      ? location.pathname === '/account'
      : location.pathname === to || location.pathname.startsWith(`${to}/`);

  const logOut = async () => {
    try {
      await api('/auth/logout', { method: 'POST', body: {}, expect401: true });
    } catch {
      // The session may be gone already; either way it is over here.
    }
    client.clear();
    navigate('/login', { replace: true });
  };

  return (
    <div className="shell">
      <a className="skip-link" href="#main">
        Skip to content
      </a>
      <header className="top">
        <Link to="/servers" className="brand">
          <img src="/favicon.svg" alt="" width={24} height={24} /> Aerie
        </Link>
        <button
          type="button"
          className="menu-button"
          aria-expanded={menuOpen}
          aria-controls="main-nav"
          onClick={() => setMenuOpenAt(menuOpen ? null : location.pathname)}
        >
          Menu
        </button>
        <nav id="main-nav" aria-label="Main" className={menuOpen ? 'open' : undefined}>
          <ul>
            {NAV.map((item) => (
              <li key={item.to}>
                <Link to={item.to} current={current(item.to)}>
                  {item.label}
                </Link>
              </li>
            ))}
          </ul>
          <div className="top-tools">
            <ThemeToggle />
            <span className="whoami" title={account.attributes.email}>
              {account.attributes.username}
            </span>
            <button type="button" onClick={() => void logOut()}>
              Log out
            </button>
          </div>
        </nav>
      </header>
      <main id="main" tabIndex={-1}>
        {children}
      </main>
    </div>
  );
}
