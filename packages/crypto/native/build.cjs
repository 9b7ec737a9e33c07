// Builds native/aead.c (node-gyp, against the headers of the Node that runs this: npm_config_nodedir, as
// for isolated-vm) and copies the addon to dist/native/aead.node, where src/native-aead.ts loads it from.
'use strict';
const { execFileSync } = require('node:child_process');
const { copyFileSync, existsSync, mkdirSync } = require('node:fs');
const { dirname, join } = require('node:path');

const here = __dirname;
const nodeGyp = require.resolve('node-gyp/bin/node-gyp.js');
// Without npm_config_nodedir, the headers installed beside this Node (an official build has them): node-gyp
// would otherwise try to download them.
const prefix = dirname(dirname(process.execPath));
const nodedir =
  !process.env.npm_config_nodedir && existsSync(join(prefix, 'include', 'node', 'node_api.h'))
    ? [`--nodedir=${prefix}`]
    : [];
try {
  execFileSync(process.execPath, [nodeGyp, 'rebuild', '--silent', ...nodedir], {
    cwd: here,
    stdio: 'inherit',
  });
} catch {
  console.error(
    '@switchboard/crypto: the AES-GCM addon (native/aead.c) did not build. It needs python3, make, a C ' +
      'compiler and the headers of this Node (npm_config_nodedir pointing at them, as scripts/setup.sh sets).',
  );
  process.exit(1);
}
mkdirSync(join(here, '..', 'dist', 'native'), { recursive: true });
copyFileSync(join(here, 'build', 'Release', 'aead.node'), join(here, '..', 'dist', 'native', 'aead.node'));
