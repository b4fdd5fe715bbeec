import Dispatch

/// What an observed object reports, as Realm's `ObjectChange`: a change
/// with the properties that changed, or its deletion.
public enum ObjectChange<Model> {
    /// The object after a commit that changed it, and what changed.
    case change(Model, [PropertyChange])
    /// The object was deleted (or did not exist); nothing follows.
    case deleted
    /// The object cannot be read now (its table was dropped, a value cannot
    /// be decoded). Observing goes on: the next readable state comes as a
    /// `.change` against the last one delivered.
    case error(StoreError)
}

extension ObjectChange: Sendable where Model: Sendable {}

/// What an object observation delivers internally: its initial state too.
enum ObjectEvent<Model: Sendable>: Sendable {
    case initial(Model?)
    case change(ObjectChange<Model>)
}

/// Keeps one observed object up to date. The object is its primary key:
/// an UPDATE that changes the key, or a REPLACE that gives the key a new
/// rowid, is followed by reading the key again.
final class ObjectObservation<M: Model>: StoreObservation, FailableObservation, TokenBearing, @unchecked Sendable {
    // @unchecked Sendable: the mutable state is only touched on the
    // observation queue; the rest is immutable.
    private let id: SQLiteValue
    private let keyPaths: [String]?
    private let delivery: Delivery<ObjectEvent<M>>
    private var table: TableInfo?
    private var sql = ""
    private var rowID: Int64?
    /// The last delivered values, by column name.
    private var values: [String: SQLiteValue] = [:]
    private var columns: [String] = []
    private var finished = false
    private var failed = false
    weak var token: ObservationToken?

    init(id: SQLiteValue, keyPaths: [String]?, delivery: Delivery<ObjectEvent<M>>) {
        self.id = id
        self.keyPaths = keyPaths
        self.delivery = delivery
    }

    private func send(_ event: ObjectEvent<M>) {
        delivery.send(event, unless: token)
    }

    /// Resolves the table, its key and the SELECT by key.
    private func plan(_ db: Database) throws {
        let info = try db.tableInfo(M.tableName)
        try info.checkObservable()
        guard let key = info.column(named: M.primaryKeyColumn) else {
            throw StoreError(code: .unknownColumn, message: "\(M.self).primaryKeyColumn '\(M.primaryKeyColumn)' is not a column of table \(info.name)")
        }
        if let keyPaths {
            for name in keyPaths where info.column(named: name) == nil {
                throw StoreError(code: .unknownColumn, message: "unknown column '\(name)' in keyPaths for table \(info.name) (columns: \(info.columnNames.joined(separator: ", ")))")
            }
        }
        var select = SelectBuilder(table: info)
        select.columns = .rowIDAndAll
        select.keyColumn = key.name
        sql = try select.build().sql
        columns = info.columnNames
        table = info
    }

    /// The object's row now: (rowid, values by column, model), or nil when gone.
    private func read(_ db: Database) throws -> (Int64, [String: SQLiteValue], M)? {
        let statement = try db.cachedStatement(sql: sql)
        defer { statement.reset() }
        try statement.bind([id])
        guard try statement.step() else { return nil }
        let decoder = StatementDecoder(statement: statement, tableName: M.tableName)
        let model = try decoder.decode(M.self)
        var values: [String: SQLiteValue] = [:]
        for (offset, name) in columns.enumerated() { values[name] = statement.value(at: Int32(offset + 1)) }
        return (statement.value(at: 0).integerValue ?? 0, values, model)
    }

    func start(_ db: Database, pin: ReadPin) {
        do {
            try plan(db)
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

    func update(_ db: Database, pin: ReadPin, changes: ChangedRows, silent: Bool) {
        guard !finished, let rowID else { return }
        let change = changes.change(matching: M.tableName)
        switch change {
        case nil: return
        case .rows(let rowIDs)? where !failed && !rowIDs.contains(rowID): return
        default: break
        }
        do {
            if table == nil || change == .unknown, try db.tableInfo(M.tableName) != table {
                try plan(db)
            }
            guard let (newRowID, newValues, model) = try read(db) else {
                finished = true
                if !silent { send(.change(.deleted)) }
                return
            }
            failed = false
            var changed: [PropertyChange] = []
            for name in columns {
                let old = values[name] ?? .null, new = newValues[name] ?? .null
                guard old != new else { continue }
                if let keyPaths, !keyPaths.contains(where: { $0.lowercased() == name.lowercased() }) { continue }
                changed.append(PropertyChange(name: name, oldValue: old, newValue: new))
            }
            self.rowID = newRowID
            values = newValues
            if !changed.isEmpty, !silent { send(.change(.change(model, changed))) }
        } catch {
            fail(error as? StoreError ?? StoreError(code: .error, message: "\(error)"))
        }
    }

    func fail(_ error: StoreError) {
        guard !finished, !failed else { return }
        failed = true
        table = nil
        if rowID == nil {
            // It never started: nothing to go on from.
            finished = true
        }
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
