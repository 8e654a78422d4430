import FindMyWay, { type HTTPMethod } from 'find-my-way';

/**
 * Remembers every route's path so that a request that matched no route can be told apart:
 * a path that exists under other methods is a 405 with `Allow`, anything else a 404.
 */
export class RouteIndex {
  private readonly router = FindMyWay({ ignoreTrailingSlash: true, ignoreDuplicateSlashes: true });
  private readonly methods = new Set<HTTPMethod>();

  add(method: string | string[], url: string): void {
    for (const one of Array.isArray(method) ? method : [method]) {
      const verb = one.toUpperCase() as HTTPMethod;
      if (this.router.hasRoute(verb, url)) continue;
      this.router.on(verb, url, () => undefined);
      this.methods.add(verb);
    }
  }

  allowedMethods(path: string): string[] {
    return [...this.methods].filter((method) => this.router.find(method, path) !== null).sort();
  }
}
