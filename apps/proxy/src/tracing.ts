// Imported first by service.ts so http, pg and Nest are patched before they load.
import { startTracing } from '@switchboard/observability';

// The engine's provider calls make their own client spans (startClientSpan).
startTracing('proxy', { undici: false });
