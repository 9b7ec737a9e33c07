import { readBuildOutput } from './build-output';

/**
 * The script evaluated in every run's fresh context before the function bundle: src/sandbox/prelude/
 * (its index.ts says what it does), bundled by scripts/build-sandbox-lib.mjs into `dist/prelude.js`.
 * Its completion value is the control function the host keeps a reference to.
 */
let source: string | undefined;
export function preludeSource(): string {
  source ??= readBuildOutput('prelude.js');
  return source;
}
