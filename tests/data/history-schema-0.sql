-- The schema as Chainlit's docs gave it before `command`, `modes`, `autoCollapse` and `defaultOpen`
-- were added to steps: what a user who followed the cookbook by hand has on disk (user_version 0).
-- Read by tests/test_history_db.py and tests/test_history_shared.py (OLDER_SCHEMA).
CREATE TABLE users ("id" TEXT PRIMARY KEY, "identifier" TEXT NOT NULL UNIQUE, "metadata" TEXT NOT NULL, "createdAt" TEXT);
CREATE TABLE threads ("id" TEXT PRIMARY KEY, "createdAt" TEXT, "name" TEXT, "userId" TEXT, "userIdentifier" TEXT,
                      "tags" TEXT, "metadata" TEXT);
CREATE TABLE steps ("id" TEXT PRIMARY KEY, "name" TEXT NOT NULL, "type" TEXT NOT NULL, "threadId" TEXT NOT NULL,
                    "parentId" TEXT, "streaming" BOOLEAN NOT NULL, "waitForAnswer" BOOLEAN, "isError" BOOLEAN,
                    "metadata" TEXT, "tags" TEXT, "input" TEXT, "output" TEXT, "createdAt" TEXT, "start" TEXT,
                    "end" TEXT, "generation" TEXT, "showInput" TEXT, "language" TEXT, "indent" INT);
CREATE TABLE elements ("id" TEXT PRIMARY KEY, "threadId" TEXT, "type" TEXT, "url" TEXT, "chainlitKey" TEXT,
                       "name" TEXT NOT NULL, "display" TEXT, "objectKey" TEXT, "size" TEXT, "page" INT,
                       "language" TEXT, "forId" TEXT, "mime" TEXT);
CREATE TABLE feedbacks ("id" TEXT PRIMARY KEY, "forId" TEXT NOT NULL, "threadId" TEXT NOT NULL, "value" INT NOT NULL,
                        "comment" TEXT);
INSERT INTO threads VALUES ('t1', '2025-01-01', 'old chat', 'u1', 'alice', NULL, '{}');
INSERT INTO steps ("id", "name", "type", "threadId", "streaming", "output")
    VALUES ('s1', 'alice', 'user_message', 't1', 0, 'an old question');
