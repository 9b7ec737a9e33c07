// Imported first by service.ts so http, Fastify and Nest are patched before they load.
import { startTracing } from '@switchboard/observability';

// Its provider calls and its relay to the proxy service make their own client spans (startClientSpan).
startTracing('gateway', { undici: false });
