import { z } from 'zod';

/** Who is calling, as resolved by the gateway from the API key; sent with every command. */
export const callerSchema = z.object({
  accountId: z.number().int(),
  environmentId: z.number().int(),
  environmentUuid: z.string().uuid(),
  environmentName: z.string(),
  keyId: z.number().int().optional(),
});
export type Caller = z.infer<typeof callerSchema>;
