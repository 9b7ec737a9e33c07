import { Module } from '@nestjs/common';
import { ConnectPageServer } from './connect-page.server';

@Module({ providers: [ConnectPageServer] })
export class ConnectPageModule {}
