import { z } from 'zod';
import { natsRequest } from './nats-request';
import { callerSchema } from './context';

export const ENVIRONMENT_VARIABLE_SUBJECTS = {
  list: 'auth.v1.environment-variables.list',
  replace: 'auth.v1.environment-variables.replace',
} as const;

export const environmentVariableSchema = z
  .object({
    name: z
      .string()
      .min(1)
      .max(256)
      .regex(
        /^[A-Za-z_][A-Za-z0-9_]*$/,
        'must start with a letter or "_" and hold only letters, digits and "_"',
      ),
    value: z.string().max(4096),
  })
  .strict()
  .meta({ id: 'EnvironmentVariable' });
export type EnvironmentVariable = z.infer<typeof environmentVariableSchema>;

/** `PUT /environment-variables` replaces the whole set (names unique, at most 100). */
export const replaceEnvironmentVariablesBodySchema = z
  .object({
    variables: z
      .array(environmentVariableSchema)
      .max(100)
      .refine(
        (vars) => new Set(vars.map((v) => v.name)).size === vars.length,
        'variable names must be unique',
      ),
  })
  .strict()
  .meta({ id: 'ReplaceEnvironmentVariablesBody' });

export const listEnvironmentVariablesRequestSchema = z.object({ caller: callerSchema });
export const replaceEnvironmentVariablesRequestSchema = z.object({
  caller: callerSchema,
  body: replaceEnvironmentVariablesBodySchema,
});

/** An environment's variables (auth-connect answers). */
export const ENVIRONMENT_VARIABLE_REQUESTS = {
  list: natsRequest({
    subject: ENVIRONMENT_VARIABLE_SUBJECTS.list,
    request: listEnvironmentVariablesRequestSchema,
    reply: z.array(environmentVariableSchema),
  }),
  replace: natsRequest({
    subject: ENVIRONMENT_VARIABLE_SUBJECTS.replace,
    request: replaceEnvironmentVariablesRequestSchema,
    reply: z.array(environmentVariableSchema),
  }),
};
