import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { appRoot, buildOutputPath } from './build-output';

describe('build outputs', () => {
  let app: string;

  beforeAll(() => {
    app = mkdtempSync(join(tmpdir(), 'build-output-'));
    writeFileSync(join(app, 'package.json'), '{}');
    for (const dir of ['src/sandbox', 'dist/sandbox']) mkdirSync(join(app, dir), { recursive: true });
  });

  afterAll(() => rmSync(app, { recursive: true, force: true }));

  it('finds the app from its sources, from tsc output and from the bundle beside dist/main.js', () => {
    for (const from of [join(app, 'src/sandbox'), join(app, 'dist/sandbox'), join(app, 'dist'), app]) {
      expect(appRoot(from)).toBe(app);
      expect(buildOutputPath(from, 'connect-page/static')).toBe(join(app, 'dist/connect-page/static'));
    }
  });

  it('stops at the nearest package.json', () => {
    expect(appRoot(__dirname)).toBe(join(__dirname, '..'));
  });
});
