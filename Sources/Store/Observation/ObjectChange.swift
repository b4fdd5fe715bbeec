import Dispatch

/// What an observed object reports, as Realm's `ObjectChange`: a change
/// with the properties that changed, or its deletion.
public enum ObjectChange<Model> {
    /// The object after a commit that changed it, and what changed.
    case change(Model, [PropertyChange])
    /// The object was deleted (or did not exist); nothing follows.
    case deleted
    /// The object can no longer be observed (its table was dropped).
    case error(StoreError)
}

extension ObjectChange: Sendable where Model: Sendable {}

/// One changed column of an observed object.
public struct PropertyChange: Sendable, Hashable {
    /// The column name.
    public let name: String
    /// Its value before the commit.
    public let oldValue: SQLiteValue
    /// Its value after the commit.
    public let newValue: SQLiteValue
}

/// What an object observation delivers internally: its initial state too.
enum ObjectEvent<Model: Sendable>: Sendable {
    case initial(Model?)
    case change(ObjectChange<Model>)
}

extension Store {
    /// Observes one object by primary key: `block` receives a `.change` for
    /// each commit that changes it (with the changed columns' old and new
    /// values), then `.deleted` when it is deleted, as Realm's
    /// `object.observe`.
    ///
    /// - Parameters:
    ///   - keyPaths: column names; when given, only changes to these columns
    ///     are reported, and only they are listed.
    ///   - queue: where `block` runs; by default, the observation queue.
    public func observe<M: Model>(
        _ type: M.Type, id: M.ID, keyPaths: [String]? = nil, on queue: DispatchQueue? = nil,
        _ block: @escaping @Sendable (ObjectChange<M>) -> Void
    ) -> ObservationToken {
        observeObject(type, id: id, keyPaths: keyPaths, on: queue) { event in
            if case .change(let change) = event { block(change) } else if case .initial(nil) = event { block(.deleted) }
        }
    }

    func observeObject<M: Model>(
        _ type: M.Type, id: M.ID, keyPaths: [String]?, on queue: DispatchQueue?,
        _ block: @escaping @Sendable (ObjectEvent<M>) -> Void
    ) -> ObservationToken {
        register(ObjectObservation<M>(id: id.sqliteValue, keyPaths: keyPaths, queue: queue, block: block))
    }
}

/// Keeps one observed object up to date.
final class ObjectObservation<M: Model>: StoreObservation, FailableObservation, TokenBearing, @unchecked Sendable {
    // @unchecked Sendable: the mutable state is only touched on the
    // observation queue; the rest is immutable.
    private let id: SQLiteValue
    private let keyPaths: [String]?
    private let delivery: Delivery<ObjectEvent<M>>
    private var table = ""
    private var sql = ""
    private var rowID: Int64?
    private var columns: [String] = []
    private var values: [SQLiteValue] = []
    private var finished = false
    weak var token: ObservationToken?

    init(id: SQLiteValue, keyPaths: [String]?, queue: DispatchQueue?, block: @escaping @Sendable (ObjectEvent<M>) -> Void) {
        self.id = id
        self.keyPaths = keyPaths
        delivery = Delivery(queue: queue, block: block)
    }

    private func send(_ event: ObjectEvent<M>) {
        delivery.send(event, unless: token)
    }

    /// The object's row now: (rowid, column values, model), or nil when gone.
    private func read(_ db: Database) throws -> (Int64, [SQLiteValue], M)? {
        let statement = try db.connection.cachedStatement(sql: sql)
        defer { statement.reset() }
        try statement.bind([id])
        guard try statement.step() else { return nil }
        let decoder = StatementDecoder(statement: statement, tableName: table)
        let model = try decoder.decode(M.self)
        let values = (1..<Int32(statement.columnCount)).map { statement.value(at: $0) }
        return (statement.value(at: 0).integerValue ?? 0, values, model)
    }

    func start(_ db: Database) {
        do {
            let info = try db.tableInfo(M.tableName)
            guard let key = info.column(named: M.primaryKeyColumn) else {
                throw StoreError(code: .unknownColumn, message: "\(M.self).primaryKeyColumn '\(M.primaryKeyColumn)' is not a column of table \(info.name)")
            }
            if let keyPaths {
                for name in keyPaths where info.column(named: name) == nil {
                    throw StoreError(code: .unknownColumn, message: "unknown column '\(name)' in keyPaths for table \(info.name) (columns: \(info.columnNames.joined(separator: ", ")))")
                }
            }
            table = info.name
            columns = info.columnNames
            sql = "SELECT rowid AS \(QueryPlan.rowIDColumn), * FROM \(quoteIdentifier(info.name)) WHERE \(quoteIdentifier(key.name)) = ?"
            guard let (rowID, values, model) = try read(db) else {
                finished = true
                send(.initial(nil))
                return
            }
            self.rowID = rowID
            self.values = values
            send(.initial(model))
        } catch {
            fail(error as? StoreError ?? StoreError(code: .error, message: "\(error)"))
        }
    }

    func update(_ db: Database, changes: [String: Set<Int64>]?, silent: Bool) {
        guard !finished, let rowID else { return }
        if let changes {
            guard changes[table]?.contains(rowID) == true else { return }
        }
        do {
            guard let (newRowID, newValues, model) = try read(db) else {
                finished = true
                if !silent { send(.change(.deleted)) }
                return
            }
            var changed: [PropertyChange] = []
            for (index, name) in columns.enumerated() where index < newValues.count && index < values.count {
                guard values[index] != newValues[index] else { continue }
                if let keyPaths, !keyPaths.contains(where: { $0.lowercased() == name.lowercased() }) { continue }
                changed.append(PropertyChange(name: name, oldValue: values[index], newValue: newValues[index]))
            }
            self.rowID = newRowID
            values = newValues
            if !changed.isEmpty, !silent { send(.change(.change(model, changed))) }
        } catch {
            fail(error as? StoreError ?? StoreError(code: .error, message: "\(error)"))
        }
    }

    func fail(_ error: StoreError) {
        guard !finished else { return }
        finished = true
        send(.change(.error(error)))
    }
}

extension SQLiteValue {
    /// The integer, if this is one.
    var integerValue: Int64? {
        if case .integer(let value) = self { return value }
        return nil
    }
}
