-- A full-text index over person (first_name, last_name, city), kept in step by triggers.
CREATE VIRTUAL TABLE "sluice_fts_person" USING fts5("first_name", "last_name", "city", tokenize = 'unicode61 remove_diacritics 2');
CREATE TRIGGER "sluice_fts_person_insert" AFTER INSERT ON "person" BEGIN
    INSERT OR REPLACE INTO "sluice_fts_person" (rowid, "first_name", "last_name", "city") VALUES (new.rowid, new."first_name", new."last_name", new."city");
END;
CREATE TRIGGER "sluice_fts_person_delete" AFTER DELETE ON "person" BEGIN
    DELETE FROM "sluice_fts_person" WHERE rowid = old.rowid;
END;
CREATE TRIGGER "sluice_fts_person_update" AFTER UPDATE ON "person" WHEN new.rowid IS NOT old.rowid OR new."first_name" IS NOT old."first_name" OR new."last_name" IS NOT old."last_name" OR new."city" IS NOT old."city" BEGIN
    DELETE FROM "sluice_fts_person" WHERE rowid = old.rowid;
    INSERT OR REPLACE INTO "sluice_fts_person" (rowid, "first_name", "last_name", "city") VALUES (new.rowid, new."first_name", new."last_name", new."city");
END;
INSERT INTO "sluice_fts_person" (rowid, "first_name", "last_name", "city") SELECT rowid, "first_name", "last_name", "city" FROM "person";
