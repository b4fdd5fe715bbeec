-- Chat history: messages of conversations, in sent order.
CREATE TABLE message (
    id INTEGER PRIMARY KEY,
    conversation_id INTEGER NOT NULL,
    sender TEXT NOT NULL,
    text TEXT NOT NULL,
    sent_at TEXT NOT NULL
);
CREATE INDEX message_by_conversation ON message (conversation_id, sent_at);
