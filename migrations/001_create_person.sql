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
