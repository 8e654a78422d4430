import { Page } from '../components/Page.tsx';
import { Link } from '../router.tsx';

export function NotFoundPage() {
  return (
    <Page title="Page not found">
      <p>
        There is nothing at this address. <Link to="/servers">Go to your servers</Link>.
      </p>
    </Page>
  );
}
