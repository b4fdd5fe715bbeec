
/// How a live query reads its rows, resolved against the schema.
struct QueryPlan {
    let table: TableInfo
    /// `SELECT rowid, <columns> FROM t [WHERE f] ORDER BY ... [LIMIT n]`.
    let fullSQL: String
    let fullArguments: [SQLiteValue]
    /// `SELECT rowid, <columns> FROM t WHERE rowid = ? [AND (f)]`: one row,
    /// with the filter evaluated by SQLite itself.
    let pointSQL: String
    let pointArguments: [SQLiteValue]   // the filter's, after the rowid
    /// `SELECT rowid, <columns> FROM t WHERE rowid = ?`: a row known to be
    /// in the result, for a snapshot reading its element.
    let elementSQL: String
    /// `SELECT rowid, <columns> FROM t [WHERE f]`, in no particular order:
    /// what the fallback compares with what it holds, to find changed rows.
    let scanSQL: String
    let scanArguments: [SQLiteValue]
    /// Whether the fingerprint covers every column (no `keyPaths`): then it
    /// also tells whether a row's content changed.
    let fingerprintCoversAll: Bool
    /// Result columns of the ORDER BY terms (0 is the rowid; a last ascending
    /// rowid tie-break is left out: `SortKey` compares rowids last).
    let orderColumns: [Int32]
    /// How Swift compares sort keys, or nil when it cannot do so exactly as
    /// SQLite (a custom collation): then every change re-runs the query.
    let sortOrder: SortOrder?
    /// Result columns whose values decide whether a row is "modified".
    let fingerprintColumns: [Int32]
    /// Mixed into every fingerprint: the observed columns' names, so that a
    /// schema change (a column added, dropped or renamed) makes every row
    /// count as modified (their values, as rows, did change).
    let fingerprintSalt: Int
    /// Result columns of the declared primary key, when the rows' identity
    /// is that key rather than the rowid (a TEXT PRIMARY KEY, a composite key).
    let identityColumns: [Int32]?
    /// Whether a row's membership depends on other rows (a limit, distinct):
    /// then every change re-runs the query.
    let hasLimit: Bool

    let relevance: Relevance?

    /// Other tables the filter reads through relationship paths: a commit
    /// to one of them can change which rows match.
    let dependencies: Set<String>

    /// For each table in `dependencies`, queries that turn some of its
    /// rowids (`?1`, a JSON array) into the rowids of this table they join,
    /// the only rows whose match those related rows' change can change; nil
    /// when a related table cannot tell (a path of two hops, a table related
    /// to itself, or a join column of this table without an index).
    let relatedRowsSQL: [String: [String]]?

    /// How the database stores text: sort values of BINARY columns hold these bytes.
    let textEncoding: TextEncoding

    /// See `relatedRowsSQL`. The join is the filter's own correlation
    /// (`related.column = main.column`, the same operands, affinities and
    /// collation), driven by the related rowids and an index on this side.
    private static func relatedRowsSQL(_ links: Set<RelationshipLink>, of table: TableInfo, db: Database) throws -> [String: [String]]? {
        var queries: [String: [String]] = [:]
        for link in links {
            guard link.table.lowercased() != table.name.lowercased(), try isIndexed(link.mainColumn, of: table, db: db) else { return nil }
            queries[link.table, default: []].append("""
                SELECT m.rowid FROM \(quoteIdentifier(link.table)) AS r JOIN \(quoteIdentifier(table.name)) AS m \
                ON r.\(quoteIdentifier(link.relatedColumn)) = m.\(quoteIdentifier(link.mainColumn)) \
                WHERE r.rowid IN (SELECT value FROM json_each(?1))
                """)
        }
        return queries
    }

