// Bundles what runs inside every sandbox isolate (zod as the nango CLI ships it, URL, URLSearchParams,
// Buffer) into one plain script, dist/sandbox-lib.js. The runtime turns it into a V8 heap snapshot at
// boot, so a new isolate starts with it already evaluated.
import { mkdirSync } from 'node:fs';
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
