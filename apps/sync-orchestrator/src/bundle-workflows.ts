import { writeFile } from 'node:fs/promises';
import { DefaultLogger } from '@temporalio/worker';
import { bundleWorkflows, workflowBundlePath } from './temporal/workflow-bundle';

/**
 * The build's last step (`pnpm build`): bundles dist/workflows/ into dist/workflow-bundle.js, which the
 * worker loads at start. The bundle is rebuilt with every build, so it never lags behind the workflows.
 */
async function main(): Promise<void> {
  const { code } = await bundleWorkflows(require.resolve('./workflows'), new DefaultLogger('WARN'));
  const path = workflowBundlePath(__dirname);
  await writeFile(path, code);
  process.stdout.write(`workflow bundle: ${path} (${Math.round(code.length / 1024)} KiB)\n`);
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
