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

extension SyncValue {
    /// A stored value, as it travels (a foreign key travels as `.reference`, which the
    /// caller makes from the row's global id).
    ///
    /// - Parameter value: the stored value.
    public init(_ value: SQLiteValue) {
        switch value {
        case .null: self = .null
        case .integer(let value): self = .integer(value)
        case .real(let value): self = .real(value)
        case .text(let value): self = .text(value)
        case .blob(let value): self = .blob(value)
        }
    }

    /// The value as a store holds it; a reference as its global id's text; an attachment as
    /// NULL (its bytes are not in the message).
    public var sqliteValue: SQLiteValue {
        switch self {
        case .null: .null
        case .integer(let value): .integer(value)
        case .real(let value): .real(value)
        case .text(let value): .text(value)
        case .blob(let value): .blob(value)
        case .reference(let gid): .text(gid)
        case .attachment: .null
        }
    }
}
