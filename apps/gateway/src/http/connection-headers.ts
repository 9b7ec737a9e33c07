import { connectionHeadersSchema } from '@switchboard/contracts';
import { createZodDto } from 'nestjs-zod';

/**
 * `Connection-Id` and `Provider-Config-Key`, both required: the connection a route acts on, as the
 * official client sends them (take it with `@RequestHeaders()`).
 */
export class ConnectionHeadersDto extends createZodDto(connectionHeadersSchema) {}