    /// Whether a column is the rowid, or the first column of an index.
    private static func isIndexed(_ column: String, of table: TableInfo, db: Database) throws -> Bool {
        if column.lowercased() == "rowid" || (table.hasIntegerPrimaryKey && table.primaryKey == [column]) { return true }
        let indexes = try db.fetchRows(sql: "SELECT name FROM pragma_index_list(?)", arguments: [.text(table.name)])
        for index in indexes {
            guard case .text(let name) = index[0] else { continue }
            let first = try db.fetchRows(sql: "SELECT name FROM pragma_index_info(?) WHERE seqno = 0", arguments: [.text(name)])
            if case .text(let indexed)? = first.first?[0], indexed.lowercased() == column.lowercased() { return true }
        }
        return false
    }

    /// Whether changes can be applied row by row.
    var isIncremental: Bool { sortOrder != nil && !hasLimit && relevance == nil }

    /// Whether changes can be applied row by row, with every score read
    /// again from the index (`LiveQuery.applyRescored`).
    var isRescorable: Bool { sortOrder != nil && !hasLimit && relevance?.onlyMatches == true }

    init(db: Database, table name: String, filter: Filter?, orderBy: [Ordering], limit: Int?, distinct: [String] = [],
         keyPaths: [String]?) throws {
        let table = try db.tableInfo(name)
        try table.checkObservable()
        self.table = table
        var select = SelectBuilder(table: table, schema: db.schemaLookup)
        select.columns = .rowIDAndAll
        select.filter = filter
        select.orderBy = orderBy
        select.limit = limit
        select.distinct = distinct
        (fullSQL, fullArguments) = try select.build()
        select.orderBy = nil
        select.limit = nil
        (scanSQL, scanArguments) = try select.build()
        select.keyColumn = "rowid"
        (pointSQL, pointArguments) = try select.build()
        select.filter = nil
        select.distinct = []
        elementSQL = try select.build().sql
        hasLimit = limit != nil || !distinct.isEmpty
        textEncoding = try TextEncoding(db)
        let compiled = try filter.map { try FilterCompiler.compile($0, table: table, schema: db.schemaLookup) }
        dependencies = compiled?.dependencies ?? []
        relatedRowsSQL = try compiled?.links.flatMap { try Self.relatedRowsSQL($0, of: table, db: db) }

        func resultColumn(_ name: String) -> Int32? {
            table.columns.firstIndex { $0.name == name }.map { Int32($0 + 1) }
        }
        var columns: [Int32] = []
        var sortTerms: [SortOrder.Term] = []
        var comparable = true
        var relevance: Relevance?
        for term in try SelectBuilder.orderTerms(table: table, orderBy: orderBy, schema: db.schemaLookup) {
            if let join = term.join, let scoring = term.scoring, let missingScore = term.missingScore {
                // Relevance: the score `fullSQL` selects after the table's columns.
                relevance = Relevance(index: scoring.index, arguments: scoring.arguments, query: .text(join.query), termOffset: columns.count,
                                      missingScore: missingScore, onlyMatches: filter?.removingMatch(join.query).removed == true)
                columns.append(Int32(table.columns.count + 1))
                sortTerms.append(.init(descending: term.descending, collation: .binary))
                continue
            }
            guard let column = term.column else { comparable = false; continue }
            // The rowid, or its alias (an INTEGER PRIMARY KEY, the usual tie-break).
            if column == "rowid" || (table.hasIntegerPrimaryKey && table.primaryKey == [column]) {
                columns.append(0)
                sortTerms.append(.init(descending: term.descending, collation: .binary))
                continue
            }
            guard let index = resultColumn(column) else { comparable = false; continue }
            columns.append(index)
            guard let collation = SortOrder.Collation(name: table.collation(of: column)) else {
                comparable = false
                continue
            }
            sortTerms.append(.init(descending: term.descending, collation: collation))
        }
        // A last ascending rowid term (the tie-break of rowid tables) is
        // what `SortKey` compares last anyway: leave it out of the values,
        // so a key sorted by one column holds one value, inline.
        if comparable, columns.last == 0, sortTerms.last?.descending == false {
            columns.removeLast()
            sortTerms.removeLast()
        }
        orderColumns = columns
        sortOrder = comparable ? SortOrder(terms: sortTerms) : nil
        self.relevance = relevance

        var observed: [String]
        if let keyPaths {
            observed = try keyPaths.map { name in
                guard let column = table.column(named: name) else {
                    throw StoreError(code: .unknownColumn, message: "unknown column '\(name)' in keyPaths for table \(table.name) (columns: \(table.columnNames.joined(separator: ", ")))")
                }
                return column.name
            }
        } else {
            observed = table.columnNames
        }
        fingerprintColumns = observed.compactMap(resultColumn)
        fingerprintCoversAll = Set(fingerprintColumns).count == table.columns.count
        var salt = Hasher()
        for name in observed { salt.combine(name) }
        fingerprintSalt = salt.finalize()
        identityColumns = table.identityIsRowID ? nil : table.primaryKey.compactMap(resultColumn)
    }

