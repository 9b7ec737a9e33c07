/**
 * TWO_STEP providers (a token obtained by a first call with the connect form's fields), each described
 * once, as its public docs describe it: the token call it expects, the answer it gives, where its API
 * wants the token. One HTTPS fake on loopback serves all of them under `/<provider>/...`; the real catalog
 * entries are used with only their origins pointed at it, so a wrong path, parameter, header or token
 * placement in the catalog shows up as a difference from the row.
 */

export { type RecordedCall, type TokenPlacement, type TwoStepCase, TWO_STEP_TTL_SECONDS } from './case';
export { TWO_STEP_CASES, TWO_STEP_PROVEN_ELSEWHERE } from './cases';
export { HEYMARKET, type TwoStepFake, presentedToken, startTwoStepFake } from './fake';
export {
  catalogEntry,
  catalogTwoStepProviders,
  proxiedEndpoint,
  realOrigins,
  twoStepProvidersYaml,
} from './catalog';
