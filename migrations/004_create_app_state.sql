-- Shared app state: a single row (id = 1) that several view models observe.
CREATE TABLE app_state (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    current_user_id INTEGER REFERENCES person (id) ON DELETE SET NULL,
    temperature_low REAL NOT NULL DEFAULT 15,
    temperature_high REAL NOT NULL DEFAULT 25,
    CHECK (temperature_high >= temperature_low + 10)
);
INSERT INTO app_state (id) VALUES (1);
