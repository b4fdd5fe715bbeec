import Foundation
import SluiceSyncPolicy
import SluiceSyncProtocol

/// A page written as JSON with the rows its source keeps as JSON spliced in as they are:
/// a snapshot's rows are not decoded and encoded again on their way to the device (the
/// service's PostgreSQL keeps each row's values as `jsonb`).
extension SubsetPages {
    /// One page of a round of ``RowsRequest`` as the JSON of a ``RowsResponse``: the
    /// changes ``page(_:subscriptions:schema:limit:rows:)`` gives, with the values and
    /// clocks of the rows the page does not read written as `source` stores them.
    ///
    /// - Throws: what the source throws; `EncodingError.invalidValue` for a decoded real
    ///   that is not finite.
    public static func encodedPage(_ request: RowsRequest, subscriptions: [SubsetEvaluator.Checked], schema: SyncSchema, limit: Int,
                                   rows source: some SubsetSource) async throws -> Data {
        let page = try await entries(request, subscriptions: subscriptions, schema: schema, limit: limit, rows: source, passingStored: true)
        var writer = SyncJSON.Writer(capacity: 64 + page.entries.count * 256)
        writer.member("{\"head\":", page.head)
        writer.raw(",\"changes\":[")
        for (index, entry) in page.entries.enumerated() {
            if index > 0 { writer.comma() }
            switch entry {
            case .change(let change):
                try writer.change(change)
            case .stored(let table, let id, let stored):
                // As `Writer.change` writes an insert.
                writer.member("{\"table\":", table)
                writer.member(",\"id\":", id)
                writer.member(",\"op\":", SyncChange.Operation.insert.rawValue)
                writer.raw(",\"values\":")
                writer.json(stored.values)
                writer.raw(",\"clocks\":")
                writer.json(stored.clocks)
                writer.raw("}")
            }
        }
        writer.raw("]")
        writer.endRowsPage(next: page.next)
        return writer.data
    }
}

extension SubsetPages.Entry {
    /// The entry as a change, its stored values and clocks decoded.
    ///
    /// - Throws: `SyncJSON`'s error for stored JSON that does not read as values or clocks.
    func change() throws -> SyncChange {
        switch self {
        case .change(let change):
            return change
        case .stored(let table, let id, let stored):
            return SyncChange(table: table, id: id, op: .insert, values: try SyncJSON.decode([String: SyncValue].self, from: Data(stored.values.utf8)),
                              clocks: try SyncJSON.decode([String: Int64].self, from: Data(stored.clocks.utf8)))
        }
    }
}
