-- Tables of Chainlit's built-in PostgreSQL data layer (chainlit.data.chainlit_data_layer),
-- written for chainlit 2.12.0. Chainlit does not create them itself. Column names and types
-- follow the queries of that module; re-check them when the chainlit pin moves.
-- Idempotent: setup_db.py applies this file on every start.

CREATE TABLE IF NOT EXISTS "User" (
    "id"         UUID PRIMARY KEY DEFAULT gen_random_uuid(),
    "createdAt"  TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updatedAt"  TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "metadata"   JSONB NOT NULL DEFAULT '{}',
    "identifier" TEXT NOT NULL UNIQUE
);

CREATE TABLE IF NOT EXISTS "Thread" (
    "id"        UUID PRIMARY KEY DEFAULT gen_random_uuid(),
    "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updatedAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "deletedAt" TIMESTAMP(3),
    "name"      TEXT,
    "metadata"  JSONB NOT NULL DEFAULT '{}',
    "tags"      TEXT[] NOT NULL DEFAULT ARRAY[]::TEXT[],
    "userId"    UUID REFERENCES "User" ("id") ON DELETE CASCADE
);
CREATE INDEX IF NOT EXISTS "Thread_userId_updatedAt_idx" ON "Thread" ("userId", "updatedAt");

-- Steps are messages, runs and tool calls. A step may be written before its thread's owner is
-- known, so "threadId" is nullable; deleting a thread deletes its steps.
CREATE TABLE IF NOT EXISTS "Step" (
    "id"        UUID PRIMARY KEY DEFAULT gen_random_uuid(),
    "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updatedAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "parentId"  UUID,  -- no foreign key: Chainlit may write a child before its parent
    "threadId"  UUID REFERENCES "Thread" ("id") ON DELETE CASCADE,
    "input"     TEXT,
    "metadata"  JSONB NOT NULL DEFAULT '{}',
    "name"      TEXT,
    "output"    TEXT,
    "type"      TEXT NOT NULL,
    "showInput" TEXT DEFAULT 'json',
    "isError"   BOOLEAN DEFAULT FALSE,
    "startTime" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "endTime"   TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP
);
CREATE INDEX IF NOT EXISTS "Step_threadId_startTime_idx" ON "Step" ("threadId", "startTime");
CREATE INDEX IF NOT EXISTS "Step_parentId_idx" ON "Step" ("parentId");

CREATE TABLE IF NOT EXISTS "Element" (
    "id"          UUID PRIMARY KEY DEFAULT gen_random_uuid(),
    "createdAt"   TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updatedAt"   TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "threadId"    UUID REFERENCES "Thread" ("id") ON DELETE CASCADE,
    "stepId"      UUID NOT NULL REFERENCES "Step" ("id") ON DELETE CASCADE,
    "metadata"    JSONB NOT NULL DEFAULT '{}',
    "mime"        TEXT,
    "name"        TEXT NOT NULL,
    "objectKey"   TEXT,
    "url"         TEXT,
    "chainlitKey" TEXT,
    "display"     TEXT,
    "size"        TEXT,
    "language"    TEXT,
    "page"        INTEGER,
    "props"       JSONB
);
CREATE INDEX IF NOT EXISTS "Element_stepId_idx" ON "Element" ("stepId");
CREATE INDEX IF NOT EXISTS "Element_threadId_idx" ON "Element" ("threadId");

CREATE TABLE IF NOT EXISTS "Feedback" (
    "id"        UUID PRIMARY KEY DEFAULT gen_random_uuid(),
    "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updatedAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "stepId"    UUID REFERENCES "Step" ("id") ON DELETE SET NULL,
    "name"      TEXT NOT NULL,
    "value"     DOUBLE PRECISION NOT NULL,
    "comment"   TEXT
);
CREATE INDEX IF NOT EXISTS "Feedback_stepId_idx" ON "Feedback" ("stepId");
