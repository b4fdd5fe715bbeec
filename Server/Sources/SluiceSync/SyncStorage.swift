import Foundation
import Logging
import PostgresNIO
import SluiceSyncProtocol

/// The sync service's PostgreSQL tables: the only state the service has. Every instance
/// reads and writes them per request, so any number of instances can serve one database.
///
/// - `sluice_space`: one row per user space, with its history's head.
/// - `sluice_token`: SHA-256 of each bearer token, the space it opens, when it was revoked,
///   and the member it opens it as (none: the owner).
/// - `sluice_member`: each member of a space, its role, and for an editor the tables it may
///   write (JSON; none: all).
/// - `sluice_txn`: the history: per space, each transaction at its sequence, with the
///   device that pushed it, the device's own number for it (unique: a retried push
///   appends nothing twice), its clock, and its changes as JSON.
/// - `sluice_row`: the current state, folded from the history (the rows a new device's
///   initial sync could start from, and what tests compare devices with).
/// - `sluice_device`: each device id of a space, with the hash of the token that first
///   pushed under it: a device id belongs to that token.
/// - `sluice_attachment`, `sluice_attachment_chunk`: attachments' bytes per space, by
///   SHA-256, in chunks (``SyncAttachment``).
/// - `sluice_removed_member`: members removed from a space, by name (their JWTs are refused).
/// - `sluice_schema_version`: the numbered migrations applied (SyncStorage+Migrations.swift).
public struct SyncStorage: Sendable {
    let client: PostgresClient
    let logger: Logger

    /// Storage over a running `PostgresClient` (the caller runs it).
    public init(client: PostgresClient, logger: Logger = Logger(label: "sluice-sync.storage")) {
        self.client = client
        self.logger = logger
    }

    // MARK: - Tokens

    /// Creates the space when it is new and a token for it; returns the token (only its
    /// hash is stored).
    public func addToken(space: String) async throws -> String {
        let token = Self.newToken()
        try await client.withTransaction(logger: logger) { connection in
            try await connection.query("INSERT INTO sluice_space (name) VALUES (\(space)) ON CONFLICT (name) DO NOTHING", logger: logger)
            try await connection.query("""
                INSERT INTO sluice_token (hash, space_id)
                SELECT encode(sha256(convert_to(\(token), 'UTF8')), 'hex'), id FROM sluice_space WHERE name = \(space)
                """, logger: logger)
        }
        return token
    }

    /// Revokes a token; returns whether it existed and was live.
    public func revokeToken(_ token: String) async throws -> Bool {
        let rows = try await client.query("""
            UPDATE sluice_token SET revoked_at = now()
            WHERE hash = encode(sha256(convert_to(\(token), 'UTF8')), 'hex') AND revoked_at IS NULL
            RETURNING space_id
            """, logger: logger)
        var count = 0
        for try await _ in rows.decode(Int64.self) { count += 1 }
        return count > 0
    }

    // MARK: - History

    /// The head of a space's history.
    func head(space: Int64) async throws -> Int64 {
        let rows = try await client.query("SELECT head FROM sluice_space WHERE id = \(space)", logger: logger)
        for try await head in rows.decode(Int64.self) { return head }
        return 0
    }

