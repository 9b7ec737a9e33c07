import { Controller } from '@nestjs/common';
import {
  FUNCTIONS_SUBJECTS,
  functionRunRequestSchema,
  type FunctionRunRequest,
  type FunctionRunResult,
} from '@switchboard/contracts';
import { NatsHandler } from '@switchboard/messaging';
import { RunsService } from './runs.service';

@Controller()
export class RunsHandlers {
  constructor(private readonly runs: RunsService) {}

  /** orchestrator → runtime: run one invocation; a script's failure is an answer, not an error. */
  @NatsHandler(FUNCTIONS_SUBJECTS.run, functionRunRequestSchema)
  run(req: FunctionRunRequest): Promise<FunctionRunResult> {
    return this.runs.run(req);
  }
}
