import js from '@eslint/js';
import tseslint from 'typescript-eslint';
import reactHooks from 'eslint-plugin-react-hooks';

/** Every folder above storage/ and jobs/: the HTTP layer and the features. */
const FEATURES =
  '**/{http,activity,api-keys,auth,backups,restores,server-events,servers,users,ops,metrics}/**';

export default tseslint.config(
  { ignores: ['node_modules/', 'dist/', '.bench-dist/', 'data/', 'coverage/'] },
  js.configs.recommended,
  ...tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': ['error', { checksVoidReturn: { arguments: false } }],
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_' }],
      '@typescript-eslint/restrict-template-expressions': ['error', { allowNumber: true }],
    },
  },
  // The layers: features never reach up into the HTTP layer (services return domain values, and
  // http/ makes the wire shape); shared/, jobs/ and storage/ never reach up into a feature.
  {
    files: ['src/{activity,api-keys,auth,backups,restores,server-events,servers,users,ops,metrics}/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        { patterns: [{ group: ['**/http/**'], message: 'Features do not import the HTTP layer.' }] },
      ],
    },
  },
  {
    files: ['src/{shared,storage}/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              group: [FEATURES],
              message: 'shared/ and storage/ sit below the features and the HTTP layer.',
            },
          ],
        },
      ],
    },
  },
  // The job queue knows no feature and no storage: handlers decide what a failure means
  // (PermanentJobError) and what a payload holds (a schema per kind).
  {
    files: ['src/jobs/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              group: [FEATURES, '**/storage/**'],
              message: 'jobs/ is a queue: it imports neither a feature nor storage/.',
            },
          ],
        },
      ],
    },
  },
  // An archive is a format: it knows nothing of where archives are kept.
  {
    files: ['src/storage/archive/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            { group: [FEATURES], message: 'storage/ sits below the features and the HTTP layer.' },
            { group: ['**/stores/**'], message: 'storage/archive does not import storage/stores.' },
          ],
        },
      ],
    },
  },
  // The web panel is a client of the HTTP API like any other: it never imports the server's code.
  // React's rules of hooks hold in it.
  {
    files: ['web/**/*.{ts,tsx}'],
    plugins: { 'react-hooks': reactHooks },
    rules: {
      ...reactHooks.configs['recommended-latest'].rules,
      'react-hooks/exhaustive-deps': 'error',
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              group: ['../../src/**', '../../../src/**', '../../../../src/**', 'node:*'],
              message: 'The panel uses only the public client API, over HTTP.',
            },
          ],
        },
      ],
    },
  },
  {
    files: ['bin/**/*.js', 'examples/**/*.mjs', 'eslint.config.js'],
    ...tseslint.configs.disableTypeChecked,
    languageOptions: {
      ...tseslint.configs.disableTypeChecked.languageOptions,
      globals: {
        URL: 'readonly',
        process: 'readonly',
        fetch: 'readonly',
        console: 'readonly',
        setTimeout: 'readonly',
      },
    },
  },
);
