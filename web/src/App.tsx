import { useAccount } from './api/hooks.ts';
import { ApiError } from './api/client.ts';
import { Layout } from './components/Layout.tsx';
import { RequestError } from './components/Form.tsx';
import { Loading } from './components/Page.tsx';
import { AccountPage } from './pages/AccountPage.tsx';
import { ActivityPage } from './pages/ActivityPage.tsx';
import { ApiKeysPage } from './pages/ApiKeysPage.tsx';
import { LoginPage } from './pages/LoginPage.tsx';
import { NotFoundPage } from './pages/NotFoundPage.tsx';
import { ServerPage } from './pages/ServerPage.tsx';
import { ServersPage } from './pages/ServersPage.tsx';
import { navigate, useLocation } from './router.tsx';
import { useEffect } from 'react';

function Routes({ pathname }: { pathname: string }) {
  if (pathname === '/' || pathname === '/servers') return <ServersPage />;
  if (pathname === '/activity') return <ActivityPage />;
  if (pathname === '/account') return <AccountPage />;
  if (pathname === '/account/api-keys') return <ApiKeysPage />;
  const server = /^\/servers\/([^/]+)(?:\/(backups|schedules|activity|users))?$/.exec(pathname);
  if (server?.[1] !== undefined) {
    const id = decodeURIComponent(server[1]);
    return <ServerPage key={id} id={id} tab={server[2] ?? null} />;
  }
  return <NotFoundPage />;
}

function Authenticated() {
  const { pathname } = useLocation();
  const account = useAccount();
  useEffect(() => {
    if (pathname === '/') navigate('/servers', { replace: true });
  }, [pathname]);
  if (account.data === undefined) {
    // A 401 has already sent the browser to the login page.
    if (account.error !== null && !(account.error instanceof ApiError && account.error.status === 401))
      return (
        <main id="main" className="login">
          <RequestError error={account.error} />
          <button type="button" onClick={() => void account.refetch()}>
            Try again
          </button>
        </main>
      );
    return (
      <main id="main" className="login">
        <Loading what="your account" />
      </main>
    );
  }
  return (
    <Layout account={account.data}>
      <Routes pathname={pathname} />
    </Layout>
  );
}

export function App() {
  const { pathname } = useLocation();
  return pathname === '/login' ? <LoginPage /> : <Authenticated />;
}
