import Foundation

/// The wire types as ``SyncJSON/Reader`` reads them: the members their `Codable`
/// conformances name (others skipped, optional ones absent or `null`), the checks their
/// `init(from:)` make.
extension SyncJSON.Reader {
    mutating func push() throws -> PushRequest {
        var device: String?, base: Int64?, transactions: [SyncTransaction]?
        try object { reader, key in
            switch key {
            case "device": device = try reader.string()
            case "base": base = try reader.integer()
            case "transactions": transactions = try reader.array { reader in try reader.transaction() }
            default: try reader.skipValue()
            }
        }
        return PushRequest(device: try required(device, "device"), base: try required(base, "base"),
                           transactions: try required(transactions, "transactions"))
    }

    mutating func page() throws -> PullResponse {
        var head: Int64?, transactions: [SyncTransaction]?
        try object { reader, key in
            switch key {
            case "head": head = try reader.integer()
            case "transactions": transactions = try reader.array { reader in try reader.transaction() }
            default: try reader.skipValue()
            }
        }
        return PullResponse(transactions: try required(transactions, "transactions"), head: try required(head, "head"))
    }

    mutating func transaction() throws -> SyncTransaction {
        var seq: Int64?, device: String?, local: Int64?, clock: Int64?, sent: Int64?, changes: [SyncChange]?
        try object { reader, key in
            switch key {
            case "seq": seq = try reader.null() ? nil : reader.integer()
            case "device": device = try reader.string()
            case "local": local = try reader.integer()
            case "clock": clock = try reader.integer()
            case "sent": sent = try reader.null() ? nil : reader.integer()
            case "changes": changes = try reader.array { reader in try reader.change() }
            default: try reader.skipValue()
            }
        }
        return SyncTransaction(seq: seq, device: try required(device, "device"), local: try required(local, "local"),
                               clock: HybridClock(rawValue: try required(clock, "clock")), sent: sent.map(HybridClock.init(rawValue:)),
                               changes: try required(changes, "changes"))
    }

    mutating func change() throws -> SyncChange {
        var table: String?, id: String?, op: SyncChange.Operation?, values: [String: SyncValue]?, clocks: [String: Int64]?
        try object { reader, key in
            switch key {
            case "table": table = try reader.string()
            case "id": id = try reader.string()
            case "op":
                let name = try reader.string()
                guard let known = SyncChange.Operation(rawValue: name) else { throw reader.corrupted("unknown op '\(name)'") }
                op = known
            case "values": values = try reader.null() ? nil : reader.values()
            case "clocks": clocks = try reader.null() ? nil : reader.integers()
            default: try reader.skipValue()
            }
        }
        return SyncChange(table: try required(table, "table"), id: try required(id, "id"), op: try required(op, "op"), values: values, clocks: clocks)
    }

    mutating func rowsPage() throws -> RowsResponse {
        var head: Int64?, changes: [SyncChange]?, next: RowsPosition?
        try object { reader, key in
            switch key {
            case "head": head = try reader.integer()
            case "changes": changes = try reader.array { reader in try reader.change() }
            case "next": next = try reader.null() ? nil : reader.position()
            default: try reader.skipValue()
            }
        }
        return RowsResponse(head: try required(head, "head"), changes: try required(changes, "changes"), next: next)
    }

    mutating func position() throws -> RowsPosition {
        var subscription: Int64?, id: String?
        try object { reader, key in
            switch key {
            case "subscription": subscription = try reader.integer()
            case "id": id = try reader.string()
            default: try reader.skipValue()
            }
        }
        guard let part = Int(exactly: try required(subscription, "subscription")) else { throw corrupted("a subscription's number is out of range") }
        return RowsPosition(subscription: part, id: try required(id, "id"))
    }

    /// Values by column.
    mutating func values() throws -> [String: SyncValue] {
        var values: [String: SyncValue] = Dictionary(minimumCapacity: 8)
        try object { reader, column in values[column] = try reader.value() }
        return values
    }

    /// Integers by name.
    mutating func integers() throws -> [String: Int64] {
        var integers: [String: Int64] = [:]
        try object { reader, name in integers[name] = try reader.integer() }
        return integers
    }

    /// A ``SyncValue``: `null`, or an object with exactly one of `i`, `r`, `t`, `b`, `ref`
    /// and `att` (other members skipped, as `JSONDecoder` leaves keys a type does not name).
    mutating func value() throws -> SyncValue {
        if try null() { return .null }
        var value: SyncValue?
        var count = 0
        try object { reader, key in
            switch key {
            case "i": value = .integer(try reader.integer())
            case "r": value = .real(try reader.real())
            case "t": value = .text(try reader.string())
            case "b":
                guard let data = Data(base64Encoded: try reader.string()) else { throw reader.corrupted("not base64") }
                value = .blob(data)
            case "ref": value = .reference(try reader.string())
            case "att": value = .attachment(try reader.attachment())
            default:
                try reader.skipValue()
                return
            }
            count += 1
        }
        guard count == 1, let value else { throw corrupted("a value is null or an object with exactly one of i, r, t, b, ref, att") }
        return value
    }

    mutating func attachment() throws -> SyncAttachment {
        var hash: String?, size: Int64?
        try object { reader, key in
            switch key {
            case "sha256":
                let text = try reader.string()
                guard SyncAttachment.isValidHash(text) else { throw reader.corrupted("an attachment's sha256 is 64 lowercase hexadecimal digits") }
                hash = text
            case "size":
                let bytes = try reader.integer()
                guard (0...SyncAttachment.largestSize).contains(bytes) else {
                    throw reader.corrupted("an attachment's size is 0 to \(SyncAttachment.largestSize) bytes")
                }
                size = bytes
            default: try reader.skipValue()
            }
        }
        return SyncAttachment(hash: try required(hash, "sha256"), size: try required(size, "size"))
    }

    private func required<Value>(_ value: Value?, _ key: String) throws -> Value {
        guard let value else { throw missing(key) }
        return value
    }
}
