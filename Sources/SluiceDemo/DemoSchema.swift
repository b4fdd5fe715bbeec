import Sluice

/// The demo domain's schema: the SQL of the top-level `migrations/` folder,
/// embedded so the `sluice` binary works from any directory. A test checks
/// that these strings equal the files.
public enum DemoSchema {
    /// The demo migrations, in version order.
    public static let migrations: [Migration] = [
        Migration(version: 1, name: "create_person", sql: """
            -- People: recipients and senders of packages, the people list.
            CREATE TABLE person (
                id INTEGER PRIMARY KEY,
                first_name TEXT NOT NULL,
                last_name TEXT NOT NULL,
                age INTEGER,
                email TEXT,
                street TEXT,
                city TEXT,
                postal_code TEXT,
                country TEXT
            );
            CREATE INDEX person_by_name ON person (first_name, last_name);
            
            """),
        Migration(version: 2, name: "create_package", sql: """
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
            
            """),
        Migration(version: 3, name: "create_message", sql: """
            -- Chat history: messages of conversations, in sent order.
            CREATE TABLE message (
                id INTEGER PRIMARY KEY,
                conversation_id INTEGER NOT NULL,
                sender TEXT NOT NULL,
                text TEXT NOT NULL,
                sent_at TEXT NOT NULL
            );
            CREATE INDEX message_by_conversation ON message (conversation_id, sent_at);
            
            """),
        Migration(version: 4, name: "create_app_state", sql: """
            -- Shared app state: a single row (id = 1) that several view models observe.
            CREATE TABLE app_state (
                id INTEGER PRIMARY KEY CHECK (id = 1),
                current_user_id INTEGER REFERENCES person (id) ON DELETE SET NULL,
                temperature_low REAL NOT NULL DEFAULT 15,
                temperature_high REAL NOT NULL DEFAULT 25,
                CHECK (temperature_high >= temperature_low + 10)
            );
            INSERT INTO app_state (id) VALUES (1);
            
            """),
        .fullTextIndex(version: 5, personSearch),
    ]

    /// The people list's search: first name, last name and city, words with
    /// diacritics removed (`zoe` finds `Zoë`).
    public static let personSearch = FullTextIndex(table: "person", columns: ["first_name", "last_name", "city"])
}

extension DemoSchema {
    /// The demo tables that sync between devices (`app_state` is each device's own).
    public static let syncedTables = ["person", "package", "package_content", "message"]
}
