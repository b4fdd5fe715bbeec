import SluiceSyncProtocol
import Sluice

extension SyncValue {
    /// A stored value, as it travels (a foreign key travels as `.reference`, which the
    /// caller makes from the row's global id).
    ///
    /// - Parameter value: the stored value.
    public init(_ value: SQLiteValue) {
        switch value {
        case .null: self = .null
        case .integer(let value): self = .integer(value)
        case .real(let value): self = .real(value)
        case .text(let value): self = .text(value)
        case .blob(let value): self = .blob(value)
        }
    }

    /// The value as a store holds it; a reference as its global id's text; an attachment as
    /// NULL (its bytes are not in the message).
    public var sqliteValue: SQLiteValue {
        switch self {
        case .null: .null
        case .integer(let value): .integer(value)
        case .real(let value): .real(value)
        case .text(let value): .text(value)
        case .blob(let value): .blob(value)
        case .reference(let gid): .text(gid)
        case .attachment: .null
        }
    }
}
