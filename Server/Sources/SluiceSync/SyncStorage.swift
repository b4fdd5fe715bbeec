import Foundation
import Logging
import PostgresNIO
import SluiceSyncPolicy
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

    /// A credential a long poll checks again before it answers.
    enum Credential: Sendable {
        /// A token the service issued: live, and its member (if any) still a member.
        case token(String)
        /// A JWT's member: not removed from the space.
        case member(String)
    }

    /// What a long poll reads of a space when it wakes.
    struct Awake: Sendable {
        /// The head of the history.
        var head: Int64
        /// Whether the credential checked still opens the space (true when none was).
        var opens: Bool
        /// Whether a device other than the one named wrote a transaction after `since`
        /// (true when no device was named).
        var othersWrote: Bool
    }

    /// The head of a space's history, whether `credential` still opens the space, and whether
    /// a device other than `device` wrote after `since`, in one statement: a long poll woken by
    /// a push reads them all.
    func head(space: Int64, opening credential: Credential? = nil, since: Int64 = 0, notBy device: String? = nil) async throws -> Awake {
        let (kind, value): (String, String) = switch credential {
        case .token(let token): ("token", token)
        case .member(let member): ("member", member)
        case nil: ("", "")
        }
        // As ``access(forToken:)`` finds a token: unrevoked, of this space, its member's role one there is.
        let rows = try await client.query("""
            SELECT s.head, CASE \(kind)
                WHEN 'token' THEN EXISTS (
                    SELECT 1 FROM sluice_token AS t LEFT JOIN sluice_member AS m ON m.space_id = t.space_id AND m.name = t.member
                    WHERE t.hash = encode(sha256(convert_to(\(value), 'UTF8')), 'hex') AND t.revoked_at IS NULL AND t.space_id = s.id
                      AND (t.member IS NULL OR m.role = ANY(\(SyncRole.allCases.map(\.rawValue)))))
                WHEN 'member' THEN NOT EXISTS (SELECT 1 FROM sluice_removed_member WHERE space_id = s.id AND name = \(value))
                ELSE true END,
                \(device)::text IS NULL OR EXISTS (SELECT 1 FROM sluice_txn WHERE space_id = s.id AND seq > \(since) AND device <> \(device))
            FROM sluice_space AS s WHERE s.id = \(space)
            """, logger: logger)
        for try await (head, opens, othersWrote) in rows.decode((Int64, Bool, Bool).self) { return Awake(head: head, opens: opens, othersWrote: othersWrote) }
        return Awake(head: 0, opens: credential == nil, othersWrote: device == nil)
    }

    /// Appends a device's transactions on top of `base`, as ``PushDecision`` decides: the
    /// ones the service already has (a retried push: the same device, number and clock) are
    /// skipped; refused with `identity_conflict` when the device id belongs to another token
    /// or the push does not continue the id's history (a copied store file, or a store that
    /// claims another device's id: the device then takes a new id and pushes again), with
    /// `replay`, or sent back (`behind`).
    func push(_ request: PushRequest, space: Int64, token: String, policy: PushPolicy) async throws -> Result<PushResponse, SyncErrorBody> {
        let logger = self.logger
        return try await client.withTransaction(logger: logger) { connection in
            try await PushDecision.push(request, token: token, maximumSkew: policy.maximumSkew,
                                        storage: PostgresPushStorage(connection: connection, space: space, logger: logger, policy: policy))
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
    /// as stored, not decoded and encoded again). The head, how far the history is pruned
    /// and the page are read by one statement, so the head is the one the page was read at.
    ///
    /// - Throws: `compacted` when `since` is below what the history is pruned through.
    func pull(space: Int64, since: Int64, limit: Int, maximumBytes: Int) async throws -> Data {
        let rows = try await client.query("""
            SELECT s.head, s.pruned, t.seq, t.device, t.local, t.clock, t.sent, t.changes
            FROM sluice_space AS s LEFT JOIN LATERAL (
                SELECT seq, device, local, clock, sent, changes FROM sluice_txn
                WHERE space_id = s.id AND seq > \(since) ORDER BY seq LIMIT \(Int64(limit))) AS t ON true
            WHERE s.id = \(space)
            ORDER BY t.seq
            """, logger: logger)
        var body = Data()
        var first = true
        let encoder = JSONEncoder()
        for try await (head, pruned, seq, device, local, clock, sent, changes)
            in rows.decode((Int64, Int64, Int64?, String?, Int64?, Int64?, Int64?, String?).self) {
            if body.isEmpty {
                try HistoryPruning.checkPull(since: since, pruned: pruned)
                body = Data("{\"head\":\(head),\"transactions\":[".utf8)
            }
            // A space with nothing after `since` gives one row without a transaction.
            guard let seq, let device, let local, let clock, let changes else { break }
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
        if body.isEmpty { body = Data("{\"head\":0,\"transactions\":[".utf8) }
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
