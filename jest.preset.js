// Shared jest settings: swc keeps decorator metadata (Nest DI needs it) and is much faster than ts-jest.

// jose 6 is ESM-only. Node loads it through require(esm), but jest's CommonJS module registry cannot (on
// Node 24 either), so jest alone compiles it to CommonJS (built services use the package as published).
// Every package whose tests reach it (auth-connect, webhook-ingress and the apps embedding it) needs this;
// openid-client (and its oauth4webapi) likewise, for auth-connect's tests that load its console handlers.
const ESM_ONLY = ['jose', 'openid-client', 'oauth4webapi'];
const esmOnly = ESM_ONLY.map((name) => name.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')).join('|');

/** @type {import('jest').Config} */
module.exports = {
  testEnvironment: 'node',
  // npm test runs several packages and workers at once on two cores: a test that takes 1 s alone can take
  // ten times that meanwhile. A hung test still fails, later.
  testTimeout: 30_000,
  transform: {
    [`/node_modules/(?:\\.pnpm/[^/]+/node_modules/)?(?:${esmOnly})/.+\\.js$`]: [
      '@swc/jest',
      { jsc: { target: 'es2022' }, module: { type: 'commonjs' } },
    ],
    '^.+\\.ts$': [
      '@swc/jest',
      {
        jsc: {
          parser: { syntax: 'typescript', decorators: true },
          transform: { legacyDecorator: true, decoratorMetadata: true },
          target: 'es2022',
        },
        module: { type: 'commonjs' },
      },
    ],
  },
  transformIgnorePatterns: [
    `/node_modules/(?!(?:\\.pnpm/(?:${esmOnly})@[^/]+/node_modules/)?(?:${esmOnly})/)`,
  ],
  moduleFileExtensions: ['ts', 'js', 'json'],
  testPathIgnorePatterns: ['/node_modules/', '/dist/'],
  // `npm test` lists every failing test again at its very end (scripts/lib/failure-reporter.cjs).
  reporters: ['default', require.resolve('./scripts/lib/failure-reporter.cjs')],
};
