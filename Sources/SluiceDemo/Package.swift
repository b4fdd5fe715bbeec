import Foundation
import SluiceMacros

/// A package sent from one person to another.
@Table
public struct Package: Hashable {
    /// The primary key; nil until inserted.
    public var id: Int64?
    /// The recipient (a person's id).
    public var recipientID: Int64
    /// The sender (a person's id), if known.
    public var senderID: Int64?
    /// When the package was created.
    public var createdAt: Date

    /// Creates a package.
    ///
    /// - Parameters:
    ///   - id: its id; nil for SQLite to assign one.
    ///   - recipientID: the person it goes to.
    ///   - senderID: the person who sends it, if known.
    ///   - createdAt: when it was made.
    public init(id: Int64? = nil, recipientID: Int64, senderID: Int64? = nil, createdAt: Date = Date()) {
        self.id = id
        self.recipientID = recipientID
        self.senderID = senderID
        self.createdAt = createdAt
    }
}
