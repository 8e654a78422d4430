import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';
import { TEST_FILES, testFilesOf, tierOf } from './test/tiers.ts';

// AERIE_TEST_TIER=quick or database runs one tier of the suite (see test/tiers.ts); unset, the
// whole suite runs.
const tier = tierOf(process.env.AERIE_TEST_TIER);
const root = fileURLToPath(new URL('.', import.meta.url));

export default defineConfig({
  test: {
    include: tier === undefined ? TEST_FILES : testFilesOf(root, tier),
    pool: 'forks',
    testTimeout: 30_000,
    hookTimeout: 60_000,
  },
});
