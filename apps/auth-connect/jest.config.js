const preset = require('../../jest.preset.js');

// jose 6 is ESM-only. Node loads it through require(esm), but jest's CommonJS module registry cannot (on
// Node 24 either), so jest alone compiles it to CommonJS (the built service uses the package as published).
const ESM_ONLY = ['jose'];
const esmOnly = ESM_ONLY.map((name) => name.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')).join('|');

module.exports = {
  ...preset,
  transform: {
    ...preset.transform,
    [`/node_modules/(?:\\.pnpm/[^/]+/node_modules/)?(?:${esmOnly})/.+\\.js$`]: [
      '@swc/jest',
      { jsc: { target: 'es2022' }, module: { type: 'commonjs' } },
    ],
  },
  transformIgnorePatterns: [
    `/node_modules/(?!(?:\\.pnpm/(?:${esmOnly})@[^/]+/node_modules/)?(?:${esmOnly})/)`,
  ],
  testMatch: [
    '<rootDir>/src/**/*.spec.ts',
    '<rootDir>/src/**/*.int-spec.ts',
    '<rootDir>/test/**/*.e2e-spec.ts',
  ],
};
