extension Store {
    /// A new, private in-memory store (for tests and previews), migrated:
    /// the same as `Store(path: ":memory:", migrations:)`. It lives as long as
    /// the store object; nothing of it remains afterwards.
    ///
    /// ```swift
    /// let store = try Store.inMemory(migrations: DemoSchema.migrations)
    /// ```
    ///
    /// - Parameters:
    ///   - migrations: the schema to apply.
    ///   - configuration: how to open it.
    /// - Returns: the store.
    /// - Throws: as `init(path:migrations:configuration:)`.
    public static func inMemory(migrations: [Migration] = [], configuration: Configuration = Configuration()) throws -> Store {
        try Store(path: ":memory:", migrations: migrations, configuration: configuration)
    }
}
