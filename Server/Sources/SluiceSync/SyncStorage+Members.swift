import Foundation
import PostgresNIO
import SluiceSyncPolicy
import SluiceSyncProtocol

/// Members of a space and their roles: who a token opens the space as, and what it may do.
extension SyncStorage {
    /// What a live token opens: the space, as which member, with which rights.
    public struct Access: Sendable, Equatable {
        /// The space's id.
        public var space: Int64
        /// The member (nil: a token from `token add` without one, the owner's).
        public var member: String?
        /// What it may do.
        public var role: SyncRole
        /// For an editor, the only tables it may write (nil: all).
        public var tables: Set<String>?

        /// What it may do, by the service's rules (``MemberAccess``).
        public var rights: MemberAccess { MemberAccess(member: member, role: role, tables: tables) }
    }

    /// A new bearer token: `slt_` and 64 hex digits of the system's random generator.
    static func newToken() -> String {
        var generator = SystemRandomNumberGenerator()
        let bytes = (0..<32).map { _ in UInt8.random(in: 0...255, using: &generator) }
        return "slt_" + bytes.map { String(format: "%02x", $0) }.joined()
    }

    /// What a live token opens, or nil (unknown, revoked, or its member was removed).
    func access(forToken token: String) async throws -> Access? {
        let rows = try await client.query("""
            SELECT t.space_id, t.member, m.role, m.tables FROM sluice_token AS t
            LEFT JOIN sluice_member AS m ON m.space_id = t.space_id AND m.name = t.member
            WHERE t.hash = encode(sha256(convert_to(\(token), 'UTF8')), 'hex') AND t.revoked_at IS NULL
            """, logger: logger)
        for try await (space, member, role, tables) in rows.decode((Int64, String?, String?, String?).self) {
            guard let member else { return Access(space: space, member: nil, role: .owner, tables: nil) }
            guard let role = role.flatMap(SyncRole.init(rawValue:)) else { return nil }   // removed
            let names = tables.flatMap { try? JSONDecoder().decode([String].self, from: Data($0.utf8)) }
            return Access(space: space, member: member, role: role, tables: names.map(Set.init))
        }
        return nil
    }

    /// Shares a space with a user (or changes what the member may do) and makes a token
    /// for it; the space is created when it is new.
    ///
    /// - Parameters:
    ///   - space: the space's name.
    ///   - request: the user, role and tables.
    /// - Returns: the member's new token (only its hash is stored).
    public func share(space: String, _ request: ShareRequest) async throws -> String {
        try await share(spaceID: try await spaceID(named: space), request)
    }

    /// The id of the space named `name` (created when it is new) for a JWT's `member`;
    /// nil when the member was removed from it (and not shared with again).
    func spaceID(named name: String, member: String) async throws -> Int64? {
        let space = try await spaceID(named: name)
        return try await isRemoved(member, from: space) ? nil : space
    }

    /// Whether `member` was removed from `space` (and not shared with again).
    func isRemoved(_ member: String, from space: Int64) async throws -> Bool {
        let rows = try await client.query("SELECT 1 FROM sluice_removed_member WHERE space_id = \(space) AND name = \(member)", logger: logger)
        for try await _ in rows.decode(Int.self) { return true }
        return false
    }

    /// The id of the space named `name`, created when it is new (a JWT's space).
    func spaceID(named name: String) async throws -> Int64 {
        try await client.query("INSERT INTO sluice_space (name) VALUES (\(name)) ON CONFLICT (name) DO NOTHING", logger: logger)
        let rows = try await client.query("SELECT id FROM sluice_space WHERE name = \(name)", logger: logger)
        for try await id in rows.decode(Int64.self) { return id }
        throw SyncErrorBody(.invalid, message: "no space named '\(name)'")
    }

    /// ``share(space:_:)`` by the space's id.
    func share(spaceID: Int64, _ request: ShareRequest) async throws -> String {
        let token = Self.newToken()
        let tables: String? = request.role == .editor ? request.tables.map { String(decoding: (try? JSONEncoder().encode($0)) ?? Data("[]".utf8), as: UTF8.self) } : nil
        let role = request.role.rawValue
        let user = request.user
        try await client.withTransaction(logger: logger) { connection in
            try await connection.query("""
                INSERT INTO sluice_member (space_id, name, role, tables) VALUES (\(spaceID), \(user), \(role), \(tables))
                ON CONFLICT (space_id, name) DO UPDATE SET role = excluded.role, tables = excluded.tables
                """, logger: logger)
            try await connection.query("""
                INSERT INTO sluice_token (hash, space_id, member)
                VALUES (encode(sha256(convert_to(\(token), 'UTF8')), 'hex'), \(spaceID), \(user))
                """, logger: logger)
            // Shared again: its JWTs open the space again.
            try await connection.query("DELETE FROM sluice_removed_member WHERE space_id = \(spaceID) AND name = \(user)", logger: logger)
        }
        return token
    }

    /// Removes a member from a space: from then on its tokens and its JWTs (by subject)
    /// open nothing there, and its long polls under way end with 401 (they are woken).
    /// Sharing the space with it again lets its JWTs in again.
    ///
    /// - Parameters:
    ///   - space: the space's name.
    ///   - user: the member's name.
    /// - Returns: whether it was a member through a token (a JWT's subject may be one
    ///   without: it is refused from now on either way); nil when there is no such space.
    public func removeMember(space: String, user: String) async throws -> Bool? {
        try await client.withTransaction(logger: logger) { connection in
            let spaces = try await connection.query("SELECT id FROM sluice_space WHERE name = \(space)", logger: logger)
            var found: Int64?
            for try await id in spaces.decode(Int64.self) { found = id }
            guard let spaceID = found else { return nil }
            let rows = try await connection.query("DELETE FROM sluice_member WHERE name = \(user) AND space_id = \(spaceID) RETURNING space_id", logger: logger)
            var removed = false
            for try await _ in rows.decode(Int64.self) { removed = true }
            try await connection.query("""
                UPDATE sluice_token SET revoked_at = now() WHERE space_id = \(spaceID) AND member = \(user) AND revoked_at IS NULL
                """, logger: logger)
            try await connection.query("""
                INSERT INTO sluice_removed_member (space_id, name) VALUES (\(spaceID), \(user))
                ON CONFLICT (space_id, name) DO UPDATE SET removed_at = now()
                """, logger: logger)
            // Long polls of the space wake, check their credential again, and end.
            try await connection.query("SELECT pg_notify(\(Self.headChannel), \("\(spaceID):0"))", logger: logger)
            return removed
        }
    }
}
