import SluiceSyncProtocol
import Sluice

extension SyncSubscription {
    /// The rows of `table` a filter keeps, written as for a live query.
    ///
    /// ```swift
    /// SyncSubscription(table: "package", where: Column("recipient.city") == "Oslo")
    /// ```
    ///
    /// - Parameters:
    ///   - table: the table.
    ///   - filter: which rows.
    public init(table: String, where filter: Filter) {
        let (query, arguments) = filter.queryText()
        self.init(table: table, filter: query, arguments: arguments.map(SyncValue.init))
    }

    /// The rows of a model's table a typed filter keeps, written as for a live query.
    ///
    /// ```swift
    /// try SyncSubscription.rows(of: Package.self, where: \.weight > 1_000)
    /// ```
    ///
    /// - Parameters:
    ///   - type: the model.
    ///   - filter: which rows.
    /// - Returns: the subscription.
    /// - Throws: `StoreError` naming a key path that is not a column.
    public static func rows<M: Model>(of type: M.Type, where filter: ModelFilter<M>) throws -> SyncSubscription {
        SyncSubscription(table: M.tableName, where: try filter.untyped())
    }

    /// Every row of a model's table.
    ///
    /// - Parameter type: the model.
    /// - Returns: the subscription.
    public static func rows<M: Model>(of type: M.Type) -> SyncSubscription {
        SyncSubscription(table: M.tableName)
    }

    /// The filter, as the store runs it (nil: every row).
    func localFilter() throws -> Filter? {
        guard let filter else { return nil }
        return try Filter(filter, arguments: (arguments ?? []).map(\.sqliteValue))
    }
}
