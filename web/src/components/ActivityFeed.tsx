import { useState, type FormEvent } from 'react';
import { fieldError } from '../api/client.ts';
import { useActivity } from '../api/hooks.ts';
import type { ActivityLog } from '../api/types.ts';
import { formatAbsolute } from '../format.ts';
import { navigate, useLocation, withParams, type Location } from '../router.tsx';
import { Field } from './Field.tsx';
import { RequestError, TextField } from './Form.tsx';
import { Loading } from './Page.tsx';
import { Pagination } from './Pagination.tsx';
import { Time } from './Time.tsx';

const PER_PAGE = [10, 25, 50, 100];

function positive(value: string | null, fallback: number): number {
  const number = Number(value);
  return Number.isInteger(number) && number > 0 ? number : fallback;
}

/** The feed's filters and page, read from the URL (`?event=&ip=&page=&per_page=`). */
export function feedParams(location: Location) {
  const perPage = positive(location.search.get('per_page'), 25);
  return {
    event: location.search.get('event') ?? '',
    ip: location.search.get('ip') ?? '',
    page: positive(location.search.get('page'), 1),
    perPage: PER_PAGE.includes(perPage) ? perPage : 25,
  };
}

/** A string property of an entry, or null when it has none (or not a string, or empty). */
function stringProperty(entry: ActivityLog, key: string): string | null {
  const value = entry.attributes.properties[key];
  return typeof value === 'string' && value !== '' ? value : null;
}

/**
 * Who did it: the user; for an attempt by someone not logged in (a failed login, which has no
 * actor), "Someone" and the username they gave, if any; otherwise Aerie itself, "System".
 */
function actorName(entry: ActivityLog): { name: string; title: string | undefined } {
  const actor = entry.relationships.actor;
  if (actor.object === 'user') return { name: actor.attributes.username, title: actor.attributes.email };
  if (entry.attributes.event.startsWith('auth:')) {
    const username = stringProperty(entry, 'username');
    return username === null
      ? { name: 'Someone', title: 'Someone who was not logged in' }
      : {
          name: `Someone (username “${username}”)`,
          title: `Someone who was not logged in, giving the username ${username}`,
        };
  }
  return { name: 'System', title: 'Aerie itself' };
}

function Entry({
  entry,
  filterTo,
}: {
  entry: ActivityLog;
  filterTo: (changes: Record<string, string>) => void;
}) {
  const { attributes: a } = entry;
  const actor = actorName(entry);
  const hasProperties = Object.keys(a.properties).length > 0;
  return (
    <li className="entry" data-event={a.event}>
      <div className="entry-main">
        <button
          type="button"
          className="chip"
          onClick={() => filterTo({ event: a.event })}
          title={`Show only ${a.event} events`}
          aria-label={`Event ${a.event}: show only these`}
        >
          {a.event}
        </button>
        <span className="entry-description">{a.description}</span>
      </div>
      <div className="entry-meta">
        <span className="entry-actor" title={actor.title}>
          {actor.name}
        </span>
        {a.ip === null ? null : (
          <button
            type="button"
            className="chip chip-ip"
            onClick={() => filterTo({ ip: a.ip ?? '' })}
            title={`Show only entries from ${a.ip}`}
            aria-label={`IP ${a.ip}: show only entries from it`}
          >
            {a.ip}
          </button>
        )}
        {a.is_api === true ? <span className="badge">API</span> : null}
        <Time iso={a.timestamp} />
      </div>
      <details className="entry-details">
        <summary>Details</summary>
        <dl className="pairs">
          <dt>Time</dt>
          <dd>
            <time dateTime={a.timestamp}>{formatAbsolute(a.timestamp)}</time>
          </dd>
          {a.batch === null ? null : (
            <>
              <dt>Batch</dt>
              <dd>
                <code>{a.batch}</code>
              </dd>
            </>
          )}
          <dt>Properties</dt>
          <dd>
            {hasProperties ? (
              <pre>{JSON.stringify(a.properties, null, 2)}</pre>
            ) : (
              <span className="muted">none</span>
            )}
          </dd>
        </dl>
      </details>
    </li>
  );
}

