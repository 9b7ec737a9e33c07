{{/*
Names and labels.
*/}}
{{- define "switchboard.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "switchboard.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{- define "switchboard.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Labels every object carries. */}}
{{- define "switchboard.labels" -}}
helm.sh/chart: {{ include "switchboard.chart" . }}
app.kubernetes.io/name: {{ include "switchboard.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: switchboard
{{- end }}

{{/* Selector of one component: (dict "root" $ "component" "gateway"). */}}
{{- define "switchboard.selectorLabels" -}}
app.kubernetes.io/name: {{ include "switchboard.name" .root }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end }}

{{/* Labels of one component's objects: (dict "root" $ "component" "gateway" "version" "1.2.3"). */}}
{{- define "switchboard.componentLabels" -}}
{{ include "switchboard.labels" .root }}
app.kubernetes.io/component: {{ .component }}
{{- with .version }}
app.kubernetes.io/version: {{ . | quote }}
{{- end }}
{{- end }}

{{/* Object name of a component: <fullname>-<component>, at most 63 characters. */}}
{{- define "switchboard.componentName" -}}
{{- printf "%s-%s" (include "switchboard.fullname" .root) .component | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "switchboard.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "switchboard.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/*
What each service is, from its code (not configuration): its name and NATS user, its ports, which
secrets and engines it needs, and whether it calls providers. Keys are the values' keys.
  database      DATABASE_URL (Postgres)           masterKeys     SWITCHBOARD_MASTER_KEYS
  temporal      TEMPORAL_* (Temporal frontend)    redis          REDIS_URL
  internalToken SWITCHBOARD_INTERNAL_TOKEN        publicUrls     SWITCHBOARD_SERVER_URL / _CONNECT_URL
  providerEgress  makes outbound HTTP to providers or customers (NetworkPolicy to the Internet)
  proxyClient   calls the proxy service over HTTP (NetworkPolicy to it)
  http          serves /health and /ready on `port`
*/}}
{{- define "switchboard.components" -}}
gateway:
  name: gateway
  port: 3003
  http: true
  redis: true
  publicUrls: true
  internalToken: true
  providerEgress: true
  proxyClient: true
authConnect:
  name: auth-connect
  port: 3010
  connectPort: 3009
  http: true
  database: true
  masterKeys: true
  publicUrls: true
  providerEgress: true
connectionsVault:
  name: connections-vault
  port: 3011
  http: true
  database: true
  masterKeys: true
proxy:
  name: proxy
  port: 3012
  http: true
  redis: true
  internalToken: true
  providerEgress: true
functionsRuntime:
  name: functions-runtime
  port: 3013
  http: true
  publicUrls: true
  internalToken: true
  proxyClient: true
syncOrchestrator:
  name: sync-orchestrator
  port: 3014
  http: true
  database: true
  masterKeys: true
  temporal: true
syncOrchestratorWorker:
  name: sync-orchestrator-worker
  http: false
  database: true
  masterKeys: true
  temporal: true
  command: ["node", "dist/worker.js"]
webhookRelay:
  name: webhook-relay
  port: 3015
  http: true
  database: true
  masterKeys: true
  publicUrls: true
  providerEgress: true
{{- end }}

{{/* The NATS password variable of a user: gateway -> NATS_PASSWORD_GATEWAY (scripts/lib/nats-config.mjs). */}}
{{- define "switchboard.natsPasswordKey" -}}
{{- printf "NATS_PASSWORD_%s" (. | upper | replace "-" "_") }}
{{- end }}

{{/* Every NATS user of files/nats.conf. */}}
{{- define "switchboard.natsUsers" -}}
gateway auth-connect connections-vault proxy functions-runtime sync-orchestrator sync-orchestrator-worker webhook-relay admin
{{- end }}

{{- define "switchboard.image" -}}
{{- $tag := default .root.Chart.AppVersion .image.tag }}
{{- if .root.Values.image.registry }}
{{- printf "%s/%s:%s" .root.Values.image.registry .image.repository $tag }}
{{- else }}
{{- printf "%s:%s" .image.repository $tag }}
{{- end }}
{{- end }}

{{/* Secret names: the existing one when named, else the chart's. */}}
{{- define "switchboard.keysSecretName" -}}
{{- default (printf "%s-keys" (include "switchboard.fullname" .)) .Values.secrets.existingSecret }}
{{- end }}

{{- define "switchboard.natsSecretName" -}}
{{- default (printf "%s-nats" (include "switchboard.fullname" .)) .Values.nats.auth.existingSecret }}
{{- end }}

{{- define "switchboard.databaseSecretName" -}}
{{- if .Values.dev.postgres.enabled }}
{{- printf "%s-database" (include "switchboard.fullname" .) }}
{{- else if .Values.database.existingSecret }}
{{- .Values.database.existingSecret }}
{{- else }}
{{- fail "database.existingSecret must name a Secret holding the Postgres URL (or turn on dev.postgres: values-dev.yaml)" }}
{{- end }}
{{- end }}

{{- define "switchboard.databaseSecretKey" -}}
{{- if .Values.dev.postgres.enabled }}DATABASE_URL{{ else }}{{ .Values.database.existingSecretKey }}{{ end }}
{{- end }}

{{- define "switchboard.configName" -}}
{{- printf "%s-config" (include "switchboard.fullname" .) }}
{{- end }}

{{/*
A value of a Secret the chart generates: the one already in the cluster when there is one (so upgrades
keep it), else `default`. (dict "root" $ "name" secretName "key" key "default" value)
*/}}
{{- define "switchboard.keepSecretValue" -}}
{{- $existing := lookup "v1" "Secret" .root.Release.Namespace .name }}
{{- if and $existing $existing.data (hasKey $existing.data .key) }}
{{- index $existing.data .key }}
{{- else }}
{{- .default | b64enc }}
{{- end }}
{{- end }}

{{/* Pod-level settings shared by Deployments and Jobs. */}}
{{- define "switchboard.podSecurity" -}}
securityContext:
  {{- toYaml .Values.podSecurityContext | nindent 2 }}
{{- with .Values.imagePullSecrets }}
imagePullSecrets:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end }}

{{/* The writable /tmp every container gets (the root filesystem is read-only). */}}
{{- define "switchboard.tmpVolume" -}}
- name: tmp
  emptyDir:
    sizeLimit: 256Mi
{{- end }}

{{- define "switchboard.tmpMount" -}}
- name: tmp
  mountPath: /tmp
{{- end }}

{{/* One NetworkPolicy egress rule: (dict "rule" {ports, to} "udp" bool). An empty `to` allows any address on those ports. */}}
{{- define "switchboard.egressRule" -}}
- ports:
    {{- range .rule.ports }}
    - port: {{ . }}
      protocol: TCP
    {{- if $.udp }}
    - port: {{ . }}
      protocol: UDP
    {{- end }}
    {{- end }}
  {{- with .rule.to }}
  to:
    {{- toYaml . | nindent 4 }}
  {{- end }}
{{- end }}

{{/* The in-cluster development engines (dev-engines.yaml): container security, Deployment head, Service. */}}
{{- define "switchboard.devEngineSecurity" -}}
allowPrivilegeEscalation: false
readOnlyRootFilesystem: {{ .readOnly }}
runAsNonRoot: true
runAsUser: {{ .uid }}
runAsGroup: {{ .uid }}
capabilities:
  drop: [ALL]
seccompProfile:
  type: RuntimeDefault
{{- end }}
{{- define "switchboard.devEngineHead" -}}
{{- $ctx := dict "root" .root "component" .component }}
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ include "switchboard.componentName" $ctx }}
  labels:
    {{- include "switchboard.componentLabels" $ctx | nindent 4 }}
