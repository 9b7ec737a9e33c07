// Type-aware lint for the whole workspace (`pnpm lint`, run by `npm test`). Only rules that catch bugs
// or keep imports honest; formatting is Prettier's job (`pnpm format:check`).
import importX from 'eslint-plugin-import-x';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  {
    ignores: [
      '**/dist/**',
      '**/node_modules/**',
      '**/coverage/**',
      '**/.turbo/**',
      '.data/**',
      'packages/db/src/generated/**',
      // Bundles compiled by the nango CLI and the TypeScript they were compiled from (its own project).
      'apps/functions-runtime/test/fixtures/**',
      'e2e/fixtures/**',
    ],
  },
  // Resolves and parses TypeScript imports (eslint-import-resolver-typescript) so import-x can follow them.
  { ...importX.flatConfigs.typescript, files: ['**/*.ts', '**/*.tsx'] },
  {
    files: ['**/*.ts', '**/*.tsx'],
    languageOptions: {
      parser: tseslint.parser,
      // One program for the workspace (tsconfig.eslint.json), the console's own for its files.
      parserOptions: {
        project: ['./tsconfig.eslint.json', './apps/console/tsconfig.json'],
        tsconfigRootDir: import.meta.dirname,
      },
    },
    linterOptions: { reportUnusedDisableDirectives: 'error' },
    plugins: { '@typescript-eslint': tseslint.plugin },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': 'error',
      '@typescript-eslint/await-thenable': 'error',
      '@typescript-eslint/switch-exhaustiveness-check': [
        'error',
        { considerDefaultExhaustiveForUnions: true, requireDefaultForNonUnion: false },
      ],
      // Nest injects by the constructor parameter's runtime class: with emitDecoratorMetadata the rule
      // (type-aware) leaves decorated files' injected imports alone.
      '@typescript-eslint/consistent-type-imports': ['error', { fixStyle: 'inline-type-imports' }],
      '@typescript-eslint/no-import-type-side-effects': 'error',
      'import-x/no-cycle': ['error', { ignoreExternal: true }],
      // Imports, variables and parameters left behind by a change (a leading _ marks one kept on purpose).
      '@typescript-eslint/no-unused-vars': [
        'error',
        { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrors: 'none', ignoreRestSiblings: true },
      ],
    },
  },
  // No function over 80 lines (blank lines and comments aside) in the services' and packages' source: a
  // longer one is split, or says why it reads best whole in its disable comment. Not for tests (a
  // describe block holds its cases), test support under test/, benches, generated code, or the console,
  // a React front-end whose components are JSX trees rather than a service's TypeScript.
  {
    files: ['apps/*/src/**/*.ts', 'packages/*/src/**/*.ts'],
    ignores: ['**/*.spec.ts', '**/*.int-spec.ts', '**/*.e2e-spec.ts', 'apps/console/**'],
    rules: {
      'max-lines-per-function': ['error', { max: 80, skipBlankLines: true, skipComments: true }],
    },
  },
  // A NATS request by subject alone skips the definition's types and its check: services use `call`.
  {
    files: ['**/*.ts'],
    ignores: [
      '**/*.spec.ts',
      '**/*.int-spec.ts',
      '**/*.e2e-spec.ts',
      'packages/messaging/src/nats-requester.ts',
    ],
    rules: {
      'no-restricted-syntax': [
        'error',
        {
          selector: "MemberExpression[property.name='requestUnchecked']",
          message: 'Send a defined request with NatsRequester.call(definition, payload).',
        },
      ],
    },
  },
);
