export {
  BUILT_IN_CATALOG_PATH,
  PROVIDERS_FILE_ENV,
  loadCatalog,
  type LoadCatalogOptions,
  type ProviderCatalog,
  type ResolvedProvider,
} from './catalog';
export {
  CATALOG_ERROR_CODES,
  type CatalogErrorCode,
  type CatalogProblem,
  ProviderCatalogError,
  formatProblem,
} from './catalog.errors';
export {
  CORE_PROVIDERS,
  MIN_PROVIDER_COUNT,
  REQUIRED_PROVIDERS_PATH,
  coverageProblems,
  requiredProviderKeys,
} from './coverage';
export {
  AUTH_MODES,
  type AuthMode,
  type FormField,
  FormFieldSchema,
  type ProviderCatalogFile,
  ProviderCatalogFileSchema,
  type ProviderDefinition,
  ProviderDefinitionSchema,
  type ProviderEntry,
  ProviderEntrySchema,
  type PostConnectCall,
  PostConnectCallSchema,
  providerFilledKeys,
  urlTemplateProblem,
} from './schema';
export {
  type WebhookDefinition,
  type WebhookHandshake,
  type WebhookRoutingRule,
  type WebhookSignature,
  type WebhookValueSource,
  DIGEST_ALGORITHMS,
  HMAC_ALGORITHMS,
  PUBLIC_KEY_ALGORITHMS,
  publicKeyFits,
  readPublicKey,
  WebhookRoutingRuleSchema,
  WebhookSchema,
} from './webhook-schema';
export {
  FOREIGN_HOST_PROBES,
  connectionConfigValueProblems,
  hostFieldNames,
  hostFieldProblems,
  hostValueAllowed,
  mustPinHosts,
  originPlaceholders,
  originTemplates,
  type HostFieldShape,
  type HostFieldsProviderShape,
} from './host-fields';
