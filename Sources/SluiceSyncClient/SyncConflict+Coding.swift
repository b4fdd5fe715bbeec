import Foundation
import SluiceSyncProtocol
import SluiceSyncStore
import Sluice

/// How a ``SyncConflict`` is stored (one row of `sluice_live_sync_conflict`, each side's
/// value in a column of no type, so that it keeps its storage class) and how it is encoded
/// (`sluice sync conflicts --format json`: values as the sync protocol types them).
extension SyncConflict {
    public init(row: RowReader) throws {
        id = try row["id"]
        table = try row["tbl"]
        rowID = try row["row_id"]
        globalID = try row["gid"]
        column = try row["col"]
        kind = try row["kind"]
        rule = try row["rule"]
        kept = Side(value: try row["kept_value"], device: try row["kept_device"], clock: (try row["kept_clock"] as Int64?).map(HybridClock.init(rawValue:)))
        lost = Side(value: try row["lost_value"], device: try row["lost_device"], clock: (try row["lost_clock"] as Int64?).map(HybridClock.init(rawValue:)))
        let values: String? = try row["row_values"]
        self.row = try values.map { text in try Self.decodeRow(text) }
        seq = try row["seq"]
        appliedSequence = try row["applied"]
        detail = try row["detail"]
        date = try row["at"]
    }

    public func write(to row: inout RowWriter) throws {
        try row.write(id, as: "id")
        try row.write(table, as: "tbl")
        try row.write(rowID, as: "row_id")
        try row.write(globalID, as: "gid")
        try row.write(column, as: "col")
        try row.write(kind, as: "kind")
        try row.write(rule, as: "rule")
        try row.write(kept.value, as: "kept_value")
        try row.write(kept.device, as: "kept_device")
        try row.write(kept.clock?.rawValue, as: "kept_clock")
        try row.write(lost.value, as: "lost_value")
        try row.write(lost.device, as: "lost_device")
        try row.write(lost.clock?.rawValue, as: "lost_clock")
        try row.write(try self.row.map(Self.encodeRow), as: "row_values")
        try row.write(seq, as: "seq")
        try row.write(appliedSequence, as: "applied")
        try row.write(detail, as: "detail")
        try row.write(date, as: "at")
    }

    private enum CodingKeys: String, CodingKey {
        case id, table, rowID = "key", globalID = "gid", column, kind, rule, kept, lost, row, seq, appliedSequence = "applied", detail, date
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        id = try container.decodeIfPresent(Int64.self, forKey: .id)
        table = try container.decode(String.self, forKey: .table)
        rowID = try container.decode(Int64.self, forKey: .rowID)
        globalID = try container.decode(String.self, forKey: .globalID)
        column = try container.decodeIfPresent(String.self, forKey: .column)
        kind = try container.decode(Kind.self, forKey: .kind)
        rule = try container.decode(Rule.self, forKey: .rule)
        kept = try container.decode(Side.self, forKey: .kept)
        lost = try container.decode(Side.self, forKey: .lost)
        row = try container.decodeIfPresent([String: SyncValue].self, forKey: .row)?.mapValues(\.sqliteValue)
        seq = try container.decodeIfPresent(Int64.self, forKey: .seq)
        appliedSequence = try container.decodeIfPresent(Int64.self, forKey: .appliedSequence)
        detail = try container.decodeIfPresent(String.self, forKey: .detail)
        date = try container.decode(Date.self, forKey: .date)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encodeIfPresent(id, forKey: .id)
        try container.encode(table, forKey: .table)
        try container.encode(rowID, forKey: .rowID)
        try container.encode(globalID, forKey: .globalID)
        try container.encodeIfPresent(column, forKey: .column)
        try container.encode(kind, forKey: .kind)
        try container.encode(rule, forKey: .rule)
        try container.encode(kept, forKey: .kept)
        try container.encode(lost, forKey: .lost)
        try container.encodeIfPresent(row?.mapValues(SyncValue.init), forKey: .row)
        try container.encodeIfPresent(seq, forKey: .seq)
        try container.encodeIfPresent(appliedSequence, forKey: .appliedSequence)
        try container.encodeIfPresent(detail, forKey: .detail)
        try container.encode(date, forKey: .date)
    }

    static func encodeRow(_ values: [String: SQLiteValue]) throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        return String(decoding: try encoder.encode(values.mapValues(SyncValue.init)), as: UTF8.self)
    }

    static func decodeRow(_ text: String) throws -> [String: SQLiteValue] {
        do {
            return try JSONDecoder().decode([String: SyncValue].self, from: Data(text.utf8)).mapValues(\.sqliteValue)
        } catch {
            throw StoreError(code: .decoding, message: "\(tableName).row_values is not a row's values as JSON: \(error)")
        }
    }
}