    /// Appends a device's transactions on top of `base`; the ones the service already has
    /// (a retried push: the same device, number and clock) are skipped.
    ///
    /// Refused with `identity_conflict` when the device id belongs to another token, or
    /// when the push does not continue the id's history: it carries a number the id has
    /// already used for another transaction (a copied store file, or a store that claims
    /// another device's id). The device then takes a new id and pushes again.
    func push(_ request: PushRequest, space: Int64, token: String, policy: PushPolicy) async throws -> Result<PushResponse, SyncErrorBody> {
        let encoder = JSONEncoder()
        let logger = self.logger
        return try await client.withTransaction(logger: logger) { connection in
            // What concerns this device alone comes before the space's lock, which every
            // push of the space waits for: the device's row, locked by the upsert, orders
            // two pushes under one id; a replay copies a transaction committed long before.
            // (The space's lock is NO KEY UPDATE: the upsert's foreign key holds KEY SHARE
            // on the space's row, which FOR UPDATE would wait for, two pushes each other.)
            var owned = false
            for try await value in try await connection.query("""
                INSERT INTO sluice_device (space_id, device, token_hash)
                VALUES (\(space), \(request.device), encode(sha256(convert_to(\(token), 'UTF8')), 'hex'))
                ON CONFLICT (space_id, device) DO UPDATE SET device = excluded.device
                RETURNING token_hash = encode(sha256(convert_to(\(token), 'UTF8')), 'hex')
                """, logger: logger).decode(Bool.self) { owned = value }
            guard owned else {
                return .failure(SyncErrorBody(.identityConflict, message: "device '\(request.device)' belongs to another token: push under a new device id"))
            }
            var lastLocal: Int64 = .min
            for try await value in try await connection.query(
                "SELECT max(local) FROM sluice_txn WHERE space_id = \(space) AND device = \(request.device)", logger: logger)
                .decode(Int64?.self) { lastLocal = value ?? .min }
            let repeated = request.transactions.filter { $0.local <= lastLocal }
            if !repeated.isEmpty {
                var stored: [Int64: Int64] = [:]
                for try await (local, clock) in try await connection.query("""
                    SELECT local, coalesce(sent, clock) FROM sluice_txn
                    WHERE space_id = \(space) AND device = \(request.device) AND local = ANY(\(repeated.map(\.local)))
                    """, logger: logger).decode((Int64, Int64).self) { stored[local] = clock }
                if let other = repeated.first(where: { stored[$0.local] != $0.clock.rawValue }) {
                    return .failure(SyncErrorBody(.identityConflict, message: """
                        device '\(request.device)' already pushed \(stored[other.local] == nil ? "past" : "another transaction as") number \(other.local): \
                        this store is a copy or claims another device's id; push under a new device id
                        """))
                }
            }
            let fresh = request.transactions.filter { $0.local > lastLocal }
            if !fresh.isEmpty, let replayed = try await Self.replayed(fresh, device: request.device, space: space, connection: connection, logger: logger) {
                return .failure(SyncErrorBody(.replay, message: """
                    transaction \(replayed.local) is one device '\(replayed.device)' pushed already (same clock and changes): \
                    a replayed push would roll rows back
                    """))
            }
            // Transactions the device has not pulled may have come first: its own go after
            // them when no row or column is written by both (the order of the two does not
            // change any copy); otherwise the device pulls and rebases them (conflict
            // policies decide). What is committed already is checked before the lock; under
            // it, only what committed meanwhile.
            func behind(_ head: Int64) -> Result<PushResponse, SyncErrorBody> {
                .failure(SyncErrorBody(.behind, message: "the history is at \(head), the push was based on \(request.base) and writes what came since: pull first"))
            }
            var checked = request.base
            if !fresh.isEmpty {
                let early = try await Self.commute(fresh, withHistoryAfter: request.base, space: space, connection: connection, logger: logger)
                guard early.commutes else { return behind(early.last) }
                checked = early.last
            }
            var head: Int64 = 0
            var pruned: Int64 = 0
            for try await (value, through) in try await connection.query(
                "SELECT head, pruned FROM sluice_space WHERE id = \(space)\(unescaped: fresh.isEmpty ? "" : " FOR NO KEY UPDATE")", logger: logger)
                .decode((Int64, Int64).self) { (head, pruned) = (value, through) }
            guard !fresh.isEmpty else { return .success(PushResponse(head: head, appended: 0)) }
            // What came after the base is pruned: nothing left to check the push against.
            if request.base < pruned { return behind(head) }
            if head != request.base {
                guard request.base < head, head - request.base <= Self.longestSequencedGap else { return behind(head) }
                if head > checked {
                    guard try await Self.commute(fresh, withHistoryAfter: checked, space: space, connection: connection, logger: logger).commutes
                    else { return behind(head) }
                }
            }
            if let checker = policy.checker {
                // Rows every device would refuse (a CHECK constraint) are refused here.
                let rows = try await Self.candidates(fresh, checker: checker, space: space, connection: connection, logger: logger)
                do { try checker.check(rows) } catch let error as SyncErrorBody { return .failure(error) }
            }
            var seq = head
            var clamped = 0
            let now = Date()
            let bound = HybridClock(date: now.addingTimeInterval(policy.maximumSkew.seconds))
            // With no ON DELETE action to look for, the last transaction's statement also
            // moves the head (one round trip fewer under the lock).
            let starts = Self.deleteActionStarts(fresh, rules: policy.deleteRules)
            let settled = starts.deleted.isEmpty && starts.written.isEmpty
            for (index, transaction) in fresh.enumerated() {
                seq += 1
                // A clock further ahead of the service's own than the skew it accepts is
                // stored as the service's clock: one device's clock cannot win every later
                // conflict, nor drag every device's clock with it.
                let clock = transaction.clock > bound ? HybridClock(date: now) : max(transaction.clock, .zero)
                let sent: Int64? = clock == transaction.clock ? nil : transaction.clock.rawValue
                if sent != nil { clamped += 1 }
                let kept = try await Self.keepingUnknownColumns(transaction.changes, keep: policy.keptColumns, space: space, connection: connection, logger: logger)
                let changes = String(decoding: try encoder.encode(kept), as: UTF8.self)
                try await Self.fold(kept, seq: seq, clock: clock.rawValue, space: space, connection: connection, logger: logger, encoder: encoder,
                                    recording: Recorded(device: request.device, local: transaction.local, clock: clock.rawValue, sent: sent, changes: changes),
                                    movingHead: settled && index == fresh.count - 1)
            }
            // The device's cursor: its own transactions are all up to here (the service's own
            // that may follow, the device pulls).
            let cursor = seq
            // What the parents' ON DELETE actions leave, as a transaction of the service's own.
            let effects = settled ? [] : try await Self.deleteActions(from: starts, rules: policy.deleteRules, space: space, seq: seq + 1,
                                                                      clock: HybridClock(date: now).rawValue,
                                                                      connection: connection, logger: logger, encoder: encoder)
            if !effects.isEmpty {
                seq += 1
                let changes = String(decoding: try encoder.encode(effects), as: UTF8.self)
                try await connection.query("""
                    INSERT INTO sluice_txn (space_id, seq, device, local, clock, changes)
                    VALUES (\(space), \(seq), \(Self.serviceDevice), \(seq), \(HybridClock(date: now).rawValue), \(changes))
                    """, logger: logger)
            }
            if clamped > 0 {
                logger.warning("device \(request.device): \(clamped) transaction clock(s) ahead of the service's clock were stored with the service's clock")
            }
            if !settled {
                try await connection.query("WITH \(unescaped: Self.movingHead(space: space, to: seq))", logger: logger)
            }
            return .success(PushResponse(head: cursor, appended: fresh.count, clamped: clamped == 0 ? nil : clamped))
        }
    }

