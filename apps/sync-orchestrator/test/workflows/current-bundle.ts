import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { DefaultLogger, type WorkflowBundle } from '@temporalio/worker';
import { bundleWorkflows, workflowBundlePath } from '../../src/temporal/workflow-bundle';

const SOURCES = join(__dirname, '../../src/workflows');
const BUILT = workflowBundlePath(join(__dirname, '../../dist'));

/**
 * The workflows as the worker runs them, for the replay and workflow tests. The build's bundle
 * (dist/workflow-bundle.js) when it was written after the last change to `src/workflows/`, as under
 * `npm test`, which builds first; otherwise the sources bundled now, the same way (webpack and swc take
 * tens of seconds: three test files would do it three times).
 */
export async function currentWorkflowBundle(): Promise<WorkflowBundle> {
  const newestSource = Math.max(
    ...readdirSync(SOURCES)
      .filter((name) => name.endsWith('.ts') && !/\.(int-)?spec\.ts$/.test(name))
      .map((name) => statSync(join(SOURCES, name)).mtimeMs),
  );
  const built = statSync(BUILT, { throwIfNoEntry: false });
  if (built && built.mtimeMs >= newestSource) return { code: readFileSync(BUILT, 'utf8') };
  return bundleWorkflows(require.resolve('../../src/workflows'), new DefaultLogger('WARN'));
}
