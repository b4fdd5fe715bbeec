import Foundation

/// A column value as it travels between devices and the sync service.
///
/// In JSON a value is `null` or a one-key object that names its storage class, so
/// that an integer and a real that happens to be whole never get confused:
/// `{"i":42}`, `{"r":1.5}`, `{"t":"Oslo"}`, `{"b":"<base64>"}`, and
/// `{"ref":"<global id>"}` for a foreign key that points at a synced row, and
/// `{"att":{"sha256":"<hex>","size":<bytes>}}` for a blob in an attachment column (its bytes
/// travel out of line, see ``SyncAttachment``).
public enum SyncValue: Sendable, Hashable, Codable {
    /// SQL NULL.
    case null
    /// A 64-bit integer.
    case integer(Int64)
    /// A double.
    case real(Double)
    /// UTF-8 text.
    case text(String)
    /// Bytes.
    case blob(Data)
    /// A foreign key, as the global id of the row it points at.
    case reference(String)
    /// The content address of a blob in an attachment column.
    case attachment(SyncAttachment)

    private enum Key: String, CodingKey { case i, r, t, b, ref, att }

    public init(from decoder: any Decoder) throws {
        if let single = try? decoder.singleValueContainer(), single.decodeNil() {
            self = .null
            return
        }
        let container = try decoder.container(keyedBy: Key.self)
        guard container.allKeys.count == 1, let key = container.allKeys.first else {
            throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath,
                                                    debugDescription: "a value is null or an object with exactly one of i, r, t, b, ref, att"))
        }
        switch key {
        case .i: self = .integer(try container.decode(Int64.self, forKey: .i))
        case .r: self = .real(try container.decode(Double.self, forKey: .r))
        case .t: self = .text(try container.decode(String.self, forKey: .t))
        case .b:
            let encoded = try container.decode(String.self, forKey: .b)
            guard let data = Data(base64Encoded: encoded) else {
                throw DecodingError.dataCorruptedError(forKey: .b, in: container, debugDescription: "not base64")
            }
            self = .blob(data)
        case .ref: self = .reference(try container.decode(String.self, forKey: .ref))
        case .att: self = .attachment(try container.decode(SyncAttachment.self, forKey: .att))
        }
    }

    public func encode(to encoder: any Encoder) throws {
        if case .null = self {
            var single = encoder.singleValueContainer()
            try single.encodeNil()
            return
        }
        var container = encoder.container(keyedBy: Key.self)
        switch self {
        case .null: break
        case .integer(let value): try container.encode(value, forKey: .i)
        case .real(let value): try container.encode(value, forKey: .r)
        case .text(let value): try container.encode(value, forKey: .t)
        case .blob(let value): try container.encode(value.base64EncodedString(), forKey: .b)
        case .reference(let value): try container.encode(value, forKey: .ref)
        case .attachment(let value): try container.encode(value, forKey: .att)
        }
    }

    /// The storage class's name, for error messages.
    public var typeName: String {
        switch self {
        case .null: "null"
        case .integer: "integer"
        case .real: "real"
        case .text: "text"
        case .blob: "blob"
        case .reference: "reference"
        case .attachment: "attachment"
        }
    }
}
