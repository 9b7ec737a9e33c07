import type { TwoStepCase } from './case';
import { CASES_A_TO_P } from './cases-a-to-p';
import { CASES_R_TO_Y } from './cases-r-to-y';

/** Every row, in the providers' alphabetical order. */
export const TWO_STEP_CASES: TwoStepCase[] = [...CASES_A_TO_P, ...CASES_R_TO_Y];

/** The TWO_STEP providers proven elsewhere (auth-modes.e2e-spec.ts, each with a case of its own). */
export const TWO_STEP_PROVEN_ELSEWHERE = [
  'connectsecure',
  'google-service-account',
  'perimeter81',
  'tripletex',
];
