// zod 4 attaches methods per instance, so the OpenAPI extension only reaches schemas created after it
// runs. Import this module before anything that builds schemas (service.ts and the OpenAPI tests do).
import { extendZodWithOpenApi } from '@asteasolutions/zod-to-openapi';
import { z } from 'zod';

extendZodWithOpenApi(z);
