import { Catch, type ArgumentsHost, type ExceptionFilter } from '@nestjs/common';
import { SwitchboardError, type ErrorCode } from '@switchboard/contracts';
import type { FastifyReply } from 'fastify';
import { errorBody } from './error-reply';
import { ErrorsFilter } from './errors.filter';

/**
 * Nango answers a few codes with another status on some routes than `error-status.ts` gives them (e.g.
 * `unknown_connection` is 400 on `/records` and the sync routes, 404 elsewhere). A controller names its
 * exceptions with `@UseFilters(new CodeStatusFilter({...}))`; everything else goes through the one table.
 */
@Catch()
export class CodeStatusFilter implements ExceptionFilter {
  private readonly fallback = new ErrorsFilter();

  constructor(private readonly statuses: Partial<Record<ErrorCode, number>>) {}

  catch(exception: unknown, host: ArgumentsHost): void {
    const status = exception instanceof SwitchboardError ? this.statuses[exception.code] : undefined;
    if (exception instanceof SwitchboardError && status !== undefined) {
      void host
        .switchToHttp()
        .getResponse<FastifyReply>()
        .status(status)
        .type('application/json')
        .send(errorBody(exception.code, exception.message, exception.errors, exception.payload));
      return;
    }
    this.fallback.catch(exception, host);
  }
}