    /// The sort key of the statement's current row. A statement without
    /// the score of an ordering by relevance (a point query) takes it from
    /// `scores`, the index's scores by rowid.
    func sortKey(of statement: Statement, scores: ((Int64) -> Double?)? = nil) -> SortKey {
        let rowID = statement.int64(at: 0)
        var first = SortValue.null
        var rest: [SortValue] = []
        for (offset, column) in orderColumns.enumerated() {
            let value: SortValue
            if let scores, let relevance, offset == relevance.termOffset {
                value = .real(scores(rowID) ?? relevance.missingScore)
            } else {
                value = Self.sortValue(statement, column, stored: sortOrder.map { $0.terms[offset].collation == .binary } ?? true)
            }
            if offset == 0 { first = value } else { rest.append(value) }
        }
        return SortKey(first: first, rest: rest, rowID: rowID)
    }

    /// A column as SQLite's collation sees it: text as stored (`stored`,
    /// for BINARY: the database's encoding) or as UTF-8 (NOCASE, RTRIM),
    /// never validated or decoded.
    private static func sortValue(_ statement: Statement, _ column: Int32, stored: Bool) -> SortValue {
        switch statement.storageClass(at: column) {
        case .integer: return .integer(statement.int64(at: column))
        case .real: return .real(statement.double(at: column))
        case .text:
            let bytes = stored ? statement.bytes(at: column) : statement.utf8(at: column)
            return .text(bytes.isEmpty ? SortBytes([]) : SortBytes(bytes))
        case .blob:
            let bytes = statement.bytes(at: column)
            return .blob(bytes.isEmpty ? SortBytes([]) : SortBytes(bytes))
        case .null: return .null
        }
    }

    /// The row's identity: its rowid, or its declared primary key.
    func identity(of statement: Statement, key: SortKey) -> RowIdentity {
        guard let identityColumns else { return .rowID(key.rowID) }
        return .key(identityColumns.map { statement.value(at: $0) })
    }

    /// A hash of the row's observed values, to tell whether it changed.
    func fingerprint(of statement: Statement) -> Int {
        Self.hash(statement, fingerprintColumns, salt: fingerprintSalt)
    }

    /// A hash of all the row's values, to tell whether anything about it
    /// changed (its element, its sort key): the fingerprint when that covers
    /// them (pass it when it is already computed).
    func contentHash(of statement: Statement, fingerprint: Int? = nil) -> Int {
        guard fingerprintCoversAll else { return Self.hash(statement, Int32(1)...Int32(table.columns.count), salt: fingerprintSalt) }
        return fingerprint ?? self.fingerprint(of: statement)
    }

    private static func hash(_ statement: Statement, _ columns: some Sequence<Int32>, salt: Int) -> Int {
        var hasher = RowHasher(seed: salt)
        for column in columns {
            let type = statement.storageClass(at: column)
            hasher.combine(UInt64(UInt32(bitPattern: type.rawValue)))
            switch type {
            case .integer: hasher.combine(UInt64(bitPattern: statement.int64(at: column)))
            case .real: hasher.combine(statement.double(at: column).bitPattern)
            case .text, .blob:
                // The stored bytes (blob access does not convert text), so
                // that text in any encoding, valid or not, compares as stored.
                hasher.combine(bytes: statement.bytes(at: column))
            case .null: break
            }
        }
        return hasher.finalize()
    }
}

