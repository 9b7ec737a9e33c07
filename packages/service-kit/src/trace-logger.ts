import { ConsoleLogger, type LogLevel } from '@nestjs/common';
import { currentSpanIds } from '@switchboard/observability';

interface JsonLogLine {
  level: LogLevel;
  pid: number;
  timestamp: number;
  message: unknown;
  context?: string;
  stack?: unknown;
  trace_id?: string;
  span_id?: string;
}

/**
 * Nest's console logger with the active span's `trace_id` and `span_id` on every line written inside a
 * span (a JSON field each, or ` trace_id=… span_id=…` at the end of a pretty line), so a log line leads
 * to its trace and back. Outside a span the lines are Nest's own.
 */
export class TraceLogger extends ConsoleLogger {
  protected override getJsonLogObject(
    message: unknown,
    options: {
      context: string;
      logLevel: LogLevel;
      writeStreamType?: 'stdout' | 'stderr';
      errorStack?: unknown;
    },
  ): JsonLogLine {
    const line: JsonLogLine = super.getJsonLogObject(message, options);
    const ids = currentSpanIds();
    if (ids) {
      line.trace_id = ids.traceId;
      line.span_id = ids.spanId;
    }
    return line;
  }

  protected override formatMessage(
    logLevel: LogLevel,
    message: unknown,
    pidMessage: string,
    formattedLogLevel: string,
    contextMessage: string,
    timestampDiff: string,
  ): string {
    const line = super.formatMessage(
      logLevel,
      message,
      pidMessage,
      formattedLogLevel,
      contextMessage,
      timestampDiff,
    );
    const ids = currentSpanIds();
    if (!ids || !line.endsWith('\n')) return line;
    return `${line.slice(0, -1)} trace_id=${ids.traceId} span_id=${ids.spanId}\n`;
  }
}
