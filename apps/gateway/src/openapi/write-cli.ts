// `pnpm --filter @switchboard/gateway run openapi:write`: regenerates the checked-in document.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { buildOpenApiDocument } from './document';

const target = join(__dirname, '../../openapi/openapi.json');
writeFileSync(target, `${JSON.stringify(buildOpenApiDocument(), null, 2)}\n`);
process.stdout.write(`wrote ${target}\n`);