/// The hash of a row's values that tells a live query whether a row changed:
/// xxHash64's round, tail step and avalanche (Yann Collet's constants) over
/// 8-byte words, one lane. It replaced `Hasher` (SipHash), whose per-byte
/// rounds were a fifth of a live query's first result at a million rows.
/// Seeded with the plan's salt, which `Hasher` randomizes per process.
struct RowHasher {
    private static let prime1: UInt64 = 0x9E37_79B1_85EB_CA87
    private static let prime2: UInt64 = 0xC2B2_AE3D_27D4_EB4F
    private static let prime3: UInt64 = 0x1656_67B1_9E37_79F9
    private static let prime4: UInt64 = 0x85EB_CA77_C2B2_AE63
    private var state: UInt64

    init(seed: Int) {
        state = UInt64(bitPattern: Int64(seed)) &+ Self.prime3
    }

    @inline(__always)
    mutating func combine(_ word: UInt64) {
        var lane = word &* Self.prime2
        lane = (lane << 31 | lane >> 33) &* Self.prime1
        state ^= lane
        state = (state << 27 | state >> 37) &* Self.prime1 &+ Self.prime4
    }

    /// The length, then the bytes, 8 at a time (the last word zero-padded).
    @inline(__always)
    mutating func combine(bytes: UnsafeRawBufferPointer) {
        combine(UInt64(bytes.count))
        var offset = 0
        while offset + 8 <= bytes.count {
            combine(bytes.loadUnaligned(fromByteOffset: offset, as: UInt64.self))
            offset += 8
        }
        if offset < bytes.count {
            var tail: UInt64 = 0
            for index in offset..<bytes.count { tail |= UInt64(bytes[index]) << (8 * UInt64(index - offset)) }
            combine(tail)
        }
    }

    func finalize() -> Int {
        var hash = state
        hash ^= hash >> 33
        hash &*= Self.prime2
        hash ^= hash >> 29
        hash &*= Self.prime3
        hash ^= hash >> 32
        return Int(bitPattern: UInt(hash))
    }
}

/// A database's text encoding (`PRAGMA encoding`).
enum TextEncoding: Sendable {
    case utf8, utf16LittleEndian, utf16BigEndian

    init(_ db: Database) throws {
        let statement = try db.cachedStatement(sql: "PRAGMA encoding")
        defer { statement.reset() }
        guard try statement.step(), case .text(let name) = statement.value(at: 0) else {
            self = .utf8
            return
        }
        switch name.uppercased() {
        case "UTF-16LE": self = .utf16LittleEndian
        case "UTF-16BE": self = .utf16BigEndian
        default: self = .utf8
        }
    }

    /// Stored text bytes as a string.
    func string(_ bytes: UnsafeBufferPointer<UInt8>) -> String {
        switch self {
        case .utf8: return String(decoding: bytes, as: UTF8.self)
        case .utf16LittleEndian, .utf16BigEndian:
            let littleEndian = self == .utf16LittleEndian
            let units = stride(from: 0, to: bytes.count - 1, by: 2).map { (index: Int) -> UInt16 in
                let (low, high) = littleEndian ? (bytes[index], bytes[index + 1]) : (bytes[index + 1], bytes[index])
                return UInt16(low) | (UInt16(high) << 8)
            }
            return String(decoding: units, as: UTF16.self)
        }
    }
}

/// Which row a result element is: the rowid, or the declared primary key
/// for tables whose key is not the rowid (deleting a row and inserting one
/// with the same key is then the same row, modified).
enum RowIdentity: Hashable {
    case rowID(Int64)
    case key([SQLiteValue])
    /// A row now at this rowid that is not the row that was there before
    /// (that one was renumbered, see `RowPairing`).
    case newAt(Int64)
}
