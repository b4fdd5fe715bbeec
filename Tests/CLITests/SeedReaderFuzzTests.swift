import Foundation
@testable import Sluice
import Testing
@testable import SluiceCLI
import SluiceDemo

/// Bounded fuzzing of the seed readers with a fixed seed: mutated JSON and
/// CSV files give rows or a clear `InputError`, never a crash or a hang.
@Suite(.timeLimit(.minutes(10))) struct SeedReaderFuzzTests {
    static let iterations = Int(ProcessInfo.processInfo.environment["SLUICE_FUZZ_ITERATIONS"] ?? "") ?? 3_000

    static func mutate(_ bytes: [UInt8], _ random: inout SplitMix64) -> [UInt8] {
        var bytes = bytes
        for _ in 0..<(1 + Int(random.next() % 4)) {
            guard !bytes.isEmpty else { break }
            let position = Int(random.next() % UInt64(bytes.count))
            switch random.next() % 4 {
            case 0: bytes[position] = UInt8(random.next() % 256)
            case 1: bytes.remove(at: position)
            case 2: bytes.insert([UInt8(ascii: "\""), UInt8(ascii: ","), UInt8(ascii: "{"), UInt8(ascii: "]"), 10, 0xC3][Int(random.next() % 6)], at: position)
            default: bytes = Array(bytes.prefix(position))
            }
        }
        return bytes
    }

    @Test func jsonReaderNeverCrashes() {
        let seed = Array(#"{"person": [{"id": 1, "first_name": "Zoë", "age": 31, "email": null, "flag": true}, {"first_name": "A", "last_name": "B", "score": 2.5}], "package": []}"#.utf8)
        var random = SplitMix64(seed: 11)
        var read = 0, rejected = 0
        for _ in 0..<Self.iterations {
            let data = Data(Self.mutate(seed, &random))
            do {
                _ = try JSONSeedReader.read(data, file: "fuzz.json", table: random.next() % 5 == 0 ? "person" : nil)
                read += 1
            } catch let error as InputError {
                #expect(error.description.hasPrefix("fuzz.json"))
                rejected += 1
            } catch {
                Issue.record("unexpected error \(error)")
            }
        }
        #expect(read > 0 && rejected > 0)
    }

    @Test func csvReaderNeverCrashes() {
        let table = TableInfo(name: "person", columns: [
            .init(name: "id", declaredType: "INTEGER", isNotNull: false, hasDefault: false, isPrimaryKey: true),
            .init(name: "first_name", declaredType: "TEXT", isNotNull: true, hasDefault: false, isPrimaryKey: false),
            .init(name: "age", declaredType: "INTEGER", isNotNull: false, hasDefault: false, isPrimaryKey: false),
            .init(name: "score", declaredType: "REAL", isNotNull: false, hasDefault: false, isPrimaryKey: false),
        ], primaryKey: ["id"])
        let seed = Array("id,first_name,age,score\r\n1,\"Zoë, \"\"Z\"\"\",31,2.5\n2,\"multi\nline\",,\n3,Ana,40,1e3\n".utf8)
        var random = SplitMix64(seed: 12)
        var read = 0, rejected = 0
        for _ in 0..<Self.iterations {
            let text = String(decoding: Self.mutate(seed, &random), as: UTF8.self)
            do {
                let seed = try CSVSeedReader.read(text, file: "fuzz.csv", table: table)
                #expect(seed.tables.count == 1)
                read += 1
            } catch let error as InputError {
                #expect(error.description.hasPrefix("fuzz.csv"))
                rejected += 1
            } catch {
                Issue.record("unexpected error \(error)")
            }
        }
        #expect(read > 0 && rejected > 0)
    }
}