/** A feed with its filters, pages and details; everything it shows is in the URL. */
export function ActivityFeed({ scope, label }: { scope: string; label: string }) {
  const location = useLocation();
  const params = feedParams(location);
  const feed = useActivity(scope, params);
  const [event, setEvent] = useState(params.event);
  const [ip, setIp] = useState(params.ip);
  // The fields follow the URL when it changes (a clicked filter, back, forward).
  const [shown, setShown] = useState({ event: params.event, ip: params.ip });
  if (shown.event !== params.event || shown.ip !== params.ip) {
    setShown({ event: params.event, ip: params.ip });
    setEvent(params.event);
    setIp(params.ip);
  }

  const filterTo = (changes: Record<string, string | number | null>) =>
    navigate(withParams(location, { page: null, ...changes }));

  const submit = (form: FormEvent) => {
    form.preventDefault();
    filterTo({ event: event.trim(), ip: ip.trim() });
  };
  const filtered = params.event !== '' || params.ip !== '';

  return (
    <section className="feed" aria-label={label}>
      <form className="filters" onSubmit={submit} role="search" aria-label={`Filter ${label.toLowerCase()}`}>
        <TextField
          label="Event"
          error={fieldError(feed.error, 'filter[event]')}
          name="event"
          placeholder="e.g. auth:login or backup"
          value={event}
          onChange={setEvent}
        />
        <TextField
          label="IP address"
          error={fieldError(feed.error, 'filter[ip]')}
          name="ip"
          placeholder="e.g. 203.0.113."
          value={ip}
          onChange={setIp}
        />
        <Field label="Per page">
          {(control) => (
            <select
              {...control}
              name="per_page"
              value={params.perPage}
              onChange={(change) =>
                filterTo({ per_page: change.target.value === '25' ? null : change.target.value })
              }
            >
              {PER_PAGE.map((n) => (
                <option key={n} value={n}>
                  {n}
                </option>
              ))}
            </select>
          )}
        </Field>
        <div className="filter-buttons">
          <button type="submit" className="primary">
            Filter
          </button>
          {filtered ? (
            <button type="button" onClick={() => filterTo({ event: null, ip: null })}>
              Clear filters
            </button>
          ) : null}
        </div>
      </form>
      {filtered ? (
        <p className="active-filters" role="status">
          Showing {params.event === '' ? null : <>events matching “{params.event}”</>}
          {params.event !== '' && params.ip !== '' ? ' from ' : null}
          {params.ip === '' ? null : <>IP addresses matching “{params.ip}”</>}
        </p>
      ) : null}
      {feed.isPending ? <Loading what="activity" /> : null}
      {feed.error !== null &&
      fieldError(feed.error, 'filter[event]') === undefined &&
      fieldError(feed.error, 'filter[ip]') === undefined ? (
        <RequestError error={feed.error} />
      ) : null}
      {feed.data === undefined ? null : feed.data.data.length === 0 ? (
        <p className="empty">{filtered ? 'Nothing matches these filters.' : 'No activity yet.'}</p>
      ) : (
        <ol className={feed.isPlaceholderData ? 'entries stale' : 'entries'} aria-busy={feed.isFetching}>
          {feed.data.data.map((entry, index) => (
            <Entry
              key={`${entry.attributes.timestamp}-${index}-${entry.attributes.event}`}
              entry={entry}
              filterTo={filterTo}
            />
          ))}
        </ol>
      )}
      {feed.data?.meta?.pagination === undefined ? null : (
        <Pagination
          meta={feed.data.meta.pagination}
          hrefFor={(page) => withParams(location, { page: page === 1 ? null : page })}
          noun="entry"
          nouns="entries"
        />
      )}
    </section>
  );
}
