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
        let clocks: [String: Int64]? = Bool.random(using: &random) ? nil : Dictionary([("a", Int64.random(in: 0...Int64.max, using: &random)), (randomText(&random), Int64(1))], uniquingKeysWith: { first, _ in first })
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

/// `SyncJSON`'s reader reads what `JSONDecoder` reads, and refuses what it refuses.
@Suite(.timeLimit(.minutes(10))) struct SyncJSONReaderTests {
    @Test func everyMessageIsReadAsJSONDecoderReadsIt() throws {
        var random = SeededRandom(state: 4_848)
        let pretty = JSONEncoder()
        pretty.outputFormatting = [.prettyPrinted, .sortedKeys]
        for round in 0..<300 {
            let push = SyncJSONTests.randomPush(&random)
            for written in [try SyncJSON.encode(push), try JSONEncoder().encode(push), try pretty.encode(push)] {
                let read = try written.withUnsafeBytes { try SyncJSON.decode(PushRequest.self, from: $0) }
                #expect(read == push, "round \(round): \(String(decoding: written, as: UTF8.self))")
            }
            let page = PullResponse(transactions: push.transactions, head: push.base)
            #expect(try SyncJSON.decode(PullResponse.self, from: pretty.encode(page)) == page, "round \(round)")
            let changes = push.transactions.flatMap(\.changes)
            #expect(try SyncJSON.decode([SyncChange].self, from: SyncJSON.encode(changes)) == changes, "round \(round)")
            let rows = RowsResponse(head: push.base, changes: changes,
                                    next: Bool.random(using: &random) ? RowsPosition(subscription: Int.random(in: 0...9, using: &random), id: SyncJSONTests.randomText(&random)) : nil)
            for written in [try SyncJSON.encode(rows), try pretty.encode(rows)] {
                #expect(try SyncJSON.decode(RowsResponse.self, from: written) == rows, "round \(round)")
                #expect(try JSONDecoder().decode(RowsResponse.self, from: written) == rows, "round \(round)")
            }
            for change in changes {
                // As PostgreSQL prints a jsonb column: a space after each colon and comma.
                let values = try pretty.encode(change.values ?? [:]), clocks = try pretty.encode(change.clocks ?? [:])
                #expect(try SyncJSON.decode([String: SyncValue].self, from: values) == change.values ?? [:], "round \(round)")
                #expect(try SyncJSON.decode([String: Int64].self, from: clocks) == change.clocks ?? [:], "round \(round)")
            }
        }
    }

    /// Bytes changed, added, dropped or cut at random in a written push: what the reader
    /// takes, `JSONDecoder` takes as the same push; what `JSONDecoder` takes, the reader
    /// takes too, but where it is stricter on purpose: `JSONDecoder` does not look inside a
    /// member no type names (a bad escape or control character there passes), and it reads
    /// an integer with a fraction through a double (3901975398932346.01 as 3901975398932346),
    /// it lets a comma before a closing bracket pass, and it takes the first of a key twice.
    @Test func damagedPushesAreReadOrRefusedAsJSONDecoderDoes() throws {
        var random = SeededRandom(state: 5)
        let alphabet = Array(#"{}[]:,"\ 0123456789.eE+-tfnulrsabi/"#.utf8) + [0x00, 0x1F, 0x7F, 0xC3, 0xA9, 0xFF, 0xED, 0xA0, 0x80]
        var readBoth = 0, refusedBoth = 0
        for round in 0..<5_000 {
            var bytes = Array(try SyncJSON.encode(SyncJSONTests.randomPush(&random)))
            for _ in 0..<Int.random(in: 1...3, using: &random) where !bytes.isEmpty {
                let at = Int.random(in: 0..<bytes.count, using: &random)
                switch Int.random(in: 0..<4, using: &random) {
                case 0: bytes[at] = alphabet.randomElement(using: &random) ?? 0
                case 1: bytes.insert(alphabet.randomElement(using: &random) ?? 0, at: at)
                case 2: bytes.remove(at: at)
                default: bytes.removeLast(bytes.count - at)
                }
            }
            let ours = Result { try bytes.withUnsafeBytes { try SyncJSON.decode(PushRequest.self, from: $0) } }
            let foundation = Result { try JSONDecoder().decode(PushRequest.self, from: Data(bytes)) }
            switch (ours, foundation) {
            case (.success(let read), .success(let decoded)):
                #expect(read == decoded, "round \(round): \(String(decoding: bytes, as: UTF8.self))")
                readBoth += 1
            case (.failure, .failure):
                refusedBoth += 1
            case (.success, .failure(let error)):
                Issue.record("round \(round): the reader took what JSONDecoder refused (\(error)): \(String(decoding: bytes, as: UTF8.self))")
            case (.failure(let error), .success):
                let stricter = ["an unknown escape", "must be escaped", "is not an integer of 64 bits", "surrogate", "not valid UTF-8", "\\u takes", "appears twice"]
                if stricter.contains(where: { "\(error)".contains($0) }) { continue }
                // A comma before a closing bracket, which `JSONDecoder` lets pass.
                let text = String(decoding: bytes.filter { ![0x20, 0x0A, 0x0D, 0x09].contains($0) }, as: UTF8.self)
                if text.contains(",}") || text.contains(",]") { continue }
                Issue.record("round \(round): the reader refused what JSONDecoder took (\(error)): \(String(decoding: bytes, as: UTF8.self))")
            }
        }
        #expect(readBoth > 100 && refusedBoth > 1_000, "\(readBoth) read, \(refusedBoth) refused")
    }

    /// A key twice in one object is refused wherever the two are (the reader keeps the first
    /// key alone, the next 15 in an array and the rest in a set), and distinct keys are read.
    @Test func aKeyTwiceIsRefusedWhereverItIs() throws {
        for count in 1...40 {
            let names = (0..<count).map { "c\($0)" }
            func body(_ keys: [String]) -> Data {
                Data(("[{\"table\":\"t\",\"id\":\"i\",\"op\":\"update\",\"values\":{" + keys.map { "\"\($0)\":{\"i\":1}" }.joined(separator: ",") + "}}]").utf8)
            }
            #expect(try SyncJSON.decode([SyncChange].self, from: body(names)).first?.values?.count == count, "\(count) keys")
            for first in 0..<count {
                for at in (first + 1)...count {
                    var keys = names
                    keys.insert(names[first], at: at)
                    #expect(throws: DecodingError.self, "key \(first) again at \(at) of \(count + 1)") {
                        try SyncJSON.decode([SyncChange].self, from: body(keys))
                    }
                }
            }
        }
    }

    @Test func integersAreReadExactlyWhateverTheirSpelling() throws {
        let spellings: [(String, Int64?)] = [
            ("1.0e2", 100), ("-27e1", -270), ("9223372036854775807.0", .max), ("-9223372036854775808", .min),
            ("2711735714216925090.0", 2_711_735_714_216_925_090), ("271173571421692509E1", 2_711_735_714_216_925_090),
            ("100e-2", 1), ("0.0", 0), ("1.5", nil), ("9223372036854775808", nil), ("1e19", nil), ("1e-5", nil),
        ]
        for (spelling, expected) in spellings {
            let body = Data(#"[{"table":"t","id":"i","op":"update","values":{"c":{"i":\#(spelling)}}}]"#.utf8)
            let read = try? SyncJSON.decode([SyncChange].self, from: body)
            #expect(read?.first?.values?["c"] == expected.map(SyncValue.integer), "\(spelling)")
        }
    }

    @Test func aRefusalNamesWhereAndWhat() {
        let body = #"{"device":"d","base":0,"transactions":[{"device":"d","local":1,"clock":5,"changes":[{"table":"person","id":"p","op":"insert","values":{"age":{"i":"x"}}}]}]}"#
        #expect {
            try Array(body.utf8).withUnsafeBytes { try SyncJSON.decode(PushRequest.self, from: $0) }
        } throws: { error in
            guard case DecodingError.dataCorrupted(let context) = error else { return false }
            return context.codingPath.map { $0.intValue.map(String.init) ?? $0.stringValue } == ["transactions", "0", "changes", "0", "values", "age", "i"]
        }
        // A member no type names, nested 100,000 deep: refused, not followed down.
        let deep = #"{"device":"d","base":0,"x":"# + String(repeating: "[", count: 100_000) + "}"
        #expect {
            try Array(deep.utf8).withUnsafeBytes { try SyncJSON.decode(PushRequest.self, from: $0) }
        } throws: { error in "\(error)".contains("nested more than 64 deep") }
        #expect {
            try Array(#"{"device":"d","transactions":[]}"#.utf8).withUnsafeBytes { try SyncJSON.decode(PushRequest.self, from: $0) }
        } throws: { error in
            guard case DecodingError.keyNotFound(let key, _) = error else { return false }
            return key.stringValue == "base"
        }
    }
}
