import { readFileSync } from 'node:fs';
import { buildOutputPath } from '@switchboard/service-kit';

/**
 * A file that the build writes to the app's `dist/` (the sandbox library, the prelude): the same from the
 * sources (tests), tsc's output (`dist/sandbox/`) and the service's bundle (`dist/main.js`).
 */
export function readBuildOutput(file: string): string {
  return readFileSync(buildOutputPath(__dirname, file), 'utf8');
}
