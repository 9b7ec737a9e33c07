import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';

const roots = new Map<string, string>();

/**
 * The app's folder (the one holding its package.json), upwards from a module's directory (`__dirname`):
 * the same from the sources (`src/…`, tests), tsc's output (`dist/…`) and the service's bundle (`dist/`).
 */
export function appRoot(from: string): string {
  let root = roots.get(from);
  if (root === undefined) {
    let dir = from;
    while (!existsSync(join(dir, 'package.json'))) {
      const parent = dirname(dir);
      if (parent === dir) throw new Error(`no package.json above ${from}`);
      dir = parent;
    }
    root = dir;
    roots.set(from, root);
  }
  return root;
}

/**
 * Where the app's build wrote a file or folder (`relative` to its dist/), from any of its modules'
 * directories: tsc's output and the bundle do not sit at the same depth, and the sources not in dist/.
 */
export function buildOutputPath(from: string, relative: string): string {
  return join(appRoot(from), 'dist', relative);
}
