// Builds the two scripts every sandbox context evaluates, both plain scripts for an isolate with no Node:
//
// - dist/sandbox-lib.js: the library (zod as the nango CLI ships it, URL, URLSearchParams, Buffer). The
//   runtime turns it into a V8 heap snapshot at boot, so a new isolate starts with it already evaluated.
// - dist/prelude.js: src/sandbox/prelude/ (TypeScript, type-checked and linted with the app), a script
//   whose completion value is the prelude's control function and which leaves no global name behind.
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const app = join(dirname(fileURLToPath(import.meta.url)), '..');
mkdirSync(join(app, 'dist'), { recursive: true });
await build({
  entryPoints: [join(app, 'sandbox-lib/entry.js')],
  outfile: join(app, 'dist/sandbox-lib.js'),
  bundle: true,
  format: 'iife',
  platform: 'neutral',
  mainFields: ['main', 'module'],
  target: 'es2022',
  minify: true,
  legalComments: 'none',
  logLevel: 'warning',
});

// Not minified: a script's stack trace through the prelude stays readable.
const prelude = await build({
  entryPoints: [join(app, 'src/sandbox/prelude/index.ts')],
  write: false,
  bundle: true,
  format: 'iife',
  globalName: 'prelude',
  platform: 'neutral',
  target: 'es2022',
  legalComments: 'none',
  logLevel: 'warning',
});
// The IIFE's `var prelude` is local to this function, whose value completes the script.
const code = prelude.outputFiles[0].text;
writeFileSync(join(app, 'dist/prelude.js'), `(function () {\n${code}\nreturn prelude.control;\n})();\n`);
