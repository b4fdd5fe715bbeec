-- Packages and their contents (the package editor).
CREATE TABLE package (
    id INTEGER PRIMARY KEY,
    recipient_id INTEGER NOT NULL REFERENCES person (id) ON DELETE CASCADE,
    sender_id INTEGER REFERENCES person (id) ON DELETE SET NULL,
    created_at TEXT NOT NULL
);
CREATE INDEX package_by_recipient ON package (recipient_id);
CREATE INDEX package_by_sender ON package (sender_id);

CREATE TABLE package_content (
    id INTEGER PRIMARY KEY,
    package_id INTEGER NOT NULL REFERENCES package (id) ON DELETE CASCADE,
    title TEXT NOT NULL,
    weight INTEGER NOT NULL CHECK (weight >= 0),
    position INTEGER NOT NULL
);
CREATE INDEX package_content_by_package ON package_content (package_id, position);
