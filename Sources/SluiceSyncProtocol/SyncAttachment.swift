import Crypto
import Foundation

/// A blob that travels out of line: the value of an attachment column in every message is
/// its content address (SHA-256) and size; its bytes go to and from the service in chunks
/// of ``chunkSize`` (`PUT`/`GET /v1/attachments/<hash>/<index>`), so a cut transfer goes on
/// from the chunks already across.
public struct SyncAttachment: Sendable, Hashable, Codable {
    /// SHA-256 of the content: 64 lowercase hexadecimal digits.
    public var hash: String
    /// The content's length in bytes.
    public var size: Int64

    /// Bytes per chunk (the last chunk holds the rest).
    public static let chunkSize = 256 << 10

    /// The largest attachment (a service may set a lower limit).
    public static let largestSize: Int64 = 4 << 30

    private enum CodingKeys: String, CodingKey { case hash = "sha256", size }

    /// An attachment's address.
    ///
    /// - Parameters:
    ///   - hash: SHA-256 of its content, as 64 lowercase hexadecimal digits.
    ///   - size: its length in bytes.
    public init(hash: String, size: Int64) {
        self.hash = hash
        self.size = size
    }

    /// The address of `content`.
    ///
    /// - Parameter content: the bytes.
    public init(content: Data) {
        self.init(hash: Self.hash(of: content), size: Int64(content.count))
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        hash = try container.decode(String.self, forKey: .hash)
        size = try container.decode(Int64.self, forKey: .size)
        guard Self.isValidHash(hash) else {
            throw DecodingError.dataCorruptedError(forKey: .hash, in: container, debugDescription: "an attachment's sha256 is 64 lowercase hexadecimal digits")
        }
        guard (0...Self.largestSize).contains(size) else {
            throw DecodingError.dataCorruptedError(forKey: .size, in: container, debugDescription: "an attachment's size is 0 to \(Self.largestSize) bytes")
        }
    }

    /// How many chunks the content has (at least one: an empty attachment is one empty chunk).
    public var chunkCount: Int { max(1, Int((size + Int64(Self.chunkSize) - 1) / Int64(Self.chunkSize))) }

    /// The bytes of chunk `index` within the content.
    ///
    /// - Parameter index: a chunk number, 0 to ``chunkCount`` - 1.
    /// - Returns: its byte range.
    public func range(ofChunk index: Int) -> Range<Int> {
        let start = index * Self.chunkSize
        return start..<min(start + Self.chunkSize, Int(size))
    }

    /// Whether `text` is a SHA-256 as attachments name them.
    ///
    /// - Parameter text: the text to check.
    /// - Returns: whether it is 64 lowercase hexadecimal digits.
    public static func isValidHash(_ text: String) -> Bool {
        text.utf8.count == 64 && text.utf8.allSatisfy { (48...57).contains($0) || (97...102).contains($0) }
    }

    /// SHA-256 of `content`, as attachments name it.
    ///
    /// - Parameter content: the bytes.
    /// - Returns: 64 lowercase hexadecimal digits.
    public static func hash(of content: Data) -> String {
        Self.hex(SHA256.hash(data: content))
    }

    /// SHA-256 over chunks fed one at a time (the service checks an upload as it reads it back).
    public struct Hasher: Sendable {
        private var hasher = SHA256()

        /// A hasher with nothing fed.
        public init() {}

        /// Feeds `bytes`.
        ///
        /// - Parameter bytes: the next bytes of the content.
        public mutating func update(_ bytes: some DataProtocol) { hasher.update(data: bytes) }

        /// The hash of everything fed, as attachments name it.
        public func finish() -> String { SyncAttachment.hex(hasher.finalize()) }
    }

    static func hex(_ digest: SHA256.Digest) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var text: [UInt8] = []
        text.reserveCapacity(64)
        for byte in digest {
            text.append(digits[Int(byte >> 4)])
            text.append(digits[Int(byte & 0x0f)])
        }
        return String(decoding: text, as: UTF8.self)
    }
}

/// What the service holds of an attachment (`GET /v1/attachments/<hash>`): its size, whether
/// every chunk is there and checked, and which chunks it has (an upload sends the others).
public struct AttachmentStatus: Sendable, Hashable, Codable {
    /// The attachment.
    public var attachment: SyncAttachment
    /// Whether its content is complete and matched its hash.
    public var complete: Bool
    /// The chunks the service has, in order.
    public var chunks: [Int]

    /// A status.
    ///
    /// - Parameters:
    ///   - attachment: the attachment.
    ///   - complete: whether it is complete and checked.
    ///   - chunks: the chunks present.
    public init(attachment: SyncAttachment, complete: Bool, chunks: [Int]) {
        self.attachment = attachment
        self.complete = complete
        self.chunks = chunks
    }
}

/// When a device fetches the bytes of the attachments its rows point at.
public enum AttachmentFetch: Sendable, Hashable {
    /// In every sync, right after the rows: the row arrives with the column NULL and a
    /// second changeset fills it in once the bytes are here.
    case eager
    /// When the app asks (`SyncClient.fetchAttachments`): the column stays NULL until then,
    /// and `SyncClient.pendingAttachments()` names what is not here yet.
    case lazy
}
