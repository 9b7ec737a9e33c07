import { Module } from '@nestjs/common';
import { RecordsModule } from '../records/records.module';
import { RecordsStore } from '@switchboard/records-store';
import { SyncsHandlers } from './syncs.handlers';
import { SyncsService } from './syncs.service';
import { SYNC_RECORDS } from './sync-records';

/** Syncs, their schedules on Temporal and the sync API. The records store answers counts and deletes. */
@Module({
  imports: [RecordsModule],
  controllers: [SyncsHandlers],
  providers: [SyncsService, { provide: SYNC_RECORDS, useExisting: RecordsStore }],
  exports: [SyncsService],
})
export class SyncsModule {}
