import Foundation
import SluiceMacros

/// A chat message in a conversation.
@Table
public struct Message: Hashable {
    /// The primary key; nil until inserted.
    public var id: Int64?
    /// The conversation it belongs to.
    public var conversationID: Int64
    /// Who sent it.
    public var sender: String
    /// What it says.
    public var text: String
    /// When it was sent.
    public var sentAt: Date

    /// Creates a message.
    ///
    /// - Parameters:
    ///   - id: its id; nil for SQLite to assign one.
    ///   - conversationID: the conversation it belongs to.
    ///   - sender: who sent it.
    ///   - text: what it says.
    ///   - sentAt: when it was sent.
    public init(id: Int64? = nil, conversationID: Int64, sender: String, text: String, sentAt: Date = Date()) {
        self.id = id
        self.conversationID = conversationID
        self.sender = sender
        self.text = text
        self.sentAt = sentAt
    }
}
