-- CreateTable
CREATE TABLE "auth"."connect_sessions" (
    "id" SERIAL NOT NULL,
    "environment_id" INTEGER NOT NULL,
    "token_hash" TEXT NOT NULL,
    "end_user" JSONB,
    "tags" JSONB NOT NULL DEFAULT '{}',
    "allowed_integrations" JSONB,
    "secrets" TEXT,
    "overrides" JSONB,
    "webhook_url_override" TEXT,
    "reconnect_connection_id" TEXT,
    "expires_at" TIMESTAMP(3) NOT NULL,
    "created_at" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "connect_sessions_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "auth"."end_users" (
    "id" SERIAL NOT NULL,
    "environment_id" INTEGER NOT NULL,
    "end_user_id" TEXT NOT NULL,
    "email" TEXT,
    "display_name" TEXT,
    "tags" JSONB,
    "organization_id" TEXT,
    "organization_display_name" TEXT,
    "created_at" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMP(3) NOT NULL,

    CONSTRAINT "end_users_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "auth"."session_connections" (
    "id" SERIAL NOT NULL,
    "environment_id" INTEGER NOT NULL,
    "provider_config_key" TEXT NOT NULL,
    "connection_id" TEXT NOT NULL,
    "end_user_id" TEXT,
    "created_at" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMP(3) NOT NULL,

    CONSTRAINT "session_connections_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "auth"."oauth_states" (
    "id" UUID NOT NULL,
    "environment_id" INTEGER NOT NULL,
    "connect_session_id" INTEGER NOT NULL,
    "provider_config_key" TEXT NOT NULL,
    "provider" TEXT NOT NULL,
    "auth_mode" TEXT NOT NULL,
    "connection_id" TEXT NOT NULL,
    "connection_config" JSONB NOT NULL DEFAULT '{}',
    "secrets" TEXT NOT NULL,
    "expires_at" TIMESTAMP(3) NOT NULL,
    "created_at" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "oauth_states_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE UNIQUE INDEX "connect_sessions_token_hash_key" ON "auth"."connect_sessions"("token_hash");

-- CreateIndex
CREATE INDEX "connect_sessions_expires_at_idx" ON "auth"."connect_sessions"("expires_at");

-- CreateIndex
CREATE UNIQUE INDEX "end_users_environment_id_end_user_id_key" ON "auth"."end_users"("environment_id", "end_user_id");

-- CreateIndex
CREATE UNIQUE INDEX "session_connections_environment_id_provider_config_key_conn_key" ON "auth"."session_connections"("environment_id", "provider_config_key", "connection_id");

-- CreateIndex
CREATE INDEX "oauth_states_expires_at_idx" ON "auth"."oauth_states"("expires_at");

-- AddForeignKey
ALTER TABLE "auth"."connect_sessions" ADD CONSTRAINT "connect_sessions_environment_id_fkey" FOREIGN KEY ("environment_id") REFERENCES "auth"."environments"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "auth"."end_users" ADD CONSTRAINT "end_users_environment_id_fkey" FOREIGN KEY ("environment_id") REFERENCES "auth"."environments"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "auth"."session_connections" ADD CONSTRAINT "session_connections_environment_id_fkey" FOREIGN KEY ("environment_id") REFERENCES "auth"."environments"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "auth"."oauth_states" ADD CONSTRAINT "oauth_states_connect_session_id_fkey" FOREIGN KEY ("connect_session_id") REFERENCES "auth"."connect_sessions"("id") ON DELETE CASCADE ON UPDATE CASCADE;
