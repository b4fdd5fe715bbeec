import SluiceSyncProtocol

/// What a credential may do in its space, and the service's refusals by it: a viewer
/// reads and writes nothing (pushes and attachment uploads are refused, 403 `forbidden`);
/// an editor may be limited to some tables, a push touching another refused whole; only an
/// owner shares the space, with a valid user name and tables the space syncs.
public struct MemberAccess: Sendable, Equatable {
    /// The member (nil: a token made without one, the owner's).
    public var member: String?
    /// What it may do.
    public var role: SyncRole
    /// For an editor, the only tables it may write (nil: all).
    public var tables: Set<String>?

    public init(member: String?, role: SyncRole, tables: Set<String>? = nil) {
        self.member = member
        self.role = role
        self.tables = tables
    }

    private var who: String { member.map { "member '\($0)'" } ?? "this token" }

    /// Why this access may not push these changes (nil when it may).
    public func refusal(of push: PushRequest) -> String? {
        if role == .viewer { return "\(who) is a viewer of this space: it may read, not write; nothing was applied" }
        guard let tables else { return nil }
        for (index, transaction) in push.transactions.enumerated() {
            for change in transaction.changes where !tables.contains(change.table) {
                return "\(who) may write \(tables.sorted().joined(separator: ", ")) only: transaction \(index) (local \(transaction.local)) "
                    + "changes \(change.table); nothing was applied"
            }
        }
        return nil
    }

    /// - Throws: `forbidden` when this access may not upload attachments (a viewer).
    public func checkUpload() throws(SyncErrorBody) {
        guard role != .viewer else {
            throw SyncErrorBody(.forbidden, message: "\(who) is a viewer of this space: it may read, not upload attachments")
        }
    }

    /// - Throws: `forbidden` when this access may not share the space (not an owner), or
    ///   `invalid` for a user name that cannot be a member's or a table `known` lacks.
    public func checkShare(_ share: ShareRequest, known: Set<String>) throws(SyncErrorBody) {
        guard role == .owner else {
            throw SyncErrorBody(.forbidden, message: "only an owner of the space shares it; this token's role is \(role.rawValue)")
        }
        guard ShareRequest.isValidUser(share.user) else {
            throw SyncErrorBody(.invalid, message: "user names have 1 to 64 letters, digits, '.', '_', '-' or '@'")
        }
        if let unknown = share.tables?.first(where: { !known.contains($0) }) {
            throw SyncErrorBody(.invalid, message: "no synced table '\(unknown)' (tables: \(known.sorted().joined(separator: ", ")))")
        }
    }
}
