/** A client API caller for the bench scripts: JSON in and out, a thrown error for any non-2xx. */
export function apiClient(base: string, token: string) {
  const headers = { authorization: `Bearer ${token}`, accept: 'application/json' };
  return async function api(method: string, path: string, body?: unknown): Promise<unknown> {
    const res = await fetch(`${base}${path}`, {
      method,
      headers: body === undefined ? headers : { ...headers, 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${await res.text()}`);
    return res.status === 204 ? null : res.json();
  };
}
