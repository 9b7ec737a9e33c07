// Imported first by main.ts so http, Fastify and Nest are patched before they load.
import { startTracing } from '@switchboard/observability';

startTracing('gateway');
