// What both test files need: where helm and the chart's validator are, and how to run them.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, readdirSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const helmDir = join(dirname(fileURLToPath(import.meta.url)), '..');
export const root = join(helmDir, '../..');
export const chart = join(helmDir, 'switchboard');
const validateDir = join(helmDir, 'validate');
const toolsDir = process.env.SWITCHBOARD_TOOLS_DIR ?? join(homedir(), '.cache/switchboard/tools');
const common = readFileSync(join(root, 'scripts/lib/common.sh'), 'utf8');
export const helmVersion = /^HELM_VERSION=(\S+)/m.exec(common)?.[1];
export const helm = process.env.SWITCHBOARD_HELM_BIN ?? join(toolsDir, `helm-${helmVersion}`, 'helm');
export const helmBuilt = existsSync(helm);
// helm built by `go install` has no cluster version stamped in (it would assume 1.20): name one.
export const KUBE = ['--kube-version', '1.33.0'];

export function run(cmd, args, options = {}) {
  const r = spawnSync(cmd, args, { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024, ...options });
  if (r.error) throw r.error;
  return r;
}

/** The validator's build, keyed by its sources (the same key as ensure_helm_validator in common.sh). */
export function validatorBin() {
  const sources = [
    'go.mod',
    'go.sum',
    ...readdirSync(validateDir)
      .filter((f) => f.endsWith('.go'))
      .sort(),
  ];
  const hash = createHash('sha256');
  for (const f of sources) hash.update(readFileSync(join(validateDir, f)));
  const bin = join(toolsDir, `helm-validate-${hash.digest('hex').slice(0, 12)}`, 'validate');
  if (!existsSync(bin)) {
    mkdirSync(dirname(bin), { recursive: true });
    const built = spawnSync('go', ['build', '-o', bin, '.'], {
      cwd: validateDir,
      encoding: 'utf8',
      env: { ...process.env, PATH: `/usr/local/go/bin:${process.env.PATH}` },
    });
    assert.equal(built.status, 0, `go build of infra/helm/validate failed:\n${built.stderr}`);
  }
  return bin;
}
