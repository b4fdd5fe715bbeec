import Foundation
import Store

/// A package sent from one person to another.
public struct Package: Model, Hashable {
    /// `package`.
    public static let tableName = "package"

    /// The primary key; nil until inserted.
    public var id: Int64?
    /// The recipient (a person's id).
    public var recipientID: Int64
    /// The sender (a person's id), if known.
    public var senderID: Int64?
    /// When the package was created.
    public var createdAt: Date

    /// Creates a package.
    public init(id: Int64? = nil, recipientID: Int64, senderID: Int64? = nil, createdAt: Date = Date()) {
        self.id = id
        self.recipientID = recipientID
        self.senderID = senderID
        self.createdAt = createdAt
    }

    /// Takes the id SQLite assigned.
    public mutating func didInsert(rowID: Int64) { id = rowID }

    /// Column names, as the schema spells them.
    public enum CodingKeys: String, CodingKey {
        case id
        case recipientID = "recipient_id"
        case senderID = "sender_id"
        case createdAt = "created_at"
    }
}
