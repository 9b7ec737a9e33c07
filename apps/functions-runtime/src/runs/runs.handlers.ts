import { Controller } from '@nestjs/common';
import { type FunctionRunRequest, type FunctionRunResult, FUNCTIONS_REQUESTS } from '@switchboard/contracts';
import { NatsHandler } from '@switchboard/messaging';
import { RunsService } from './runs.service';

@Controller()
export class RunsHandlers {
  constructor(private readonly runs: RunsService) {}

  /** orchestrator → runtime: run one invocation; a script's failure is an answer, not an error. */
  @NatsHandler(FUNCTIONS_REQUESTS.run)
  run(req: FunctionRunRequest): Promise<FunctionRunResult> {
    return this.runs.run(req);
  }
}
