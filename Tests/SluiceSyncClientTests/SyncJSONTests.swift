import Foundation
import SluiceSyncProtocol
import SluiceSyncConformance
import Testing

/// `SyncJSON` writes what `JSONEncoder` writes for the wire types: `JSONDecoder` reads back
/// every push equal, down to each real's bits, whatever its strings and values hold.
@Suite(.timeLimit(.minutes(10))) struct SyncJSONTests {
    @Test func aChangeIsWrittenAsTheWireSpellsIt() throws {
        let change = SyncChange(table: "person", id: "p-1", op: .insert, values: ["city": .text("Oslo \"Ø\"\n\u{1}\\")], clocks: ["city": 7])
        let json = String(decoding: try SyncJSON.encode([change]), as: UTF8.self)
        #expect(json == #"[{"table":"person","id":"p-1","op":"insert","values":{"city":{"t":"Oslo \"Ø\"\n\u0001\\"}},"clocks":{"city":7}}]"#)
        let values: [(SyncValue, String)] = [
            (.null, "null"), (.integer(Int64.min), #"{"i":-9223372036854775808}"#), (.integer(0), #"{"i":0}"#),
            (.real(1.5), #"{"r":1.5}"#), (.real(-0.0), #"{"r":-0.0}"#), (.real(1e-5), #"{"r":1e-05}"#),
            (.blob(Data([0, 255, 7])), #"{"b":"AP8H"}"#), (.reference("g-1"), #"{"ref":"g-1"}"#),
            (.attachment(SyncAttachment(hash: String(repeating: "a", count: 64), size: 3)),
             #"{"att":{"sha256":"\#(String(repeating: "a", count: 64))","size":3}}"#),
        ]
        for (value, expected) in values {
            let written = String(decoding: try SyncJSON.encode(["c": value], at: "test"), as: UTF8.self)
            #expect(written == #"{"c":\#(expected)}"#)
        }
    }

    @Test func everyPushReadsBackEqual() throws {
        var random = SeededRandom(state: 48)
        for round in 0..<300 {
            let push = Self.randomPush(&random)
            let written = try SyncJSON.encode(push)
            let read = try JSONDecoder().decode(PushRequest.self, from: written)
            #expect(read == push, "round \(round): \(String(decoding: written, as: UTF8.self))")
            // Reals to the bit (-0.0 == 0.0 for `==`).
            let bits = { (push: PushRequest) in
                push.transactions.flatMap(\.changes).flatMap { ($0.values ?? [:]).sorted { $0.key < $1.key } }
                    .compactMap { if case .real(let real) = $0.value { real.bitPattern } else { nil } }
            }
            #expect(bits(read) == bits(push), "round \(round)")
            // What JSONEncoder writes for it reads back the same.
            #expect(try JSONDecoder().decode(PushRequest.self, from: JSONEncoder().encode(push)) == read)
        }
    }

    @Test func aRealJSONCannotHoldIsRefusedByName() {
        for real in [Double.infinity, -Double.infinity, Double.nan] {
            let push = PushRequest(device: "d", base: 0, transactions: [SyncTransaction(device: "d", local: 1, clock: HybridClock(rawValue: 1), changes: [
                SyncChange(table: "reading", id: "r-9", op: .insert, values: ["value": .real(real)]),
            ])])
            #expect {
                try SyncJSON.encode(push)
            } throws: { error in
                guard case EncodingError.invalidValue(_, let context) = error else { return false }
                return context.debugDescription.contains("table reading, row r-9, column value")
            }
        }
    }

    static func randomPush(_ random: inout SeededRandom) -> PushRequest {
        let transactions = (0..<Int.random(in: 0...4, using: &random)).map { _ in
            SyncTransaction(seq: Bool.random(using: &random) ? Int64.random(in: 1...Int64.max, using: &random) : nil,
                            device: randomText(&random), local: Int64.random(in: Int64.min...Int64.max, using: &random),
                            clock: HybridClock(rawValue: Int64.random(in: 0...Int64.max, using: &random)),
                            sent: Bool.random(using: &random) ? HybridClock(rawValue: Int64.random(in: 0...Int64.max, using: &random)) : nil,
                            changes: (0..<Int.random(in: 0...5, using: &random)).map { _ in randomChange(&random) })
        }
        return PushRequest(device: randomText(&random), base: Int64.random(in: 0...Int64.max, using: &random), transactions: transactions)
    }

    static func randomChange(_ random: inout SeededRandom) -> SyncChange {
        let op = [SyncChange.Operation.insert, .update, .delete, .leave].randomElement(using: &random) ?? .insert
        let values: [String: SyncValue]? = op == .delete ? nil : Dictionary((0..<Int.random(in: 0...6, using: &random)).map { _ in
            (randomText(&random), randomValue(&random))
        }, uniquingKeysWith: { first, _ in first })
        let clocks: [String: Int64]? = Bool.random(using: &random) ? nil : ["a": Int64.random(in: 0...Int64.max, using: &random), randomText(&random): 1]
        return SyncChange(table: randomText(&random), id: UUID().uuidString, op: op, values: values, clocks: clocks)
    }

    static func randomValue(_ random: inout SeededRandom) -> SyncValue {
        switch Int.random(in: 0..<9, using: &random) {
        case 0: return .null
        case 1: return .integer(Int64.random(in: Int64.min...Int64.max, using: &random))
        case 2: return .integer([Int64.min, Int64.max, 0, -1].randomElement(using: &random) ?? 0)
        case 3:
            // Any finite double: random bits (subnormals and -0.0 among them).
            var real = Double.nan
            while !real.isFinite { real = Double(bitPattern: UInt64.random(in: 0...UInt64.max, using: &random)) }
            return .real(real)
        case 4: return .real([0.1, -0.0, 1e300, Double.leastNonzeroMagnitude, 123456789.125, 1e16].randomElement(using: &random) ?? 0)
        case 5: return .text(randomText(&random))
        case 6: return .blob(Data((0..<Int.random(in: 0...40, using: &random)).map { _ in UInt8.random(in: 0...255, using: &random) }))
        case 7: return .reference(randomText(&random))
        default:
            let hash = (0..<64).map { _ in "0123456789abcdef".randomElement(using: &random) ?? "0" }
            return .attachment(SyncAttachment(hash: String(hash), size: Int64.random(in: 0...SyncAttachment.largestSize, using: &random)))
        }
    }

    /// Text with what JSON escapes (quotes, backslashes, every control character, DEL),
    /// non-ASCII of every UTF-8 length, and plain letters.
    static func randomText(_ random: inout SeededRandom) -> String {
        let pieces: [String] = ["a", "Z", "\"", "\\", "/", "\u{7F}", "Ø", "€", "😀", "\u{2028}", "\u{FEFF}", " ", "{", "}"]
            + (0..<0x20).map { String(UnicodeScalar(UInt8($0))) }
        return String((0..<Int.random(in: 0...12, using: &random)).map { _ in pieces.randomElement(using: &random) ?? "a" }.joined())
    }
}
