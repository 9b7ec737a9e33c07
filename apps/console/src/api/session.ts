import { createContext, useContext } from 'react';
import type { Scope } from '@switchboard/contracts';

export type Role = 'admin' | 'developer' | 'viewer';

/** `POST /console/api/sign-in` and `GET /console/api/me`. */
export interface ConsoleSession {
  user: { id: string; email: string; role: Role };
  csrf_token: string;
  environments: { name: string }[];
  scopes: Scope[];
}

export interface SessionContextValue {
  session: ConsoleSession;
  environment: string;
  setEnvironment(name: string): void;
  signOut(): Promise<void>;
  can(scope: Scope): boolean;
  traceUrl: string | null;
}

export const SessionContext = createContext<SessionContextValue | null>(null);

export function useSession(): SessionContextValue {
  const value = useContext(SessionContext);
  if (!value) throw new Error('useSession outside the signed-in layout');
  return value;
}