    /// The channel pushes notify: the payload is `<space id>:<head>`.
    static let headChannel = "sluice_head"

    /// Listens on one connection for pushes (any instance's), calling `notify` with the
    /// space of each, and `connected` once listening; returns or throws when the connection ends.
    func listenForHeads(_ notify: @escaping @Sendable (Int64) -> Void, connected: @escaping @Sendable () -> Void) async throws {
        try await client.withConnection { connection in
            try await connection.listen(on: Self.headChannel) { notifications in
                connected()
                for try await notification in notifications {
                    if let space = notification.payload.split(separator: ":").first.flatMap({ Int64($0) }) { notify(space) }
                }
            }
        }
    }

    /// A page of history after `since`, as the JSON of a `PullResponse` (changes are copied
    /// as stored, not decoded and encoded again).
    func pull(space: Int64, since: Int64, limit: Int, maximumBytes: Int) async throws -> Data {
        let head = try await head(space: space)
        let rows = try await client.query("""
            SELECT seq, device, local, clock, sent, changes FROM sluice_txn
            WHERE space_id = \(space) AND seq > \(since) ORDER BY seq LIMIT \(Int64(limit))
            """, logger: logger)
        var body = Data("{\"head\":\(head),\"transactions\":[".utf8)
        var first = true
        let encoder = JSONEncoder()
        for try await (seq, device, local, clock, sent, changes) in rows.decode((Int64, String, Int64, Int64, Int64?, String).self) {
            if !first {
                // At least one transaction per page, however large.
                if body.count + changes.utf8.count > maximumBytes { break }
                body.append(UInt8(ascii: ","))
            }
            first = false
            body.append(contentsOf: Data("{\"seq\":\(seq),\"device\":".utf8))
            body.append(try encoder.encode(device))
            body.append(contentsOf: Data(",\"local\":\(local),\"clock\":\(clock),\(sent.map { "\"sent\":\($0)," } ?? "")\"changes\":".utf8))
            body.append(contentsOf: Data(changes.utf8))
            body.append(UInt8(ascii: "}"))
        }
        body.append(contentsOf: Data("]}".utf8))
        return body
    }

    /// The current rows of a space's table, by global id (deleted ones left out).
    public func rows(space name: String, table: String) async throws -> [String: [String: SyncValue]] {
        let rows = try await client.query("""
            SELECT r.id, r.vals::text FROM sluice_row r JOIN sluice_space s ON s.id = r.space_id
            WHERE s.name = \(name) AND r.tbl = \(table.lowercased()) AND NOT r.deleted
            """, logger: logger)
        var result: [String: [String: SyncValue]] = [:]
        let decoder = JSONDecoder()
        for try await (id, json) in rows.decode((String, String).self) {
            result[id] = try decoder.decode([String: SyncValue].self, from: Data(json.utf8))
        }
        return result
    }
}