spec:
  replicas: 1
  strategy:
    type: Recreate
  selector:
    matchLabels:
      {{- include "switchboard.selectorLabels" $ctx | nindent 6 }}
  template:
    metadata:
      labels:
        {{- include "switchboard.componentLabels" $ctx | nindent 8 }}
    spec:
      automountServiceAccountToken: false
      securityContext:
        runAsNonRoot: true
        runAsUser: {{ .uid }}
        runAsGroup: {{ .uid }}
        fsGroup: {{ .uid }}
        seccompProfile:
          type: RuntimeDefault
{{- end }}
{{- define "switchboard.devEngineService" -}}
{{- $ctx := dict "root" .root "component" .component }}
apiVersion: v1
kind: Service
metadata:
  name: {{ include "switchboard.componentName" $ctx }}
  labels:
    {{- include "switchboard.componentLabels" $ctx | nindent 4 }}
spec:
  selector:
    {{- include "switchboard.selectorLabels" $ctx | nindent 4 }}
  ports:
    - name: {{ .portName }}
      port: {{ .port }}
      targetPort: {{ .port }}
      protocol: TCP
{{- end }}

{{/* Engine addresses: the in-cluster development ones when they are on, else the values'. */}}
{{- define "switchboard.natsUrl" -}}
{{- if .Values.dev.nats.enabled }}nats://{{ include "switchboard.fullname" . }}-nats:4222{{ else }}{{ .Values.nats.url }}{{ end }}
{{- end }}

{{- define "switchboard.temporalAddress" -}}
{{- if .Values.dev.temporal.enabled }}{{ include "switchboard.fullname" . }}-temporal:7233{{ else }}{{ .Values.temporal.address }}{{ end }}
{{- end }}

{{- define "switchboard.redisUrl" -}}
{{- if .Values.dev.redis.enabled }}redis://{{ include "switchboard.fullname" . }}-redis:6379{{ else }}{{ .Values.redis.url }}{{ end }}
{{- end }}
