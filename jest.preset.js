// Shared jest settings: swc keeps decorator metadata (Nest DI needs it) and is much faster than ts-jest.
/** @type {import('jest').Config} */
module.exports = {
  testEnvironment: 'node',
  transform: {
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
  moduleFileExtensions: ['ts', 'js', 'json'],
  testPathIgnorePatterns: ['/node_modules/', '/dist/'],
  // `npm test` lists every failing test again at its very end (scripts/lib/failure-reporter.cjs).
  reporters: ['default', require.resolve('./scripts/lib/failure-reporter.cjs')],
};
