import { join } from 'node:path';
import { bundleWorkflowCode, type Logger, type WorkflowBundle } from '@temporalio/worker';
import { WORKFLOW_INTERCEPTOR_MODULES } from './tracing';

/**
 * The file the build writes the workflow bundle to, beside `worker.js` in dist/; the worker loads it with
 * `workflowBundle` instead of bundling `workflows/` (webpack and swc) at every start.
 */
export const WORKFLOW_BUNDLE_FILE = 'workflow-bundle.js';

/**
 * `workflows/` with everything the sandbox runs (the OpenTelemetry workflow interceptors), as the worker
 * runs it. The build writes it to dist/; the replay and workflow tests load that file, or bundle the sources
 * the same way when they changed after the build (test/workflows/current-bundle.ts).
 */
export function bundleWorkflows(workflowsPath: string, logger?: Logger): Promise<WorkflowBundle> {
  return bundleWorkflowCode({
    workflowsPath,
    workflowInterceptorModules: WORKFLOW_INTERCEPTOR_MODULES,
    ...(logger ? { logger } : {}),
  });
}

/** Where the build put the bundle, from a module compiled into dist/ (its directory is `distDir`). */
export const workflowBundlePath = (distDir: string) => join(distDir, WORKFLOW_BUNDLE_FILE);
