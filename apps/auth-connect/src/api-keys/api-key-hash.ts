import { createHash, randomUUID } from 'node:crypto';

/** Keys are random UUID v4s (the format Nango issues, so migrated keys keep working); only hashes are stored. */
export const hashApiKey = (key: string): string => createHash('sha256').update(key, 'utf8').digest('hex');
export const generateApiKey = (): string => randomUUID();
