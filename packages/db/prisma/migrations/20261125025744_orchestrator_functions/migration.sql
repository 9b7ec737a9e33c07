-- CreateSchema
CREATE SCHEMA IF NOT EXISTS "orchestrator";

-- CreateTable
CREATE TABLE "orchestrator"."functions" (
    "id" SERIAL NOT NULL,
    "environment_id" INTEGER NOT NULL,
    "provider_config_key" TEXT NOT NULL,
    "name" TEXT NOT NULL,
    "type" TEXT NOT NULL,
    "event" TEXT,
    "enabled" BOOLEAN NOT NULL DEFAULT true,
    "source" TEXT NOT NULL DEFAULT 'repo',
    "current_version_id" UUID,
    "last_deployed_at" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "created_at" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMP(3) NOT NULL,

    CONSTRAINT "functions_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "orchestrator"."function_versions" (
    "id" UUID NOT NULL,
    "function_id" INTEGER,
    "version" TEXT NOT NULL,
    "code_js" TEXT NOT NULL,
    "code_ts" TEXT,
    "sha256" TEXT NOT NULL,
    "config" JSONB NOT NULL,
    "created_at" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "function_versions_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "orchestrator"."invocations" (
    "id" UUID NOT NULL,
    "environment_id" INTEGER NOT NULL,
    "function_id" INTEGER,
    "version_id" UUID NOT NULL,
    "function_name" TEXT NOT NULL,
    "function_type" TEXT NOT NULL,
    "provider_config_key" TEXT NOT NULL,
    "connection_id" TEXT NOT NULL,
    "status" TEXT NOT NULL DEFAULT 'running',
    "async" BOOLEAN NOT NULL DEFAULT false,
    "max_retries" INTEGER NOT NULL DEFAULT 0,
    "attempts" INTEGER NOT NULL DEFAULT 0,
    "output" JSONB,
    "error" JSONB,
    "created_at" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "started_at" TIMESTAMP(3),
    "finished_at" TIMESTAMP(3),

    CONSTRAINT "invocations_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "orchestrator"."invocation_logs" (
    "id" BIGSERIAL NOT NULL,
    "invocation_id" UUID NOT NULL,
    "attempt" INTEGER NOT NULL,
    "level" TEXT NOT NULL,
    "message" TEXT NOT NULL,
    "at" TIMESTAMP(3) NOT NULL,

    CONSTRAINT "invocation_logs_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "orchestrator"."function_checkpoints" (
    "environment_id" INTEGER NOT NULL,
    "connection_id" TEXT NOT NULL,
    "provider_config_key" TEXT NOT NULL,
    "function_name" TEXT NOT NULL,
    "variant" TEXT NOT NULL DEFAULT 'base',
    "checkpoint" JSONB NOT NULL,
    "updated_at" TIMESTAMP(3) NOT NULL,

    CONSTRAINT "function_checkpoints_pkey" PRIMARY KEY ("environment_id","provider_config_key","connection_id","function_name","variant")
);

-- CreateIndex
CREATE UNIQUE INDEX "functions_current_version_id_key" ON "orchestrator"."functions"("current_version_id");

-- CreateIndex
CREATE INDEX "functions_environment_id_type_idx" ON "orchestrator"."functions"("environment_id", "type");

-- CreateIndex
CREATE UNIQUE INDEX "functions_environment_id_provider_config_key_type_name_key" ON "orchestrator"."functions"("environment_id", "provider_config_key", "type", "name");

-- CreateIndex
CREATE INDEX "function_versions_function_id_idx" ON "orchestrator"."function_versions"("function_id");

-- CreateIndex
CREATE INDEX "invocations_environment_id_created_at_idx" ON "orchestrator"."invocations"("environment_id", "created_at");

-- CreateIndex
CREATE INDEX "invocation_logs_invocation_id_id_idx" ON "orchestrator"."invocation_logs"("invocation_id", "id");

-- AddForeignKey
ALTER TABLE "orchestrator"."functions" ADD CONSTRAINT "functions_current_version_id_fkey" FOREIGN KEY ("current_version_id") REFERENCES "orchestrator"."function_versions"("id") ON DELETE SET NULL ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "orchestrator"."function_versions" ADD CONSTRAINT "function_versions_function_id_fkey" FOREIGN KEY ("function_id") REFERENCES "orchestrator"."functions"("id") ON DELETE SET NULL ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "orchestrator"."invocation_logs" ADD CONSTRAINT "invocation_logs_invocation_id_fkey" FOREIGN KEY ("invocation_id") REFERENCES "orchestrator"."invocations"("id") ON DELETE CASCADE ON UPDATE CASCADE;
