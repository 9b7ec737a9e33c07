// Imported first by service.ts so http, pg and Nest are patched before they load.
import { startTracing } from '@switchboard/observability';

startTracing('sync-orchestrator');
