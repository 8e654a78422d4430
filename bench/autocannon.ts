/** autocannon, typed for what the benchmarks read of it (the package ships no types). */
import { createRequire } from 'node:module';

export interface CannonResult {
  requests: { average: number };
  latency: { p50: number; p99: number; mean: number };
  non2xx: number;
  errors: number;
}

export const autocannon = createRequire(import.meta.url)('autocannon') as (options: {
  url: string;
  connections: number;
  duration: number;
  headers: Record<string, string>;
}) => Promise<CannonResult>;
