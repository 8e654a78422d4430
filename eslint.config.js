import js from '@eslint/js';
import tseslint from 'typescript-eslint';
import reactHooks from 'eslint-plugin-react-hooks';

export default tseslint.config(
  { ignores: ['node_modules/', 'dist/', 'data/', 'coverage/'] },
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
    files: ['src/{activity,api-keys,auth,backups,servers,users,ops,metrics}/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        { patterns: [{ group: ['**/http/**'], message: 'Features do not import the HTTP layer.' }] },
      ],
    },
  },
  {
    files: ['src/{shared,jobs,storage}/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              group: ['**/{http,activity,api-keys,auth,backups,servers,users}/**'],
              message: 'shared/, jobs/ and storage/ sit below the features and the HTTP layer.',
            },
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
