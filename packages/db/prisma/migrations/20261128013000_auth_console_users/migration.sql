-- AlterTable
ALTER TABLE "auth"."api_keys" ADD COLUMN "key_suffix" TEXT;

-- CreateTable
CREATE TABLE "auth"."console_users" (
    "id" UUID NOT NULL,
    "account_id" INTEGER NOT NULL,
    "email" TEXT NOT NULL,
    "role" TEXT NOT NULL,
    "password_hash" TEXT NOT NULL,
    "created_at" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMP(3) NOT NULL,
    "last_sign_in_at" TIMESTAMP(3),

    CONSTRAINT "console_users_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "auth"."console_sessions" (
    "id" SERIAL NOT NULL,
    "user_id" UUID NOT NULL,
    "token_hash" TEXT NOT NULL,
    "created_at" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "last_seen_at" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "expires_at" TIMESTAMP(3) NOT NULL,

    CONSTRAINT "console_sessions_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "auth"."console_audit_events" (
    "id" SERIAL NOT NULL,
    "account_id" INTEGER NOT NULL,
    "environment_id" INTEGER NOT NULL,
    "user_id" UUID NOT NULL,
    "user_email" TEXT NOT NULL,
    "action" TEXT NOT NULL,
    "target" JSONB NOT NULL,
    "created_at" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "console_audit_events_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE UNIQUE INDEX "console_users_email_key" ON "auth"."console_users"("email");

-- CreateIndex
CREATE INDEX "console_users_account_id_idx" ON "auth"."console_users"("account_id");

-- CreateIndex
CREATE UNIQUE INDEX "console_sessions_token_hash_key" ON "auth"."console_sessions"("token_hash");

-- CreateIndex
CREATE INDEX "console_sessions_user_id_idx" ON "auth"."console_sessions"("user_id");

-- CreateIndex
CREATE INDEX "console_sessions_expires_at_idx" ON "auth"."console_sessions"("expires_at");

-- CreateIndex
CREATE INDEX "console_audit_events_account_id_created_at_idx" ON "auth"."console_audit_events"("account_id", "created_at");

-- AddForeignKey
ALTER TABLE "auth"."console_users" ADD CONSTRAINT "console_users_account_id_fkey" FOREIGN KEY ("account_id") REFERENCES "auth"."accounts"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "auth"."console_sessions" ADD CONSTRAINT "console_sessions_user_id_fkey" FOREIGN KEY ("user_id") REFERENCES "auth"."console_users"("id") ON DELETE CASCADE ON UPDATE CASCADE;
