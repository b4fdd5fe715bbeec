/// What a member of a space may do.
///
/// - `owner`: read, write every synced table, and share the space (`POST /v1/members`).
/// - `editor`: read, and write every synced table, or only those its membership names.
/// - `viewer`: read only; a push is refused (403 `forbidden`) and nothing of it applied.
public enum SyncRole: String, Codable, Sendable, CaseIterable {
    case owner, editor, viewer
}

/// `POST /v1/members` (an owner's token): shares the space with a user, or changes what
/// a member may do; answered with a token for that member (``ShareResponse``).
public struct ShareRequest: Codable, Sendable, Equatable {
    /// The user's name in the space: 1 to 64 letters, digits, `.`, `_`, `-` or `@`.
    public var user: String
    /// What the member may do.
    public var role: SyncRole
    /// For an editor, the only tables it may write (nil: every synced table).
    public var tables: [String]?

    /// A share request.
    ///
    /// - Parameters:
    ///   - user: the user's name in the space.
    ///   - role: what the member may do.
    ///   - tables: for an editor, the only tables it may write; nil for all.
    public init(user: String, role: SyncRole, tables: [String]? = nil) {
        self.user = user
        self.role = role
        self.tables = tables
    }

    /// Whether a name can be a member's: 1 to 64 ASCII letters, digits, `.`, `_`, `-` or `@`.
    ///
    /// - Parameter user: the name.
    /// - Returns: whether it can.
    public static func isValidUser(_ user: String) -> Bool {
        !user.isEmpty && user.utf8.count <= 64
            && user.unicodeScalars.allSatisfy { $0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0) || "._-@".unicodeScalars.contains($0)) }
    }
}

/// The answer to a ``ShareRequest``: the member, and a new token for it (give it to the
/// user's devices; only its hash is stored).
public struct ShareResponse: Codable, Sendable, Equatable {
    /// The member's name.
    public var user: String
    /// What it may do.
    public var role: SyncRole
    /// A bearer token that opens the space as this member.
    public var token: String

    /// An answer.
    ///
    /// - Parameters:
    ///   - user: the member's name.
    ///   - role: what it may do.
    ///   - token: a token for it.
    public init(user: String, role: SyncRole, token: String) {
        self.user = user
        self.role = role
        self.token = token
    }
}
