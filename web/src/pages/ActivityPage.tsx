import { ActivityFeed } from '../components/ActivityFeed.tsx';
import { Page } from '../components/Page.tsx';

export function ActivityPage() {
  return (
    <Page title="Activity">
      <p className="lead">
        What happened to your account: logins, failed logins, API keys, servers shared with you.
      </p>
      <ActivityFeed scope="account" label="Account activity" />
    </Page>
  );
}
