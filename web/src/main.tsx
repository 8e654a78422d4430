import { MutationCache, QueryCache, QueryClient, QueryClientProvider } from '@tanstack/react-query';
import { StrictMode } from 'react';
import { createRoot } from 'react-dom/client';
import { App } from './App.tsx';
import { ApiError, setUnauthenticatedHandler } from './api/client.ts';
import { keys } from './api/hooks.ts';
import { NoticeProvider } from './components/Notices.tsx';
import { navigate } from './router.tsx';
import { applyTheme } from './theme.ts';
import './styles.css';

applyTheme();

const client = new QueryClient({
  defaultOptions: {
    queries: {
      staleTime: 10_000,
      // A 4xx will not change by asking again; anything else gets two more tries.
      retry: (count, error) => !(error instanceof ApiError && error.status < 500) && count < 2,
      refetchOnWindowFocus: true,
    },
  },
  queryCache: new QueryCache(),
  mutationCache: new MutationCache(),
});

// An expired session, noticed by whichever request met it: back to the login page, and back
// here after logging in.
setUnauthenticatedHandler(() => {
  if (window.location.pathname === '/login') return;
  const here = window.location.pathname + window.location.search;
  // Only a session that was there and is gone "has ended"; a first visit just logs in.
  const hadSession = client.getQueryData(keys.account) !== undefined;
  client.clear();
  navigate(`/login?next=${encodeURIComponent(here)}${hadSession ? '&expired=1' : ''}`, { replace: true });
});

const root = document.getElementById('root');
if (root === null) throw new Error('The page has no #root element.');
createRoot(root).render(
  <StrictMode>
    <QueryClientProvider client={client}>
      <NoticeProvider>
        <App />
      </NoticeProvider>
    </QueryClientProvider>
  </StrictMode>,
);
