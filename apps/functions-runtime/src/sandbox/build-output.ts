import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';

let appRoot: string | undefined;

/**
 * A file that the build writes to the app's `dist/` (the sandbox library, the prelude), read from this
 * module's folder upwards to the app's package.json: the same from the sources (tests), tsc's output
 * (`dist/sandbox/`) and the service's bundle (`dist/main.js`).
 */
export function readBuildOutput(file: string): string {
  if (!appRoot) {
    let dir = __dirname;
    while (!existsSync(join(dir, 'package.json')) && dirname(dir) !== dir) dir = dirname(dir);
    appRoot = dir;
  }
  return readFileSync(join(appRoot, 'dist', file), 'utf8');
}
