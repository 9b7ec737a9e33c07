-- CreateSchema
CREATE SCHEMA IF NOT EXISTS "auth";

-- CreateSchema
CREATE SCHEMA IF NOT EXISTS "vault";

-- CreateTable
CREATE TABLE "auth"."accounts" (
    "id" SERIAL NOT NULL,
    "name" TEXT NOT NULL,
    "created_at" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMP(3) NOT NULL,

    CONSTRAINT "accounts_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "auth"."environments" (
    "id" SERIAL NOT NULL,
    "uuid" UUID NOT NULL,
    "account_id" INTEGER NOT NULL,
    "name" TEXT NOT NULL,
    "created_at" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMP(3) NOT NULL,

    CONSTRAINT "environments_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "auth"."api_keys" (
    "id" SERIAL NOT NULL,
    "environment_id" INTEGER NOT NULL,
    "display_name" TEXT NOT NULL,
    "key_hash" TEXT NOT NULL,
    "scopes" TEXT[],
    "created_at" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "revoked_at" TIMESTAMP(3),

    CONSTRAINT "api_keys_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "auth"."integrations" (
    "id" SERIAL NOT NULL,
    "environment_id" INTEGER NOT NULL,
    "unique_key" TEXT NOT NULL,
    "provider" TEXT NOT NULL,
    "display_name" TEXT,
    "credentials_type" TEXT,
    "client_id" TEXT,
    "scopes" TEXT,
    "app_id" TEXT,
    "app_link" TEXT,
    "secrets" TEXT,
    "integration_config" JSONB,
    "forward_webhooks" BOOLEAN NOT NULL DEFAULT true,
    "created_at" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMP(3) NOT NULL,

    CONSTRAINT "integrations_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "auth"."environment_variables" (
    "id" SERIAL NOT NULL,
    "environment_id" INTEGER NOT NULL,
    "name" TEXT NOT NULL,
    "value" TEXT NOT NULL,
    "created_at" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMP(3) NOT NULL,

    CONSTRAINT "environment_variables_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "vault"."connections" (
    "id" SERIAL NOT NULL,
    "environment_id" INTEGER NOT NULL,
    "connection_id" TEXT NOT NULL,
    "provider_config_key" TEXT NOT NULL,
    "provider" TEXT NOT NULL,
    "credentials" TEXT,
    "connection_config" JSONB NOT NULL DEFAULT '{}',
    "metadata" JSONB,
    "tags" JSONB NOT NULL DEFAULT '{}',
    "end_user" JSONB,
    "webhook_url_override" TEXT,
    "errors" JSONB NOT NULL DEFAULT '[]',
    "created_at" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMP(3) NOT NULL,
    "last_fetched_at" TIMESTAMP(3),

    CONSTRAINT "connections_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE UNIQUE INDEX "environments_uuid_key" ON "auth"."environments"("uuid");

-- CreateIndex
CREATE UNIQUE INDEX "environments_account_id_name_key" ON "auth"."environments"("account_id", "name");

-- CreateIndex
CREATE UNIQUE INDEX "api_keys_key_hash_key" ON "auth"."api_keys"("key_hash");

-- CreateIndex
CREATE INDEX "api_keys_environment_id_idx" ON "auth"."api_keys"("environment_id");

-- CreateIndex
CREATE UNIQUE INDEX "integrations_environment_id_unique_key_key" ON "auth"."integrations"("environment_id", "unique_key");

-- CreateIndex
CREATE UNIQUE INDEX "environment_variables_environment_id_name_key" ON "auth"."environment_variables"("environment_id", "name");

-- CreateIndex
CREATE INDEX "connections_environment_id_created_at_idx" ON "vault"."connections"("environment_id", "created_at");

-- CreateIndex
CREATE UNIQUE INDEX "connections_environment_id_provider_config_key_connection_i_key" ON "vault"."connections"("environment_id", "provider_config_key", "connection_id");

-- AddForeignKey
ALTER TABLE "auth"."environments" ADD CONSTRAINT "environments_account_id_fkey" FOREIGN KEY ("account_id") REFERENCES "auth"."accounts"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "auth"."api_keys" ADD CONSTRAINT "api_keys_environment_id_fkey" FOREIGN KEY ("environment_id") REFERENCES "auth"."environments"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "auth"."integrations" ADD CONSTRAINT "integrations_environment_id_fkey" FOREIGN KEY ("environment_id") REFERENCES "auth"."environments"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "auth"."environment_variables" ADD CONSTRAINT "environment_variables_environment_id_fkey" FOREIGN KEY ("environment_id") REFERENCES "auth"."environments"("id") ON DELETE CASCADE ON UPDATE CASCADE;
